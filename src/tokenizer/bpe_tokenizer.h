// Byte-level BPE (tokenizer.ggml.model "gpt2"), matching llama.cpp id for id:
// text is cut into words by the vocabulary's pre-tokenizer, each word's UTF-8
// bytes are mapped to GPT-2's printable code points, and adjacent symbols are
// merged by merge rank (lowest first, leftmost on ties). Decoding maps the
// code points back to bytes.
#pragma once

#include <memory>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace valet {

class BpeTokenizer final : public Tokenizer {
 public:
  // The vocabulary must be a BPE ("gpt2") one; it is shared, never copied.
  BpeTokenizer(std::shared_ptr<const Vocabulary> vocab, PreTokenizerInfo pre);

  TokenizerKind kind() const override { return TokenizerKind::kBpe; }

 protected:
  void EncodeText(std::string_view raw, bool after_special,
                  std::vector<int32_t>& out) const override;
  void AppendPiece(int32_t id, DecodeOptions opts, std::string& out) const override;

 private:
  // One pre-tokenized word, already byte-mapped.
  void EncodeWord(std::string_view word, std::vector<int32_t>& out) const;

  PreTokenizer pre_;
  bool ignore_merges_;
};

}  // namespace valet
