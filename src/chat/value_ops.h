// Operations on Values shared by the interpreter and the filters: member and
// item access (with the string and dict methods Python gives templates),
// slicing, containment, ordering, and JSON output in the exact spacing of
// Hugging Face's renderer. Strings index and count by code point, as in Python.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/value.h"
#include "valet/status.h"

namespace valet::chat {

// `object.name`: an object's member, else a method bound to the value
// (str.strip, dict.get, ...), else undefined.
Value GetAttribute(const Value& object, std::string_view name);
// `object[key]`: member, element (negative counts from the end) or code point.
Result<Value> GetItem(const Value& object, const Value& key);
// `object[start:stop:step]` on arrays and strings.
Result<Value> SliceValue(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
                         std::optional<int64_t> step);
// `item in container` for strings (substring), arrays (element) and objects (key).
Result<bool> Contains(const Value& container, const Value& item);
// -1, 0 or 1 for two numbers or two strings; an error for anything else.
Result<int> Compare(const Value& a, const Value& b);
// Elements to iterate: array items, object keys, string code points.
Result<std::vector<Value>> Iterate(const Value& v);

struct JsonOptions {
  int indent = 0;  // 0: one line with ", " and ": " separators
  bool ensure_ascii = false;
  size_t max_bytes = size_t{16} << 20;
};
// OutOfRange past max_bytes or nested deeper than Value::kMaxNesting (a value
// that contains itself).
Result<std::string> ToJson(const Value& v, const JsonOptions& options);

// UTF-8 helpers: code points of s (invalid bytes count as one each).
std::vector<std::string_view> SplitCodePoints(std::string_view s);
size_t CodePointCount(std::string_view s);

// Python's str.strip family; `chars` null strips whitespace.
std::string StripChars(std::string_view s, const std::string* chars, bool left, bool right);
std::string AsciiUpper(std::string_view s);
std::string AsciiLower(std::string_view s);
std::string TitleCase(std::string_view s);
std::string Capitalize(std::string_view s);
std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to, int64_t count);

}  // namespace valet::chat
