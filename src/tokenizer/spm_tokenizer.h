// SentencePiece-style (SPM) encoding and decoding over a Vocabulary, matching
// llama.cpp's results id for id: spaces become U+2581, a space is prefixed to
// each text fragment that starts the input or follows a special token, and
// pieces are merged pairwise by score (highest first, leftmost on ties), with
// byte tokens for whatever no vocabulary token covers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace valet {

class SpmTokenizer final : public Tokenizer {
 public:
  // The vocabulary must be an SPM ("llama") one; it is shared, never copied.
  explicit SpmTokenizer(std::shared_ptr<const Vocabulary> vocab);

  TokenizerKind kind() const override { return TokenizerKind::kSpm; }

 protected:
  void EncodeText(std::string_view raw, bool after_special,
                  std::vector<int32_t>& out) const override;
  // U+2581 becomes a space, "<0xNN>" becomes that byte.
  void AppendPiece(int32_t id, DecodeOptions opts, std::string& out) const override;
  bool StripsLeadingSpace() const override { return vocabulary().add_space_prefix(); }
};

}  // namespace valet
