// Cuts special-token texts out of raw input before a subword model sees it,
// as llama.cpp does for every tokenizer kind: control and unknown tokens only
// when special tokens are parsed, user-defined tokens always.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/vocabulary.h"
#include "valet/byte_range.h"

namespace valet {

// A run of the input: raw text to tokenize (token == kNoToken), or one special token matched in it.
struct TextFragment {
  size_t begin = 0;
  size_t length = 0;
  int32_t token = Vocabulary::kNoToken;
};

enum class SpecialTokens { kUserDefinedOnly, kParse };

// Longest special text first, each one cut out of every raw fragment left by the previous ones.
// `literal` (sorted, disjoint) marks text where only user-defined tokens may match, as if
// parsing were off there: a control or unknown match that overlaps it stays raw text.
std::vector<TextFragment> SplitSpecialTokens(const Vocabulary& vocab, std::string_view text,
                                             SpecialTokens mode,
                                             std::span<const ByteRange> literal = {});

}  // namespace valet
