// The tree's one JSON library is nlohmann-json. This header names the
// document type valet uses inside (object members in document order, as a
// chat template iterating a Python dict expects) and the two entry points
// that bound what they read: every document from a file or a client is
// checked for syntax and nesting by a SAX pass before a DOM is built, so no
// input can make a parse, copy or destructor recurse deeper than the limit.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "valet/status.h"

namespace valet {

using Json = nlohmann::ordered_json;

// Objects and arrays nested this deep are accepted; one more level is not.
// OpenAI's request bodies need five (messages[].content[] parts).
inline constexpr int kMaxJsonDepth = 64;

// The SAX pass alone: whether `text` is one JSON document nested at most
// `max_depth` deep, and if not, where and why.
struct JsonCheck {
  bool ok = false;
  bool too_deep = false;      // else a syntax error
  size_t error_position = 0;  // byte offset of the error
};
JsonCheck CheckJson(std::string_view text, int max_depth = kMaxJsonDepth);

// Parses one document (surrounding whitespace allowed); errors name the byte
// offset, or the nesting limit.
Result<Json> ParseJson(std::string_view text, int max_depth = kMaxJsonDepth);
Result<Json> ReadJsonFile(const std::string& path, int max_depth = kMaxJsonDepth);

// The member `key` of an object; null when absent or `value` is not an object.
const Json* FindMember(const Json& value, std::string_view key);

// Compact (indent < 0) or indented text; never throws: bytes that are not
// UTF-8 become U+FFFD.
std::string DumpJson(const Json& value, int indent = -1);

}  // namespace valet
