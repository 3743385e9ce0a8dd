#include "constrain/utf8_ranges.h"

#include <algorithm>

namespace valet {
namespace {

constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

int EncodedLength(uint32_t cp) { return cp <= 0x7F ? 1 : cp <= 0x7FF ? 2 : cp <= 0xFFFF ? 3 : 4; }

// [lo, hi] of one encoded length, split until every byte position varies
// independently: each continuation suffix must be either full (all of
// 0x80..0xBF) or the only choice, which holds when the range is aligned to the
// suffix's span. Splits are on a worklist (at most a few dozen pieces).
void SplitSameLength(uint32_t lo, uint32_t hi, std::vector<std::vector<ByteRange8>>& out) {
  std::vector<CodePointRange> work = {{lo, hi}};
  while (!work.empty()) {
    const CodePointRange r = work.back();
    work.pop_back();
    const int n = EncodedLength(r.lo);
    bool split = false;
    for (int i = 1; i < n && !split; ++i) {
      const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
      if ((r.lo & ~m) == (r.hi & ~m)) continue;  // same prefix above these bits
      if ((r.lo & m) != 0) {
        work.push_back({(r.lo | m) + 1, r.hi});
        work.push_back({r.lo, r.lo | m});
        split = true;
      } else if ((r.hi & m) != m) {
        work.push_back({r.hi & ~m, r.hi});
        work.push_back({r.lo, (r.hi & ~m) - 1});
        split = true;
      }
    }
    if (split) continue;
    const std::string a = EncodeUtf8(r.lo);
    const std::string b = EncodeUtf8(r.hi);
    std::vector<ByteRange8> seq;
    for (size_t i = 0; i < a.size(); ++i) {
      seq.push_back({static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])});
    }
    out.push_back(std::move(seq));
  }
}

}  // namespace

std::string EncodeUtf8(uint32_t cp) {
  std::string s;
  if (cp <= 0x7F) {
    s += static_cast<char>(cp);
  } else if (cp <= 0x7FF) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp <= 0xFFFF) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::vector<CodePointRange> NormalizeRanges(std::vector<CodePointRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (negate) {
    std::vector<CodePointRange> complement;
    uint32_t next = 0;
    for (const CodePointRange& r : merged) {
      if (r.lo > next) complement.push_back({next, r.lo - 1});
      next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
    merged = std::move(complement);
  }
  std::vector<CodePointRange> out;  // without surrogates
  for (const CodePointRange& r : merged) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

std::vector<std::vector<ByteRange8>> Utf8Sequences(const std::vector<CodePointRange>& ranges) {
  std::vector<std::vector<ByteRange8>> out;
  for (const CodePointRange& r : ranges) {
    uint32_t lo = r.lo;
    for (uint32_t end : kLengthEnds) {
      if (lo > r.hi) break;
      if (lo > end) continue;
      const uint32_t hi = std::min(r.hi, end);
      SplitSameLength(lo, hi, out);
      lo = hi + 1;
    }
  }
  return out;
}

DecodedCodePoint DecodeCodePoint(std::string_view s) {
  if (s.empty()) return {};
  const auto c = static_cast<unsigned char>(s[0]);
  const size_t n = c < 0x80           ? 1
                   : (c >> 5) == 0x6  ? 2
                   : (c >> 4) == 0xE  ? 3
                   : (c >> 3) == 0x1E ? 4
                                      : 0;
  if (n == 0 || n > s.size()) return {};
  uint32_t cp = n == 1 ? c : c & (0x7Fu >> n);
  for (size_t i = 1; i < n; ++i) {
    const auto k = static_cast<unsigned char>(s[i]);
    if ((k & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (k & 0x3F);
  }
  static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[n] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
  return {cp, n};
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace valet
