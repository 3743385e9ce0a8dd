// The pre-tokenizers of byte-level BPE vocabularies: the regular expressions
// that cut text into words before merging (named by tokenizer.ggml.pre),
// implemented by hand over code points with llama.cpp's semantics: a list of
// expressions applied in turn, each one splitting every piece the previous
// left into its matches and the unmatched text between them, look-ahead
// bounded by the piece.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "valet/status.h"

namespace valet {

enum class PreTokenizerKind {
  kDefault,    // llama.cpp's fallback for BPE vocabularies without a known name
  kGpt2,       // gpt-2, mpt, olmo, phi-2 ...
  kLlama3,     // llama-bpe / llama3, dbrx, smaug-bpe ...: contractions, digit groups of 1-3
  kQwen2,      // qwen2, stablelm2 ...: the Llama 3 expression with single digits
  kStarcoder,  // starcoder, refact, smollm ...: single digits, then the GPT-2 expression
  kFalcon,
  kDeepseekLlm,
  kDeepseekCoder,
};

struct PreTokenizerInfo {
  PreTokenizerKind kind = PreTokenizerKind::kDefault;
  // A word that is itself a vocabulary token is emitted whole, merges unused (Llama 3).
  bool ignore_merges = false;
  // Whether BOS is added when the file has no tokenizer.ggml.add_bos_token key.
  bool add_bos_by_default = false;
};

// The pre-tokenizer llama.cpp uses for a tokenizer.ggml.pre name ("" and
// "default" are kDefault); an unknown name is Unsupported, naming it.
Result<PreTokenizerInfo> PreTokenizerForName(std::string_view name);

class PreTokenizer {
 public:
  explicit PreTokenizer(PreTokenizerKind kind) : kind_(kind) {}

  // The words of `cpts` as consecutive lengths in code points (summing to cpts.size()).
  std::vector<size_t> Split(std::span<const char32_t> cpts) const;

 private:
  PreTokenizerKind kind_;
};

}  // namespace valet
