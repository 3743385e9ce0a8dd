#include "tokenizer/special_token_splitter.h"

#include <algorithm>
#include <cassert>

namespace valet {
namespace {

// C isspace in the "C" locale, which llama.cpp's stripping uses.
bool IsAsciiSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

[[maybe_unused]] bool SortedAndDisjoint(std::span<const ByteRange> ranges) {
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end()) return false;
  }
  return true;
}

// Whether [begin, begin + length) shares a byte with one of the sorted, disjoint ranges.
bool OverlapsAny(std::span<const ByteRange> ranges, size_t begin, size_t length) {
  const auto first_after = std::partition_point(ranges.begin(), ranges.end(),
                                                [&](const ByteRange& r) { return r.end() <= begin; });
  return first_after != ranges.end() && first_after->begin < begin + length;
}

}  // namespace

std::vector<TextFragment> SplitSpecialTokens(const Vocabulary& vocab, std::string_view text,
                                             SpecialTokens mode, std::span<const ByteRange> literal) {
  assert(SortedAndDisjoint(literal));
  std::vector<TextFragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({0, text.size(), Vocabulary::kNoToken});
  std::vector<TextFragment> next;
  for (int32_t id : vocab.SplittingTokens()) {
    const bool user_defined = vocab.Type(id) == TokenType::kUserDefined;
    if (mode != SpecialTokens::kParse && !user_defined) continue;
    const std::string& special = vocab.TokenText(id);
    next.clear();
    for (const TextFragment& f : fragments) {
      if (f.token != Vocabulary::kNoToken) {
        next.push_back(f);
        continue;
      }
      const std::string_view raw = text.substr(f.begin, f.length);
      size_t pos = 0;   // start of the raw text not emitted yet
      size_t from = 0;  // where the next search starts
      for (size_t hit = raw.find(special); hit != std::string_view::npos;
           hit = raw.find(special, from)) {
        if (!user_defined && OverlapsAny(literal, f.begin + hit, special.size())) {
          from = hit + 1;  // a later occurrence may still start inside this one
          continue;
        }
        if (hit > pos) next.push_back({f.begin + pos, hit - pos, Vocabulary::kNoToken});
        next.push_back({f.begin + hit, special.size(), id});
        pos = hit + special.size();
        if (vocab.StripsSpaceAfter(id)) {
          while (pos < raw.size() && IsAsciiSpace(raw[pos])) ++pos;
        }
        from = pos;
      }
      if (pos < raw.size()) next.push_back({f.begin + pos, raw.size() - pos, Vocabulary::kNoToken});
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace valet
