// Code point helpers for the byte-level BPE tokenizer: UTF-8 decoding as
// llama.cpp does it (invalid bytes become U+FFFD), encoding, and the character
// classes of the generated Unicode tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/unicode_tables.h"

namespace valet {

CharClass ClassOf(char32_t cpt);
// Unicode White_Space.
bool IsWhitespace(char32_t cpt);
inline bool IsLetter(char32_t cpt) { return ClassOf(cpt) == CharClass::kLetter; }
inline bool IsNumber(char32_t cpt) { return ClassOf(cpt) == CharClass::kNumber; }
inline bool IsPunctuation(char32_t cpt) { return ClassOf(cpt) == CharClass::kPunctuation; }

// Every byte of `text` lands in exactly one code point; a malformed or truncated
// sequence yields U+FFFD for its lead byte and decoding resumes at the next byte.
std::vector<char32_t> DecodeUtf8(std::string_view text);
void AppendUtf8(char32_t cpt, std::string& out);

// Length of the UTF-8 sequence a lead byte announces; stray continuation bytes
// count as one-byte characters so any byte string splits deterministically.
inline size_t Utf8SequenceLength(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

}  // namespace valet
