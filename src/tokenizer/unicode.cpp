#include "tokenizer/unicode.h"

#include <algorithm>
#include <span>

namespace valet {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

template <typename Range>
const Range* FindRange(std::span<const Range> ranges, char32_t cpt) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), cpt,
                             [](char32_t c, const Range& r) { return c < r.first; });
  if (it == ranges.begin()) return nullptr;
  --it;
  return cpt <= it->last ? &*it : nullptr;
}

bool IsContinuation(std::string_view text, size_t i) {
  return i < text.size() && (static_cast<uint8_t>(text[i]) & 0xC0) == 0x80;
}

// Length of the well-formed sequence starting at `i` (by llama.cpp's rules:
// the lead byte announces the length and every following byte is 10xxxxxx), or 0.
size_t SequenceLength(std::string_view text, size_t i) {
  const auto lead = static_cast<uint8_t>(text[i]);
  size_t length = 0;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0)
    length = 2;
  else if ((lead & 0xF0) == 0xE0)
    length = 3;
  else if ((lead & 0xF8) == 0xF0)
    length = 4;
  else
    return 0;
  for (size_t k = 1; k < length; ++k) {
    if (!IsContinuation(text, i + k)) return 0;
  }
  return length;
}

}  // namespace

CharClass ClassOf(char32_t cpt) {
  const unicode_tables::ClassRange* r =
      FindRange(std::span(unicode_tables::kClassRanges, unicode_tables::kClassRangeCount), cpt);
  return r == nullptr ? CharClass::kOther : r->cls;
}

bool IsWhitespace(char32_t cpt) {
  return FindRange(
             std::span(unicode_tables::kWhitespaceRanges, unicode_tables::kWhitespaceRangeCount),
             cpt) != nullptr;
}

std::vector<char32_t> DecodeUtf8(std::string_view text) {
  std::vector<char32_t> cpts;
  cpts.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t length = SequenceLength(text, i);
    if (length == 0) {
      cpts.push_back(kReplacement);
      ++i;
      continue;
    }
    static constexpr uint8_t kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    char32_t cpt = static_cast<uint8_t>(text[i]) & kLeadMask[length];
    for (size_t k = 1; k < length; ++k) cpt = cpt << 6 | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    cpts.push_back(cpt);
    i += length;
  }
  return cpts;
}

void AppendUtf8(char32_t cpt, std::string& out) {
  if (cpt < 0x80) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out.push_back(static_cast<char>(0xC0 | cpt >> 6));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | cpt >> 12));
    out.push_back(static_cast<char>(0x80 | (cpt >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | cpt >> 18));
    out.push_back(static_cast<char>(0x80 | (cpt >> 12 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

}  // namespace valet
