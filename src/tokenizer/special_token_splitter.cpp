#include "tokenizer/special_token_splitter.h"

namespace valet {
namespace {

// C isspace in the "C" locale, which llama.cpp's stripping uses.
bool IsAsciiSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace

std::vector<TextFragment> SplitSpecialTokens(const Vocabulary& vocab, std::string_view text,
                                             SpecialTokens mode) {
  std::vector<TextFragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({0, text.size(), Vocabulary::kNoToken});
  std::vector<TextFragment> next;
  for (int32_t id : vocab.SplittingTokens()) {
    if (mode != SpecialTokens::kParse && vocab.Type(id) != TokenType::kUserDefined) continue;
    const std::string& special = vocab.TokenText(id);
    next.clear();
    for (const TextFragment& f : fragments) {
      if (f.token != Vocabulary::kNoToken) {
        next.push_back(f);
        continue;
      }
      const std::string_view raw = text.substr(f.begin, f.length);
      size_t pos = 0;
      for (size_t hit = raw.find(special); hit != std::string_view::npos;
           hit = raw.find(special, pos)) {
        if (hit > pos) next.push_back({f.begin + pos, hit - pos, Vocabulary::kNoToken});
        next.push_back({f.begin + hit, special.size(), id});
        pos = hit + special.size();
        if (vocab.StripsSpaceAfter(id)) {
          while (pos < raw.size() && IsAsciiSpace(raw[pos])) ++pos;
        }
      }
      if (pos < raw.size()) next.push_back({f.begin + pos, raw.size() - pos, Vocabulary::kNoToken});
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace valet
