// SentencePiece-style (SPM) encoding and decoding over a Vocabulary, matching
// llama.cpp's results id for id: spaces become U+2581, a space is prefixed to
// each text fragment that starts the input or follows a special token, and
// pieces are merged pairwise by score (highest first, leftmost on ties), with
// byte tokens for whatever no vocabulary token covers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocabulary.h"

namespace valet {

struct EncodeOptions {
  // Prepend BOS when the vocabulary's add_bos flag asks for it (llama.cpp's add_special).
  bool add_bos = true;
  // Append EOS when the vocabulary's add_eos flag asks for it (off for Llama vocabularies).
  bool add_eos = true;
  // Recognise control and unknown token texts ("<s>", "</s>") in the input;
  // user-defined tokens are always recognised, as in llama.cpp.
  bool parse_special = false;
};

struct DecodeOptions {
  // Drop a leading BOS (when the vocabulary adds one) and a trailing EOS (when it adds one).
  bool remove_special = false;
  // Render control and unknown tokens as their text instead of nothing.
  bool unparse_special = false;
};

class SpmTokenizer {
 public:
  // The vocabulary must be an SPM ("llama") one; it is shared, never copied.
  explicit SpmTokenizer(std::shared_ptr<const Vocabulary> vocab);

  const Vocabulary& vocabulary() const { return *vocab_; }

  std::vector<int32_t> Encode(std::string_view text, EncodeOptions opts = {}) const;

  // One token's bytes: U+2581 becomes a space, "<0xNN>" becomes that byte,
  // control/unknown tokens are empty unless opts.unparse_special, unused and
  // out-of-range ids are empty. opts.remove_special is ignored here.
  std::string TokenToPiece(int32_t id, DecodeOptions opts = {}) const;

  // Concatenated pieces. As in llama.cpp, when the vocabulary adds a space
  // prefix, one leading space is stripped from the first piece decoded, unless
  // opts.remove_special removed a leading BOS (then nothing is stripped).
  std::string Decode(std::span<const int32_t> ids, DecodeOptions opts = {}) const;

 private:
  void EncodeFragment(std::string_view raw, bool prefix_space, std::vector<int32_t>& out) const;
  void AppendPiece(int32_t id, DecodeOptions opts, bool strip_space, std::string& out) const;

  std::shared_ptr<const Vocabulary> vocab_;
};

}  // namespace valet
