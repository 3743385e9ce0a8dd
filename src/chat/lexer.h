// Splits a Jinja template into tokens: raw text between tags and the tokens
// inside `{{ }}` and `{% %}`. Whitespace is handled as Hugging Face's renderer
// does for chat templates: one trailing newline is dropped, trim_blocks and
// lstrip_blocks are on, and `-` markers strip whitespace beside a tag.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "valet/status.h"

namespace valet::chat {

struct Token {
  enum class Kind {
    kText,        // raw template text
    kOpenExpr,    // {{
    kCloseExpr,   // }}
    kOpenStmt,    // {%
    kCloseStmt,   // %}
    kName,        // identifier or keyword
    kString,      // string literal, escapes decoded
    kInt,
    kFloat,
    kPunct,       // operator or bracket: ( ) [ ] { } , . : | = == != < > <= >= + - * / // % ** ~
    kEnd,         // end of input
  };
  Kind kind = Kind::kEnd;
  std::string text;
  int line = 1;
};

class Lexer {
 public:
  static Result<std::vector<Token>> Tokenize(std::string_view source);

 private:
  explicit Lexer(std::string source) : src_(std::move(source)) {}
  Status Run();
  void LexText();
  Status LexComment();
  Status LexTag();
  Status LexInsideTag(Token::Kind close_kind);
  Status LexString(char quote);
  void LexNumber();
  bool LexPunct();
  void StripTrailingWhitespaceOfText();
  void StripIndentBeforeBlock(size_t text_start);
  void SkipWhitespace();
  void SkipNewlineAfterBlock();
  bool At(std::string_view s) const { return src_.compare(pos_, s.size(), s) == 0; }
  void Push(Token::Kind kind, std::string text) { tokens_.push_back({kind, std::move(text), line_}); }
  void Advance(size_t n);
  Status Error(const std::string& message) const;

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  int brace_depth_ = 0;  // `{` of dict literals inside `{{ }}`
  std::vector<Token> tokens_;
};

}  // namespace valet::chat
