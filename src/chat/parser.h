// Parses Lexer tokens into a statement tree (chat/ast.h). Unknown tags,
// filters and tests, unclosed blocks and malformed expressions are reported
// with the template line; nesting is bounded so hostile input cannot
// exhaust the stack.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"
#include "valet/status.h"

namespace valet::chat {

class Parser {
 public:
  static constexpr int kMaxNesting = 128;

  static Result<Body> Parse(std::string_view source);

 private:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  // Statements until one of `terminators` (a block keyword) or the end.
  Status ParseBody(const std::vector<std::string_view>& terminators, Body* out, std::string* terminator);
  Status ParseStatement(Body* out, const std::vector<std::string_view>& terminators);
  Status ParseIf(Stmt* stmt);
  Status ParseFor(Stmt* stmt);
  Status ParseSet(Stmt* stmt);
  Status ParseMacro(Stmt* stmt);
  Status ParseTargets(std::vector<std::string>* names);

  Result<ExprPtr> ParseExpression();  // with ternary
  Result<ExprPtr> ParseOr();
  Result<ExprPtr> ParseAnd();
  Result<ExprPtr> ParseNot();
  Result<ExprPtr> ParseCompare();
  Result<ExprPtr> ParseAdditive();
  Result<ExprPtr> ParseConcat();
  Result<ExprPtr> ParseMultiplicative();
  Result<ExprPtr> ParsePower();
  Result<ExprPtr> ParseUnary(bool with_filters);
  Result<ExprPtr> ParsePrimary();
  Result<ExprPtr> ParsePostfix(ExprPtr node);
  Result<ExprPtr> ParseFiltersAndTests(ExprPtr node);
  Result<ExprPtr> ParseSubscript(ExprPtr object);
  Status ParseCallArgs(Expr* call);  // after `(`, through `)`
  Result<ExprPtr> ParseListOrTuple(std::string_view close);
  Result<ExprPtr> ParseDict();

  const Token& Peek(size_t ahead = 0) const;
  bool IsPunct(std::string_view p, size_t ahead = 0) const;
  bool IsName(std::string_view n, size_t ahead = 0) const;
  bool AcceptPunct(std::string_view p);
  bool AcceptName(std::string_view n);
  Status ExpectPunct(std::string_view p);
  Status ExpectName(std::string_view n);
  Status ExpectKind(Token::Kind kind, const char* what);
  Status Error(const std::string& message) const;
  static ExprPtr MakeNode(Expr::Kind kind, int line, std::string name = "");

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;  // expression and block nesting
};

}  // namespace valet::chat
