// A model's token vocabulary: texts, scores, types, special ids and the
// tokenizer flags stored beside them. Built once per model file and shared
// read-only by every tokenizer and session that uses the model.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "valet/status.h"

namespace valet {

class GgufFile;

// Token types as GGUF's `tokenizer.ggml.token_type` numbers them (llama.cpp's enum).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Plain inputs for Vocabulary::FromParts (tests, the synthetic-model tool).
struct VocabularyParts {
  std::string model = "llama";  // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (BPE)
  std::string pre;              // tokenizer.ggml.pre: the BPE pre-tokenizer's name
  std::vector<std::string> tokens;
  std::vector<std::string> merges;  // BPE: "left right", highest priority first
  std::vector<float> scores;        // empty: every score 0
  std::vector<TokenType> types;     // empty: every token normal
  int32_t bos_id = -1;              // -1: the vocabulary has no such token
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;           // end of turn; -1: found by text as llama.cpp does
  int32_t eom_id = -1;           // end of message (tool call); -1: found by text
  bool add_bos = true;           // tokenizer.ggml.add_bos_token
  bool add_eos = false;          // tokenizer.ggml.add_eos_token
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix
  // Phi-3 (llama.cpp keys this on general.name): whitespace right after a
  // special token is dropped, except after <unk>, <s> and <|endoftext|>.
  bool strip_after_special = false;
};

// One BPE merge: its priority (lower merges first) and the token it produces.
struct BpeMerge {
  int32_t rank;
  int32_t result;
};

class Vocabulary {
 public:
  static constexpr int32_t kNoToken = -1;

  // Validates lengths, ids, token types and byte-token texts; a model other than
  // "llama" or "gpt2" is Unsupported. As in llama.cpp, the end-of-generation and
  // fill-in-the-middle tokens found by their texts ("<|eot_id|>", "<|im_end|>" ...)
  // become control tokens.
  static Result<Vocabulary> FromParts(VocabularyParts parts);
  // Reads the tokenizer.ggml.* keys; defaults follow llama.cpp: SPM bos 1, eos 2,
  // unk 0, add_bos on, add_space_prefix on; BPE bos 11, eos 11, no unk, add_bos
  // only for Llama 3 pre-tokenizers, no space prefix; add_eos off.
  static Result<Vocabulary> FromGguf(const GgufFile& file);
  // The parts FromGguf builds from, unchecked (tests extend real vocabularies).
  static Result<VocabularyParts> PartsFromGguf(const GgufFile& file);

  int32_t size() const { return static_cast<int32_t>(texts_.size()); }
  bool Contains(int32_t id) const { return id >= 0 && id < size(); }

  // Require Contains(id).
  const std::string& TokenText(int32_t id) const { return texts_[Index(id)]; }
  float Score(int32_t id) const { return scores_[Index(id)]; }
  TokenType Type(int32_t id) const { return types_[Index(id)]; }
  // The byte a kByte token ("<0xNN>") stands for.
  uint8_t ByteValue(int32_t id) const { return byte_values_[Index(id)]; }

  // Exact text match; kNoToken when absent. When several tokens share a text the
  // highest id wins, as in llama.cpp.
  int32_t Lookup(std::string_view text) const;
  // The token for one raw byte: "<0xNN>", else a token whose text is that single
  // byte, else kNoToken.
  int32_t ByteToken(uint8_t byte) const { return byte_tokens_[byte]; }
  // Control, user-defined and unknown tokens, longest text first: the texts that
  // the encoder splits out of raw text before running the subword model.
  std::span<const int32_t> SplittingTokens() const { return splitting_tokens_; }
  // Whether whitespace that follows this special token in raw text is dropped.
  bool StripsSpaceAfter(int32_t id) const;

  // The merge of two adjacent tokens, or nullptr. Merges whose sides or result
  // are not tokens are left out: token symbols can never use them.
  const BpeMerge* FindMerge(int32_t left, int32_t right) const;

  // End-of-generation tokens: eos, eot, eom and the texts llama.cpp treats as such.
  bool IsEog(int32_t id) const;
  std::span<const int32_t> eog_ids() const { return eog_ids_; }

  const std::string& model() const { return model_; }
  const std::string& pre() const { return pre_; }
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t eot_id() const { return eot_id_; }
  int32_t eom_id() const { return eom_id_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }

 private:
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  Vocabulary() = default;
  size_t Index(int32_t id) const;
  Status BuildIndexes();
  void BuildMergeRanks(const std::vector<std::string>& merges);
  void FindEndOfGeneration();
  void MarkStripAfterSpecial();

  std::string model_;
  std::string pre_;
  std::vector<std::string> texts_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::vector<uint8_t> byte_values_;
  std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> text_to_id_;
  std::array<int32_t, 256> byte_tokens_{};
  std::vector<int32_t> splitting_tokens_;
  std::vector<int32_t> strip_after_;  // sorted ids of tokens that drop the whitespace after them
  std::unordered_map<uint64_t, BpeMerge> merge_ranks_;  // key: left << 32 | right
  std::vector<int32_t> eog_ids_;                        // sorted
  int32_t bos_id_ = kNoToken;
  int32_t eos_id_ = kNoToken;
  int32_t unk_id_ = kNoToken;
  int32_t pad_id_ = kNoToken;
  int32_t eot_id_ = kNoToken;
  int32_t eom_id_ = kNoToken;
  bool add_bos_ = true;
  bool add_eos_ = false;
  bool add_space_prefix_ = true;
};

}  // namespace valet
