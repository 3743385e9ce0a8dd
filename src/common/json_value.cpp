#include "common/json_value.h"

#include <cassert>
#include <cstdint>
#include <fstream>
#include <locale>
#include <sstream>
#include <utility>

namespace valet {

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::Number(double d) {
  JsonValue v;
  v.kind_ = Kind::kNumber;
  v.number_ = d;
  return v;
}

JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.kind_ = Kind::kString;
  v.string_ = std::move(s);
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind_ = Kind::kArray;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::Object(std::vector<std::string> keys, std::vector<JsonValue> values) {
  assert(keys.size() == values.size());
  JsonValue v;
  v.kind_ = Kind::kObject;
  v.keys_ = std::move(keys);
  v.items_ = std::move(values);
  return v;
}

bool JsonValue::AsBool() const {
  assert(is_bool());
  return bool_;
}

double JsonValue::AsNumber() const {
  assert(is_number());
  return number_;
}

const std::string& JsonValue::AsString() const {
  assert(is_string());
  return string_;
}

const std::vector<JsonValue>& JsonValue::items() const {
  assert(is_array() || is_object());
  return items_;
}

const std::vector<std::string>& JsonValue::keys() const {
  assert(is_object());
  return keys_;
}

const JsonValue& JsonValue::operator[](size_t i) const {
  assert(is_array() && i < items_.size());
  return items_[i];
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return &items_[i];
  }
  return nullptr;
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) { numbers_.imbue(std::locale::classic()); }

  Result<JsonValue> ParseDocument() {
    VALET_ASSIGN_OR_RETURN(JsonValue root, ParseValue(0));
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters after the document");
    return root;
  }

 private:
  Status Error(const std::string& what) const {
    return Corrupt("json: " + what + " at offset " + std::to_string(pos_));
  }

  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  bool Consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Result<JsonValue> ParseValue(int depth) {
    if (depth > kMaxJsonDepth) return Error("nesting too deep");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end of input");
    switch (text_[pos_]) {
      case '{':
        return ParseObject(depth);
      case '[':
        return ParseArray(depth);
      case '"': {
        VALET_ASSIGN_OR_RETURN(std::string s, ParseString());
        return JsonValue::String(std::move(s));
      }
      case 't':
        if (Consume("true")) return JsonValue::Bool(true);
        return Error("invalid literal");
      case 'f':
        if (Consume("false")) return JsonValue::Bool(false);
        return Error("invalid literal");
      case 'n':
        if (Consume("null")) return JsonValue::Null();
        return Error("invalid literal");
      default:
        return ParseNumber();
    }
  }

  Result<JsonValue> ParseArray(int depth) {
    ++pos_;  // '['
    std::vector<JsonValue> items;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return JsonValue::Array(std::move(items));
    }
    while (true) {
      VALET_ASSIGN_OR_RETURN(JsonValue item, ParseValue(depth + 1));
      items.push_back(std::move(item));
      SkipSpace();
      if (pos_ >= text_.size()) return Error("unterminated array");
      const char c = text_[pos_++];
      if (c == ']') return JsonValue::Array(std::move(items));
      if (c != ',') return Error("expected ',' or ']' in array");
    }
  }

  Result<JsonValue> ParseObject(int depth) {
    ++pos_;  // '{'
    std::vector<std::string> keys;
    std::vector<JsonValue> values;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return JsonValue::Object(std::move(keys), std::move(values));
    }
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected a member name");
      VALET_ASSIGN_OR_RETURN(std::string key, ParseString());
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':') return Error("expected ':' after a name");
      ++pos_;
      VALET_ASSIGN_OR_RETURN(JsonValue value, ParseValue(depth + 1));
      keys.push_back(std::move(key));
      values.push_back(std::move(value));
      SkipSpace();
      if (pos_ >= text_.size()) return Error("unterminated object");
      const char c = text_[pos_++];
      if (c == '}') return JsonValue::Object(std::move(keys), std::move(values));
      if (c != ',') return Error("expected ',' or '}' in object");
    }
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  size_t SkipDigits() {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    return pos_ - start;
  }

  // Checks the JSON number grammar, then converts.
  Result<JsonValue> ParseNumber() {
    const size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (SkipDigits() == 0) {
      return Error("invalid value");
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (SkipDigits() == 0) return Error("expected digits after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (SkipDigits() == 0) return Error("expected digits in exponent");
    }
    // The grammar holds, so the stream reads exactly these characters and
    // can fail only on a magnitude beyond double's.
    numbers_.clear();
    numbers_.str(std::string(text_.substr(start, pos_ - start)));
    double value = 0.0;
    numbers_ >> value;
    if (numbers_.fail()) return Error("number out of range");
    return JsonValue::Number(value);
  }

  Result<uint32_t> ParseHex4() {
    if (pos_ + 4 > text_.size()) return Error("truncated \\u escape");
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        code |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        code |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Error("invalid hex digit in \\u escape");
      }
    }
    return code;
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // After "\u": one code point, joining a surrogate pair when one follows.
  Status ParseUnicodeEscape(std::string& out) {
    VALET_ASSIGN_OR_RETURN(uint32_t cp, ParseHex4());
    if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("unpaired low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (!Consume("\\u")) return Error("unpaired high surrogate");
      VALET_ASSIGN_OR_RETURN(uint32_t low, ParseHex4());
      if (low < 0xDC00 || low > 0xDFFF) return Error("invalid low surrogate");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(cp, out);
    return Status::Ok();
  }

  Status ParseEscape(std::string& out) {
    if (pos_ >= text_.size()) return Error("unterminated escape");
    const char c = text_[pos_++];
    switch (c) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u':
        return ParseUnicodeEscape(out);
      default:
        return Error("invalid escape");
    }
    return Status::Ok();
  }

  Result<std::string> ParseString() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      const size_t run = pos_;
      while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\\' &&
             static_cast<unsigned char>(text_[pos_]) >= 0x20) {
        ++pos_;
      }
      out.append(text_.substr(run, pos_ - run));
      if (pos_ >= text_.size()) return Error("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') return Error("control character in string");
      VALET_RETURN_IF_ERROR(ParseEscape(out));
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  // Numbers convert through a stream in the classic locale: exact like
  // strtod, deaf to the process's locale, and portable (libc++ 19, the
  // NDK's, has no std::from_chars for double).
  std::istringstream numbers_;
};

}  // namespace

Result<JsonValue> ParseJson(std::string_view text) { return Parser(text).ParseDocument(); }

Result<JsonValue> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (!in.good() && !in.eof()) return IoError("cannot read " + path);
  Result<JsonValue> parsed = ParseJson(buffer.str());
  if (!parsed.ok()) return Status(parsed.status().code(), path + ": " + parsed.status().message());
  return parsed;
}

}  // namespace valet
