// What the server may say back about what a client sent. A reply never
// carries a request's text whole: an error quotes at most a short, marked
// prefix of the offending value, so a 1 MiB field costs its sender a 1 MiB
// request and the server a reply of the usual size.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace valet {

// The longest stretch of a client's value an error message quotes.
inline constexpr size_t kMaxQuotedBytes = 64;

// At most `max_bytes` of `text`, cut before a UTF-8 continuation byte so a
// character is never split (text that is not UTF-8 is cut anywhere; the
// JSON writer replaces what is invalid).
[[nodiscard]] std::string_view Utf8Prefix(std::string_view text, size_t max_bytes);

// `text` in single quotes for an error message: whole up to kMaxQuotedBytes,
// else its first kMaxQuotedBytes, "…" and its length.
[[nodiscard]] std::string QuoteClientText(std::string_view text);

}  // namespace valet
