// Declarations of the Unicode range tables in unicode_tables.cpp, which
// scripts/gen_unicode_tables.py generates from Debian's unicode-data
// (UnicodeData.txt, PropList.txt).
#pragma once

#include <cstddef>
#include <cstdint>

namespace valet {

// The general-category classes the pre-tokenizer expressions ask about (\p{L}, \p{N}, \p{P}).
enum class CharClass : uint8_t { kOther, kLetter, kNumber, kPunctuation };

namespace unicode_tables {

struct ClassRange {
  char32_t first;
  char32_t last;
  CharClass cls;
};

struct CodepointRange {
  char32_t first;
  char32_t last;
};

// Sorted, disjoint; code points outside every range are kOther / not whitespace.
extern const ClassRange kClassRanges[];
extern const size_t kClassRangeCount;
extern const CodepointRange kWhitespaceRanges[];
extern const size_t kWhitespaceRangeCount;

}  // namespace unicode_tables
}  // namespace valet
