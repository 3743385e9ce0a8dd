#include "chat/parser.h"

#include <algorithm>
#include <cstdlib>

#include "chat/filters.h"

namespace valet::chat {
namespace {

// Keywords that close or split a block; meeting one where it is not expected is an error.
constexpr std::string_view kBlockKeywords[] = {"elif",      "else",   "endif",        "endfor", "endset",
                                               "endmacro", "endraw", "endgeneration"};

bool IsBlockKeyword(std::string_view name) {
  return std::find(std::begin(kBlockKeywords), std::end(kBlockKeywords), name) != std::end(kBlockKeywords);
}

// Names after `x is test` that end the test instead of being its argument.
bool EndsTestArgument(std::string_view name) {
  return name == "else" || name == "and" || name == "or" || name == "if" || name == "not" || name == "in" ||
         name == "is";
}

}  // namespace

// Counts nesting on entry and gives it back on exit.
class NestingGuard {
 public:
  explicit NestingGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~NestingGuard() { --*depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
  bool exceeded() const { return *depth_ > Parser::kMaxNesting; }

 private:
  int* depth_;
};

Result<Body> Parser::Parse(std::string_view source) {
  VALET_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer::Tokenize(source));
  Parser parser(std::move(tokens));
  Body body;
  std::string terminator;
  VALET_RETURN_IF_ERROR(parser.ParseBody({}, &body, &terminator));
  return body;
}

const Token& Parser::Peek(size_t ahead) const {
  const size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
  return tokens_[i];
}

bool Parser::IsPunct(std::string_view p, size_t ahead) const {
  const Token& t = Peek(ahead);
  return t.kind == Token::Kind::kPunct && t.text == p;
}

bool Parser::IsName(std::string_view n, size_t ahead) const {
  const Token& t = Peek(ahead);
  return t.kind == Token::Kind::kName && t.text == n;
}

bool Parser::AcceptPunct(std::string_view p) {
  if (!IsPunct(p)) return false;
  ++pos_;
  return true;
}

bool Parser::AcceptName(std::string_view n) {
  if (!IsName(n)) return false;
  ++pos_;
  return true;
}

Status Parser::ExpectPunct(std::string_view p) {
  if (AcceptPunct(p)) return Status::Ok();
  return Error("expected '" + std::string(p) + "'");
}

Status Parser::ExpectName(std::string_view n) {
  if (AcceptName(n)) return Status::Ok();
  return Error("expected '" + std::string(n) + "'");
}

Status Parser::ExpectKind(Token::Kind kind, const char* what) {
  if (Peek().kind != kind) return Error(std::string("expected ") + what);
  ++pos_;
  return Status::Ok();
}

Status Parser::Error(const std::string& message) const {
  const Token& t = Peek();
  std::string near;
  switch (t.kind) {
    case Token::Kind::kEnd: near = "end of template"; break;
    case Token::Kind::kText: near = "text"; break;
    case Token::Kind::kString: near = "string \"" + t.text.substr(0, 20) + "\""; break;
    default: near = "'" + t.text + "'"; break;
  }
  return InvalidArgument("template line " + std::to_string(t.line) + ": " + message + " (at " + near + ")");
}

ExprPtr Parser::MakeNode(Expr::Kind kind, int line, std::string name) {
  auto node = std::make_unique<Expr>();
  node->kind = kind;
  node->line = line;
  node->name = std::move(name);
  return node;
}

Status Parser::ParseBody(const std::vector<std::string_view>& terminators, Body* out, std::string* terminator) {
  NestingGuard guard(&depth_);
  if (guard.exceeded()) return Error("blocks are nested too deeply");
  while (true) {
    const Token& t = Peek();
    if (t.kind == Token::Kind::kEnd) {
      if (terminators.empty()) return Status::Ok();
      return Error("unclosed block: expected {% " + std::string(terminators.back()) + " %}");
    }
    if (t.kind == Token::Kind::kText) {
      Stmt s;
      s.kind = Stmt::Kind::kText;
      s.line = t.line;
      s.text = t.text;
      out->push_back(std::move(s));
      ++pos_;
      continue;
    }
    if (t.kind == Token::Kind::kOpenExpr) {
      Stmt s;
      s.kind = Stmt::Kind::kOutput;
      s.line = t.line;
      ++pos_;
      VALET_ASSIGN_OR_RETURN(s.expr, ParseExpression());
      VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseExpr, "'}}'"));
      out->push_back(std::move(s));
      continue;
    }
    if (t.kind != Token::Kind::kOpenStmt) return Error("unexpected token");
    ++pos_;
    if (Peek().kind == Token::Kind::kName &&
        std::find(terminators.begin(), terminators.end(), Peek().text) != terminators.end()) {
      *terminator = Peek().text;
      ++pos_;
      return Status::Ok();
    }
    VALET_RETURN_IF_ERROR(ParseStatement(out, terminators));
  }
}

Status Parser::ParseStatement(Body* out, const std::vector<std::string_view>& terminators) {
  if (Peek().kind != Token::Kind::kName) return Error("expected a tag name");
  const std::string keyword = Peek().text;
  Stmt s;
  s.line = Peek().line;
  ++pos_;
  if (keyword == "if") {
    VALET_RETURN_IF_ERROR(ParseIf(&s));
  } else if (keyword == "for") {
    VALET_RETURN_IF_ERROR(ParseFor(&s));
  } else if (keyword == "set") {
    VALET_RETURN_IF_ERROR(ParseSet(&s));
  } else if (keyword == "macro") {
    VALET_RETURN_IF_ERROR(ParseMacro(&s));
  } else if (keyword == "break" || keyword == "continue") {
    s.kind = keyword == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
    VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseStmt, "'%}'"));
  } else if (keyword == "generation") {
    // transformers' assistant-mask marker: renders its body unchanged.
    VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseStmt, "'%}'"));
    std::string end;
    VALET_RETURN_IF_ERROR(ParseBody({"endgeneration"}, out, &end));
    return ExpectKind(Token::Kind::kCloseStmt, "'%}'");
  } else if (IsBlockKeyword(keyword)) {
    pos_ -= 1;
    const std::string expected = terminators.empty() ? "" : " (expected {% " + std::string(terminators.back()) + " %})";
    return Error("unexpected {% " + keyword + " %}" + expected);
  } else {
    pos_ -= 1;
    return Error("unknown tag '" + keyword + "'");
  }
  out->push_back(std::move(s));
  return Status::Ok();
}

Status Parser::ParseIf(Stmt* stmt) {
  stmt->kind = Stmt::Kind::kIf;
  while (true) {
    VALET_ASSIGN_OR_RETURN(ExprPtr cond, ParseExpression());
    stmt->conditions.push_back(std::move(cond));
    VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseStmt, "'%}'"));
    Body body;
    std::string end;
    VALET_RETURN_IF_ERROR(ParseBody({"elif", "else", "endif"}, &body, &end));
    stmt->bodies.push_back(std::move(body));
    if (end == "elif") continue;
    if (end == "else") {
      VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseStmt, "'%}'"));
      Body else_body;
      VALET_RETURN_IF_ERROR(ParseBody({"endif"}, &else_body, &end));
      stmt->bodies.push_back(std::move(else_body));
    }
    return ExpectKind(Token::Kind::kCloseStmt, "'%}'");
  }
}

Status Parser::ParseTargets(std::vector<std::string>* names) {
  const bool paren = AcceptPunct("(");
  do {
    if (Peek().kind != Token::Kind::kName) return Error("expected a variable name");
    names->push_back(Peek().text);
    ++pos_;
  } while (AcceptPunct(","));
  if (paren) VALET_RETURN_IF_ERROR(ExpectPunct(")"));
  return Status::Ok();
}

Status Parser::ParseFor(Stmt* stmt) {
  stmt->kind = Stmt::Kind::kFor;
  VALET_RETURN_IF_ERROR(ParseTargets(&stmt->targets));
  VALET_RETURN_IF_ERROR(ExpectName("in"));
  VALET_ASSIGN_OR_RETURN(stmt->expr, ParseOr());
  if (AcceptName("if")) {
    VALET_ASSIGN_OR_RETURN(stmt->filter, ParseOr());
  }
  if (IsName("recursive")) return Error("recursive loops are not supported");
  VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseStmt, "'%}'"));
  Body body;
  std::string end;
  VALET_RETURN_IF_ERROR(ParseBody({"else", "endfor"}, &body, &end));
  stmt->bodies.push_back(std::move(body));
  if (end == "else") {
    VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseStmt, "'%}'"));
    Body else_body;
    VALET_RETURN_IF_ERROR(ParseBody({"endfor"}, &else_body, &end));
    stmt->bodies.push_back(std::move(else_body));
  }
  return ExpectKind(Token::Kind::kCloseStmt, "'%}'");
}

Status Parser::ParseSet(Stmt* stmt) {
  stmt->kind = Stmt::Kind::kSet;
  if (Peek().kind == Token::Kind::kName && IsPunct(".", 1)) {
    stmt->target_object = MakeNode(Expr::Kind::kName, Peek().line, Peek().text);
    pos_ += 2;
    if (Peek().kind != Token::Kind::kName) return Error("expected an attribute name");
    stmt->text = Peek().text;
    ++pos_;
  } else {
    VALET_RETURN_IF_ERROR(ParseTargets(&stmt->targets));
  }
  if (AcceptPunct("=")) {
    VALET_ASSIGN_OR_RETURN(stmt->expr, ParseExpression());
    return ExpectKind(Token::Kind::kCloseStmt, "'%}'");
  }
  if (stmt->targets.size() != 1) return Error("expected '=' after the names to set");
  VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseStmt, "'%}'"));
  Body body;
  std::string end;
  VALET_RETURN_IF_ERROR(ParseBody({"endset"}, &body, &end));
  stmt->bodies.push_back(std::move(body));
  return ExpectKind(Token::Kind::kCloseStmt, "'%}'");
}

Status Parser::ParseMacro(Stmt* stmt) {
  stmt->kind = Stmt::Kind::kMacro;
  if (Peek().kind != Token::Kind::kName) return Error("expected a macro name");
  stmt->text = Peek().text;
  ++pos_;
  VALET_RETURN_IF_ERROR(ExpectPunct("("));
  while (!AcceptPunct(")")) {
    if (!stmt->params.empty()) VALET_RETURN_IF_ERROR(ExpectPunct(","));
    if (Peek().kind != Token::Kind::kName) return Error("expected a parameter name");
    MacroParam param;
    param.name = Peek().text;
    ++pos_;
    if (AcceptPunct("=")) {
      VALET_ASSIGN_OR_RETURN(param.default_value, ParseExpression());
    }
    stmt->params.push_back(std::move(param));
  }
  VALET_RETURN_IF_ERROR(ExpectKind(Token::Kind::kCloseStmt, "'%}'"));
  Body body;
  std::string end;
  VALET_RETURN_IF_ERROR(ParseBody({"endmacro"}, &body, &end));
  stmt->bodies.push_back(std::move(body));
  if (Peek().kind == Token::Kind::kName && Peek().text == stmt->text) ++pos_;  // `{% endmacro name %}`
  return ExpectKind(Token::Kind::kCloseStmt, "'%}'");
}

Result<ExprPtr> Parser::ParseExpression() {
  const int line = Peek().line;
  VALET_ASSIGN_OR_RETURN(ExprPtr value, ParseOr());
  if (!AcceptName("if")) return value;
  auto node = MakeNode(Expr::Kind::kTernary, line);
  VALET_ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
  node->args.push_back(std::move(value));
  node->args.push_back(std::move(cond));
  if (AcceptName("else")) {
    VALET_ASSIGN_OR_RETURN(ExprPtr other, ParseExpression());
    node->args.push_back(std::move(other));
  } else {
    node->args.push_back(nullptr);
  }
  return node;
}

Result<ExprPtr> Parser::ParseOr() {
  VALET_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
  while (IsName("or")) {
    auto node = MakeNode(Expr::Kind::kOr, Peek().line);
    ++pos_;
    VALET_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::ParseAnd() {
  VALET_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
  while (IsName("and")) {
    auto node = MakeNode(Expr::Kind::kAnd, Peek().line);
    ++pos_;
    VALET_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::ParseNot() {
  if (!IsName("not")) return ParseCompare();
  NestingGuard guard(&depth_);
  if (guard.exceeded()) return Error("expression is nested too deeply");
  auto node = MakeNode(Expr::Kind::kUnary, Peek().line, "not");
  ++pos_;
  VALET_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
  node->args.push_back(std::move(operand));
  return node;
}

Result<ExprPtr> Parser::ParseCompare() {
  VALET_ASSIGN_OR_RETURN(ExprPtr left, ParseAdditive());
  while (true) {
    std::string op;
    const Token& t = Peek();
    if (t.kind == Token::Kind::kPunct &&
        (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">=")) {
      op = t.text;
      ++pos_;
    } else if (IsName("in")) {
      op = "in";
      ++pos_;
    } else if (IsName("not") && IsName("in", 1)) {
      op = "not in";
      pos_ += 2;
    } else {
      return left;
    }
    auto node = MakeNode(Expr::Kind::kBinary, t.line, op);
    VALET_ASSIGN_OR_RETURN(ExprPtr right, ParseAdditive());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
}

Result<ExprPtr> Parser::ParseAdditive() {
  VALET_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
  while (IsPunct("+") || IsPunct("-")) {
    auto node = MakeNode(Expr::Kind::kBinary, Peek().line, Peek().text);
    ++pos_;
    VALET_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::ParseConcat() {
  VALET_ASSIGN_OR_RETURN(ExprPtr left, ParseMultiplicative());
  while (IsPunct("~")) {
    auto node = MakeNode(Expr::Kind::kBinary, Peek().line, "~");
    ++pos_;
    VALET_ASSIGN_OR_RETURN(ExprPtr right, ParseMultiplicative());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::ParseMultiplicative() {
  VALET_ASSIGN_OR_RETURN(ExprPtr left, ParsePower());
  while (IsPunct("*") || IsPunct("/") || IsPunct("//") || IsPunct("%")) {
    auto node = MakeNode(Expr::Kind::kBinary, Peek().line, Peek().text);
    ++pos_;
    VALET_ASSIGN_OR_RETURN(ExprPtr right, ParsePower());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::ParsePower() {
  VALET_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
  while (IsPunct("**")) {
    auto node = MakeNode(Expr::Kind::kBinary, Peek().line, "**");
    ++pos_;
    VALET_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::ParseUnary(bool with_filters) {
  NestingGuard guard(&depth_);
  if (guard.exceeded()) return Error("expression is nested too deeply");
  ExprPtr node;
  if (IsPunct("-") || IsPunct("+")) {
    node = MakeNode(Expr::Kind::kUnary, Peek().line, Peek().text);
    ++pos_;
    VALET_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
    node->args.push_back(std::move(operand));
  } else {
    VALET_ASSIGN_OR_RETURN(node, ParsePrimary());
  }
  VALET_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
  if (!with_filters) return node;
  return ParseFiltersAndTests(std::move(node));
}

Result<ExprPtr> Parser::ParsePrimary() {
  const Token& t = Peek();
  switch (t.kind) {
    case Token::Kind::kName: {
      ++pos_;
      auto node = MakeNode(Expr::Kind::kLiteral, t.line);
      if (t.text == "true" || t.text == "True") {
        node->value = Value::Bool(true);
      } else if (t.text == "false" || t.text == "False") {
        node->value = Value::Bool(false);
      } else if (t.text == "none" || t.text == "None") {
        node->value = Value::None();
      } else {
        node->kind = Expr::Kind::kName;
        node->name = t.text;
      }
      return node;
    }
    case Token::Kind::kString: {
      auto node = MakeNode(Expr::Kind::kLiteral, t.line);
      std::string s;
      while (Peek().kind == Token::Kind::kString) s += tokens_[pos_++].text;  // "a" "b" is "ab"
      node->value = Value::String(std::move(s));
      return node;
    }
    case Token::Kind::kInt: {
      ++pos_;
      auto node = MakeNode(Expr::Kind::kLiteral, t.line);
      node->value = Value::Int(std::strtoll(t.text.c_str(), nullptr, 10));
      return node;
    }
    case Token::Kind::kFloat: {
      ++pos_;
      auto node = MakeNode(Expr::Kind::kLiteral, t.line);
      node->value = Value::Float(std::strtod(t.text.c_str(), nullptr));
      return node;
    }
    case Token::Kind::kPunct:
      if (t.text == "(") {
        ++pos_;
        return ParseListOrTuple(")");
      }
      if (t.text == "[") {
        ++pos_;
        return ParseListOrTuple("]");
      }
      if (t.text == "{") {
        ++pos_;
        return ParseDict();
      }
      break;
    default:
      break;
  }
  return Error("expected an expression");
}

Result<ExprPtr> Parser::ParseListOrTuple(std::string_view close) {
  auto node = MakeNode(Expr::Kind::kList, Peek().line);
  bool trailing_comma = false;
  while (!AcceptPunct(close)) {
    if (!node->args.empty()) VALET_RETURN_IF_ERROR(ExpectPunct(","));
    if (AcceptPunct(close)) {
      trailing_comma = true;
      break;
    }
    VALET_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
    node->args.push_back(std::move(item));
  }
  // `(x)` is just x; `(x,)` and `(a, b)` are tuples (arrays here).
  if (close == ")" && node->args.size() == 1 && !trailing_comma) return std::move(node->args[0]);
  return node;
}

Result<ExprPtr> Parser::ParseDict() {
  auto node = MakeNode(Expr::Kind::kDict, Peek().line);
  while (!AcceptPunct("}")) {
    if (!node->args.empty()) {
      VALET_RETURN_IF_ERROR(ExpectPunct(","));
      if (AcceptPunct("}")) break;
    }
    VALET_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
    VALET_RETURN_IF_ERROR(ExpectPunct(":"));
    VALET_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
    node->args.push_back(std::move(key));
    node->args.push_back(std::move(value));
  }
  return node;
}

Result<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    const int line = Peek().line;
    if (AcceptPunct(".")) {
      if (Peek().kind == Token::Kind::kInt) {
        auto index = MakeNode(Expr::Kind::kIndex, line);
        auto key = MakeNode(Expr::Kind::kLiteral, line);
        key->value = Value::Int(std::strtoll(Peek().text.c_str(), nullptr, 10));
        ++pos_;
        index->args.push_back(std::move(node));
        index->args.push_back(std::move(key));
        node = std::move(index);
        continue;
      }
      if (Peek().kind != Token::Kind::kName) return Error("expected an attribute name after '.'");
      auto attr = MakeNode(Expr::Kind::kAttr, line, Peek().text);
      ++pos_;
      attr->args.push_back(std::move(node));
      node = std::move(attr);
    } else if (AcceptPunct("[")) {
      VALET_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
    } else if (AcceptPunct("(")) {
      auto call = MakeNode(Expr::Kind::kCall, line);
      call->args.push_back(std::move(node));
      VALET_RETURN_IF_ERROR(ParseCallArgs(call.get()));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::ParseSubscript(ExprPtr object) {
  const int line = Peek().line;
  ExprPtr start;
  if (!IsPunct(":")) {
    VALET_ASSIGN_OR_RETURN(start, ParseExpression());
  }
  if (!AcceptPunct(":")) {
    VALET_RETURN_IF_ERROR(ExpectPunct("]"));
    auto node = MakeNode(Expr::Kind::kIndex, line);
    node->args.push_back(std::move(object));
    node->args.push_back(std::move(start));
    return node;
  }
  auto node = MakeNode(Expr::Kind::kSlice, line);
  ExprPtr stop, step;
  if (!IsPunct(":") && !IsPunct("]")) {
    VALET_ASSIGN_OR_RETURN(stop, ParseExpression());
  }
  if (AcceptPunct(":") && !IsPunct("]")) {
    VALET_ASSIGN_OR_RETURN(step, ParseExpression());
  }
  VALET_RETURN_IF_ERROR(ExpectPunct("]"));
  node->args.push_back(std::move(object));
  node->args.push_back(std::move(start));
  node->args.push_back(std::move(stop));
  node->args.push_back(std::move(step));
  return node;
}

Status Parser::ParseCallArgs(Expr* call) {
  bool first = true;
  while (!AcceptPunct(")")) {
    if (!first) {
      VALET_RETURN_IF_ERROR(ExpectPunct(","));
      if (AcceptPunct(")")) break;
    }
    first = false;
    if (Peek().kind == Token::Kind::kName && IsPunct("=", 1)) {
      std::string key = Peek().text;
      pos_ += 2;
      VALET_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      call->kwargs.emplace_back(std::move(key), std::move(value));
      continue;
    }
    if (!call->kwargs.empty()) return Error("positional argument after keyword argument");
    VALET_ASSIGN_OR_RETURN(ExprPtr arg, ParseExpression());
    call->args.push_back(std::move(arg));
  }
  return Status::Ok();
}

Result<ExprPtr> Parser::ParseFiltersAndTests(ExprPtr node) {
  while (true) {
    const int line = Peek().line;
    if (AcceptPunct("|")) {
      if (Peek().kind != Token::Kind::kName) return Error("expected a filter name after '|'");
      const std::string name = Peek().text;
      if (!IsKnownFilter(name)) return Error("unknown filter '" + name + "'");
      ++pos_;
      auto filter = MakeNode(Expr::Kind::kFilter, line, name);
      filter->args.push_back(std::move(node));
      if (AcceptPunct("(")) VALET_RETURN_IF_ERROR(ParseCallArgs(filter.get()));
      node = std::move(filter);
    } else if (AcceptName("is")) {
      auto test = MakeNode(Expr::Kind::kTest, line);
      test->negated = AcceptName("not");
      if (Peek().kind != Token::Kind::kName) return Error("expected a test name after 'is'");
      test->name = Peek().text;
      if (!IsKnownTest(test->name)) return Error("unknown test '" + test->name + "'");
      ++pos_;
      test->args.push_back(std::move(node));
      const Token& next = Peek();
      if (AcceptPunct("(")) {
        VALET_RETURN_IF_ERROR(ParseCallArgs(test.get()));
      } else if ((next.kind == Token::Kind::kName && !EndsTestArgument(next.text)) ||
                 next.kind == Token::Kind::kString || next.kind == Token::Kind::kInt ||
                 next.kind == Token::Kind::kFloat || IsPunct("[") || IsPunct("{")) {
        VALET_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
        VALET_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
        test->args.push_back(std::move(arg));
      }
      node = std::move(test);
    } else {
      return node;
    }
  }
}

}  // namespace valet::chat
