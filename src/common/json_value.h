// A small strict JSON reader (RFC 8259): parses a whole document into a DOM of
// JsonValue nodes (numbers as double, strings UTF-8 with escapes decoded,
// object members in file order). Used for golden test files and for the
// scheduler's budget table. Errors are Status values naming the byte offset.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "valet/status.h"

namespace valet {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  static JsonValue Null() { return JsonValue(); }
  static JsonValue Bool(bool b);
  static JsonValue Number(double d);
  static JsonValue String(std::string s);
  static JsonValue Array(std::vector<JsonValue> items);
  static JsonValue Object(std::vector<std::string> keys, std::vector<JsonValue> values);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  // Each accessor requires the matching kind.
  bool AsBool() const;
  double AsNumber() const;
  const std::string& AsString() const;
  // Array elements, or object member values (parallel to keys()).
  const std::vector<JsonValue>& items() const;
  // Object member names in file order.
  const std::vector<std::string>& keys() const;

  // Elements of an array / members of an object; 0 for scalars.
  size_t size() const { return items_.size(); }
  // Requires is_array() and i < size().
  const JsonValue& operator[](size_t i) const;
  // The first member named `key`; nullptr when absent or when this is not an object.
  const JsonValue* Find(std::string_view key) const;

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0.0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::string> keys_;
};

// Parses one JSON document (surrounding whitespace allowed). Nesting deeper
// than kMaxJsonDepth is rejected to keep the recursion bounded.
inline constexpr int kMaxJsonDepth = 256;
Result<JsonValue> ParseJson(std::string_view text);
Result<JsonValue> ReadJsonFile(const std::string& path);

}  // namespace valet
