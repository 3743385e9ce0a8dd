// The tokenizer interface and its factory: a model's vocabulary picks the
// implementation (tokenizer.ggml.model "llama": SentencePiece; "gpt2":
// byte-level BPE with the pre-tokenizer named by tokenizer.ggml.pre).
// Tokenizers are immutable and may be shared across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocabulary.h"
#include "valet/byte_range.h"
#include "valet/status.h"

namespace valet {

struct EncodeOptions {
  // Prepend BOS when the vocabulary's add_bos flag asks for it (llama.cpp's add_special).
  bool add_bos = true;
  // Append EOS when the vocabulary's add_eos flag asks for it (off for Llama vocabularies).
  bool add_eos = true;
  // Recognise control and unknown token texts ("<s>", "<|im_start|>") in the input;
  // user-defined tokens are always recognised, as in llama.cpp.
  bool parse_special = false;
  // With parse_special: sorted, disjoint byte ranges of the input (a chat's message
  // content) read as with parse_special off. A control or unknown token text that
  // overlaps one stays text; user-defined tokens are recognised there as anywhere.
  // When no such text overlaps a range, the tokens are exactly those without ranges.
  std::span<const ByteRange> literal = {};
};

struct DecodeOptions {
  // Drop a leading BOS (when the vocabulary adds one) and a trailing EOS (when it adds one).
  bool remove_special = false;
  // Render control and unknown tokens as their text instead of nothing.
  bool unparse_special = false;
};

enum class TokenizerKind { kSpm, kBpe };

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Unsupported (one line naming it) for a tokenizer model or BPE pre-tokenizer valet lacks.
  static Result<std::unique_ptr<Tokenizer>> Create(std::shared_ptr<const Vocabulary> vocab);

  const Vocabulary& vocabulary() const { return *vocab_; }
  virtual TokenizerKind kind() const = 0;
  // "spm" or "bpe", for reports.
  std::string_view kind_name() const { return kind() == TokenizerKind::kSpm ? "spm" : "bpe"; }

  std::vector<int32_t> Encode(std::string_view text, EncodeOptions opts = {}) const;

  // One token's bytes; control/unknown tokens are empty unless opts.unparse_special,
  // unused and out-of-range ids are empty. opts.remove_special is ignored here.
  std::string TokenToPiece(int32_t id, DecodeOptions opts = {}) const;

  // Concatenated pieces, after opts.remove_special dropped BOS/EOS. SPM only: when
  // the vocabulary adds a space prefix, one leading space is stripped from the
  // first piece, unless a leading BOS was removed (as in llama.cpp).
  std::string Decode(std::span<const int32_t> ids, DecodeOptions opts = {}) const;

 protected:
  explicit Tokenizer(std::shared_ptr<const Vocabulary> vocab);

  // Tokens for one run of raw text; `after_special` is set for a run that starts
  // the input or follows a special token.
  virtual void EncodeText(std::string_view raw, bool after_special,
                          std::vector<int32_t>& out) const = 0;
  virtual void AppendPiece(int32_t id, DecodeOptions opts, std::string& out) const = 0;
  virtual bool StripsLeadingSpace() const { return false; }

 private:
  std::shared_ptr<const Vocabulary> vocab_;
};

}  // namespace valet
