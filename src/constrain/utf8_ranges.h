// Code point ranges as UTF-8 byte sequences: how a character class becomes
// byte terminals. Each result is a sequence of byte ranges whose product is
// exactly a set of encodings, and together they cover the input ranges.
#pragma once

#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace valet {

struct CodePointRange {
  uint32_t lo;
  uint32_t hi;  // inclusive
};

struct ByteRange8 {
  uint8_t lo;
  uint8_t hi;
};

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Sorts and merges `ranges`, complements them within [0, 0x10FFFF] when
// `negate`, and drops the surrogates (U+D800..U+DFFF have no UTF-8 form).
std::vector<CodePointRange> NormalizeRanges(std::vector<CodePointRange> ranges, bool negate);

// The byte-range sequences (1 to 4 long) encoding exactly the code points of
// normalized `ranges`.
std::vector<std::vector<ByteRange8>> Utf8Sequences(const std::vector<CodePointRange>& ranges);

// The UTF-8 encoding of one code point (<= 0x10FFFF).
std::string EncodeUtf8(uint32_t cp);

// The code point the UTF-8 at the start of `s` encodes, and its length in
// bytes; length 0 when those bytes are not one well-formed scalar value
// (cut short, overlong, a surrogate, past U+10FFFF).
struct DecodedCodePoint {
  uint32_t cp = 0;
  size_t length = 0;
};
DecodedCodePoint DecodeCodePoint(std::string_view s);

// 0-15 for a hex digit, else -1.
int HexDigitValue(char c);

}  // namespace valet
