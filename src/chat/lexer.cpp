#include "chat/lexer.h"

#include <cctype>

namespace valet::chat {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Longest first so that `//` wins over `/` and `<=` over `<`.
constexpr std::string_view kPuncts[] = {"**", "//", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}", ",",
                                        ".",  ":",  "|",  "=",  "<",  ">",  "+", "-", "*", "/", "%", "~"};

}  // namespace

Result<std::vector<Token>> Lexer::Tokenize(std::string_view source) {
  std::string src(source);
  // Jinja's default: a single trailing newline is not part of the output.
  if (!src.empty() && src.back() == '\n') src.pop_back();
  Lexer lexer(std::move(src));
  VALET_RETURN_IF_ERROR(lexer.Run());
  lexer.Push(Token::Kind::kEnd, "");
  return std::move(lexer.tokens_);
}

Status Lexer::Error(const std::string& message) const {
  return InvalidArgument("template line " + std::to_string(line_) + ": " + message);
}

void Lexer::Advance(size_t n) {
  for (size_t i = 0; i < n && pos_ < src_.size(); ++i) {
    if (src_[pos_++] == '\n') ++line_;
  }
}

Status Lexer::Run() {
  while (pos_ < src_.size()) {
    if (At("{#")) {
      VALET_RETURN_IF_ERROR(LexComment());
    } else if (At("{{") || At("{%")) {
      VALET_RETURN_IF_ERROR(LexTag());
    } else {
      LexText();
    }
  }
  return Status::Ok();
}

void Lexer::LexText() {
  const size_t start = pos_;
  const int start_line = line_;
  while (pos_ < src_.size() && !At("{{") && !At("{%") && !At("{#")) Advance(1);
  tokens_.push_back({Token::Kind::kText, src_.substr(start, pos_ - start), start_line});
  if (At("{%") || At("{#")) StripIndentBeforeBlock(start);
}

// lstrip_blocks: spaces and tabs between a line start and a block or comment tag go.
void Lexer::StripIndentBeforeBlock(size_t text_start) {
  std::string& text = tokens_.back().text;
  size_t i = text.size();
  while (i > 0 && (text[i - 1] == ' ' || text[i - 1] == '\t')) --i;
  const bool at_line_start = i > 0 ? text[i - 1] == '\n' || text[i - 1] == '\r'
                                   : text_start == 0 || src_[text_start - 1] == '\n' || src_[text_start - 1] == '\r';
  if (!at_line_start) return;
  text.resize(i);
  if (text.empty()) tokens_.pop_back();
}

// `{%-`, `{{-`, `{#-`: the text before the tag loses its trailing whitespace.
void Lexer::StripTrailingWhitespaceOfText() {
  if (tokens_.empty() || tokens_.back().kind != Token::Kind::kText) return;
  std::string& text = tokens_.back().text;
  while (!text.empty() && IsSpace(text.back())) text.pop_back();
  if (text.empty()) tokens_.pop_back();
}

void Lexer::SkipWhitespace() {
  while (pos_ < src_.size() && IsSpace(src_[pos_])) Advance(1);
}

// trim_blocks: the first newline after a block or comment tag goes.
void Lexer::SkipNewlineAfterBlock() {
  if (pos_ < src_.size() && src_[pos_] == '\n') Advance(1);
}

Status Lexer::LexComment() {
  const int start_line = line_;
  Advance(2);
  if (pos_ < src_.size() && src_[pos_] == '-') StripTrailingWhitespaceOfText();
  const size_t end = src_.find("#}", pos_);
  if (end == std::string::npos) {
    line_ = start_line;
    return Error("comment `{#` is never closed with `#}`");
  }
  const bool strip_after = end > pos_ && src_[end - 1] == '-';
  Advance(end + 2 - pos_);
  if (strip_after) {
    SkipWhitespace();
  } else {
    SkipNewlineAfterBlock();
  }
  return Status::Ok();
}

Status Lexer::LexTag() {
  const bool is_stmt = At("{%");
  if (pos_ + 2 < src_.size() && src_[pos_ + 2] == '-') {
    StripTrailingWhitespaceOfText();
    Advance(3);
  } else {
    Advance(2);
  }
  Push(is_stmt ? Token::Kind::kOpenStmt : Token::Kind::kOpenExpr, is_stmt ? "{%" : "{{");
  return LexInsideTag(is_stmt ? Token::Kind::kCloseStmt : Token::Kind::kCloseExpr);
}

Status Lexer::LexInsideTag(Token::Kind close_kind) {
  const bool is_stmt = close_kind == Token::Kind::kCloseStmt;
  const std::string_view close = is_stmt ? "%}" : "}}";
  const std::string trimmed_close = std::string("-") + std::string(close);
  brace_depth_ = 0;
  while (true) {
    SkipWhitespace();
    if (pos_ >= src_.size()) {
      return Error(std::string("tag is never closed with `") + std::string(close) + "`");
    }
    if (brace_depth_ == 0 && (At(trimmed_close) || At(close))) {
      const bool strip_after = At(trimmed_close);
      Advance(strip_after ? 3 : 2);
      Push(close_kind, std::string(close));
      if (strip_after) {
        SkipWhitespace();
      } else if (is_stmt) {
        SkipNewlineAfterBlock();
      }
      return Status::Ok();
    }
    if (At("{%") || At("{{")) return Error("a tag opens inside another tag");
    const char c = src_[pos_];
    if (c == '\'' || c == '"') {
      VALET_RETURN_IF_ERROR(LexString(c));
    } else if (IsDigit(c)) {
      LexNumber();
    } else if (IsNameStart(c)) {
      const size_t start = pos_;
      while (pos_ < src_.size() && IsNameChar(src_[pos_])) Advance(1);
      Push(Token::Kind::kName, src_.substr(start, pos_ - start));
    } else if (!LexPunct()) {
      return Error(std::string("unexpected character '") + c + "'");
    }
  }
}

Status Lexer::LexString(char quote) {
  const int start_line = line_;
  Advance(1);
  std::string value;
  while (pos_ < src_.size() && src_[pos_] != quote) {
    char c = src_[pos_];
    if (c == '\\' && pos_ + 1 < src_.size()) {
      const char e = src_[pos_ + 1];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        default: value += '\\'; value += e; break;  // Python keeps unknown escapes as written
      }
      Advance(2);
      continue;
    }
    value += c;
    Advance(1);
  }
  if (pos_ >= src_.size()) {
    line_ = start_line;
    return Error("string literal is never closed");
  }
  Advance(1);
  tokens_.push_back({Token::Kind::kString, std::move(value), start_line});
  return Status::Ok();
}

void Lexer::LexNumber() {
  const size_t start = pos_;
  while (pos_ < src_.size() && IsDigit(src_[pos_])) Advance(1);
  const bool after_dot = !tokens_.empty() && tokens_.back().kind == Token::Kind::kPunct && tokens_.back().text == ".";
  bool is_float = false;
  if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && IsDigit(src_[pos_ + 1])) {
    is_float = true;
    Advance(1);
    while (pos_ < src_.size() && IsDigit(src_[pos_])) Advance(1);
  }
  Push(is_float ? Token::Kind::kFloat : Token::Kind::kInt, src_.substr(start, pos_ - start));
}

bool Lexer::LexPunct() {
  for (std::string_view p : kPuncts) {
    if (!At(p)) continue;
    if (p == "{") ++brace_depth_;
    if (p == "}") --brace_depth_;
    Push(Token::Kind::kPunct, std::string(p));
    Advance(p.size());
    return true;
  }
  return false;
}

}  // namespace valet::chat
