#include "tokenizer/vocabulary.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <utility>

namespace valet {
namespace {

std::optional<uint8_t> HexDigit(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
  if (c >= 'A' && c <= 'F') return static_cast<uint8_t>(c - 'A' + 10);
  if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
  return std::nullopt;
}

// "<0xNN>" -> NN.
std::optional<uint8_t> ParseByteText(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  std::optional<uint8_t> hi = HexDigit(text[3]);
  std::optional<uint8_t> lo = HexDigit(text[4]);
  if (!hi || !lo) return std::nullopt;
  return static_cast<uint8_t>(*hi << 4 | *lo);
}

std::string ByteText(uint8_t byte) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string{'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
}

uint64_t MergeKey(int32_t left, int32_t right) {
  return static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32 | static_cast<uint32_t>(right);
}

bool IsSplitting(TokenType type) {
  return type == TokenType::kControl || type == TokenType::kUserDefined ||
         type == TokenType::kUnknown;
}

Status CheckModel(const std::string& model) {
  if (model == "llama" || model == "gpt2") return Status::Ok();
  return Unsupported("tokenizer model '" + model +
                     "' is not supported: valet handles SentencePiece ('llama') and "
                     "byte-level BPE ('gpt2') vocabularies");
}

// Texts llama.cpp recognises as end of turn (the first one present becomes the
// EOT token when the file names none), as end of message, and as
// end-of-generation tokens in general.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",  // DeepSeek
    "<end_of_utterance>"};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>",      "<|im_end|>",         "<|end|>",    "<|return|>", "<|call|>",
    "<end_of_turn>",   "<|endoftext|>",      "<|eom_id|>", "<EOT>",      "_<EOT>",
    "<|end_of_text|>", "<end_of_utterance>", "</s>"};
// Fill-in-the-middle markers: all become control tokens; pad, repository and
// file separators also end generation.
constexpr std::string_view kFimTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<|fim_suffix|>", "<fim-suffix>",
    "<fim_suffix>", "<|fim_middle|>", "<fim-middle>", "<fim_middle>",
    // DeepSeek Coder's <｜fim▁begin｜>, <｜fim▁hole｜>, <｜fim▁end｜>
    "<\xEF\xBD\x9C"
    "fim\xE2\x96\x81"
    "begin\xEF\xBD\x9C>",
    "<\xEF\xBD\x9C"
    "fim\xE2\x96\x81"
    "hole\xEF\xBD\x9C>",
    "<\xEF\xBD\x9C"
    "fim\xE2\x96\x81"
    "end\xEF\xBD\x9C>"};
constexpr std::string_view kFimEogTexts[] = {"<|fim_pad|>",  "<fim-pad>",     "<fim_pad>",
                                             "<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                             "<reponame>",   "<|file_sep|>"};

Status CheckSpecialId(const char* name, int32_t id, size_t n_tokens) {
  if (id == Vocabulary::kNoToken || (id >= 0 && static_cast<size_t>(id) < n_tokens)) {
    return Status::Ok();
  }
  return Corrupt(std::string(name) + " token id " + std::to_string(id) +
                 " is outside the vocabulary of " + std::to_string(n_tokens) + " tokens");
}

Status CheckParts(const VocabularyParts& parts) {
  VALET_RETURN_IF_ERROR(CheckModel(parts.model));
  const size_t n = parts.tokens.size();
  if (n == 0) return Corrupt("vocabulary has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) return Corrupt("vocabulary is too large");
  if (!parts.scores.empty() && parts.scores.size() != n) {
    return Corrupt("vocabulary has " + std::to_string(n) + " tokens but " +
                   std::to_string(parts.scores.size()) + " scores");
  }
  if (!parts.types.empty() && parts.types.size() != n) {
    return Corrupt("vocabulary has " + std::to_string(n) + " tokens but " +
                   std::to_string(parts.types.size()) + " token types");
  }
  VALET_RETURN_IF_ERROR(CheckSpecialId("BOS", parts.bos_id, n));
  VALET_RETURN_IF_ERROR(CheckSpecialId("EOS", parts.eos_id, n));
  VALET_RETURN_IF_ERROR(CheckSpecialId("UNK", parts.unk_id, n));
  VALET_RETURN_IF_ERROR(CheckSpecialId("PAD", parts.pad_id, n));
  for (size_t i = 0; i < parts.types.size(); ++i) {
    const auto raw = static_cast<int32_t>(parts.types[i]);
    if (raw < 0 || raw > static_cast<int32_t>(TokenType::kByte)) {
      return Corrupt("token " + std::to_string(i) + " has unknown type " + std::to_string(raw));
    }
  }
  return Status::Ok();
}

}  // namespace

size_t Vocabulary::Index(int32_t id) const {
  assert(Contains(id) && "token id outside the vocabulary");
  return static_cast<size_t>(id);
}

Result<Vocabulary> Vocabulary::FromParts(VocabularyParts parts) {
  VALET_RETURN_IF_ERROR(CheckParts(parts));
  const size_t n = parts.tokens.size();
  Vocabulary vocab;
  vocab.model_ = std::move(parts.model);
  vocab.texts_ = std::move(parts.tokens);
  vocab.scores_ = parts.scores.empty() ? std::vector<float>(n, 0.0f) : std::move(parts.scores);
  vocab.types_ =
      parts.types.empty() ? std::vector<TokenType>(n, TokenType::kNormal) : std::move(parts.types);
  vocab.bos_id_ = parts.bos_id;
  vocab.eos_id_ = parts.eos_id;
  vocab.unk_id_ = parts.unk_id;
  vocab.pad_id_ = parts.pad_id;
  vocab.eot_id_ = parts.eot_id;
  vocab.eom_id_ = parts.eom_id;
  vocab.pre_ = std::move(parts.pre);
  vocab.add_bos_ = parts.add_bos;
  vocab.add_eos_ = parts.add_eos;
  vocab.add_space_prefix_ = parts.add_space_prefix;
  VALET_RETURN_IF_ERROR(vocab.BuildIndexes());
  vocab.BuildMergeRanks(parts.merges);
  if (parts.strip_after_special) vocab.MarkStripAfterSpecial();
  return vocab;
}

Status Vocabulary::BuildIndexes() {
  const int32_t n = size();
  byte_values_.assign(texts_.size(), 0);
  text_to_id_.reserve(texts_.size());
  for (int32_t id = 0; id < n; ++id) {
    text_to_id_.insert_or_assign(texts_[id], id);  // later ids win, as in llama.cpp
    if (types_[id] == TokenType::kByte) {
      std::optional<uint8_t> byte = ParseByteText(texts_[id]);
      if (!byte) {
        return Corrupt("byte token " + std::to_string(id) + " is not of the form <0xNN>");
      }
      byte_values_[id] = *byte;
    }
  }
  FindEndOfGeneration();
  for (int32_t id = 0; id < n; ++id) {
    if (IsSplitting(types_[id]) && !texts_[id].empty()) splitting_tokens_.push_back(id);
  }
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    int32_t id = Lookup(ByteText(byte));
    if (id == kNoToken) id = Lookup(std::string(1, static_cast<char>(byte)));
    byte_tokens_[byte] = id;
  }
  // Longest first so that a special text containing another one wins; ids break
  // ties to keep the order deterministic.
  std::sort(splitting_tokens_.begin(), splitting_tokens_.end(), [this](int32_t a, int32_t b) {
    return texts_[a].size() != texts_[b].size() ? texts_[a].size() > texts_[b].size() : a < b;
  });
  return Status::Ok();
}

void Vocabulary::FindEndOfGeneration() {
  // Each text found becomes a control token (llama.cpp's fix-up for converters
  // that typed them as normal or user-defined), so it is only split out of
  // input text when special tokens are parsed and decodes to nothing by default.
  auto find_all = [this](std::span<const std::string_view> texts, bool eog, int32_t* first) {
    for (std::string_view text : texts) {
      const int32_t id = Lookup(text);
      if (id == kNoToken) continue;
      types_[id] = TokenType::kControl;
      if (eog) eog_ids_.push_back(id);
      if (first != nullptr && *first == kNoToken) *first = id;
    }
  };
  const bool eot_given = eot_id_ != kNoToken;
  const bool eom_given = eom_id_ != kNoToken;
  find_all(kEotTexts, false, eot_given ? nullptr : &eot_id_);
  find_all(kEomTexts, false, eom_given ? nullptr : &eom_id_);
  find_all(kEogTexts, true, nullptr);
  find_all(kFimTexts, false, nullptr);
  find_all(kFimEogTexts, true, nullptr);
  for (int32_t id : {eos_id_, eot_id_, eom_id_}) {
    if (id != kNoToken) eog_ids_.push_back(id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

void Vocabulary::BuildMergeRanks(const std::vector<std::string>& merges) {
  merge_ranks_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view merge = merges[rank];
    // The separator is the first space after the first character: a left side may itself be " ".
    const size_t space = merge.find(' ', 1);
    if (space == std::string_view::npos) continue;
    const int32_t left = Lookup(merge.substr(0, space));
    const int32_t right = Lookup(merge.substr(space + 1));
    joined.assign(merge.substr(0, space));
    joined.append(merge.substr(space + 1));
    const int32_t result = Lookup(joined);
    if (left == kNoToken || right == kNoToken || result == kNoToken) continue;
    // The first occurrence of a pair keeps its rank, as in llama.cpp.
    merge_ranks_.try_emplace(MergeKey(left, right), BpeMerge{static_cast<int32_t>(rank), result});
  }
}

const BpeMerge* Vocabulary::FindMerge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  auto it = merge_ranks_.find(MergeKey(left, right));
  return it == merge_ranks_.end() ? nullptr : &it->second;
}

void Vocabulary::MarkStripAfterSpecial() {
  strip_after_ = splitting_tokens_;
  if (int32_t eos_text = Lookup("</s>"); eos_text != kNoToken) strip_after_.push_back(eos_text);
  for (std::string_view keep : {"<unk>", "<s>", "<|endoftext|>"}) {
    std::erase(strip_after_, Lookup(keep));
  }
  std::sort(strip_after_.begin(), strip_after_.end());
  strip_after_.erase(std::unique(strip_after_.begin(), strip_after_.end()), strip_after_.end());
}

bool Vocabulary::StripsSpaceAfter(int32_t id) const {
  return std::binary_search(strip_after_.begin(), strip_after_.end(), id);
}

bool Vocabulary::IsEog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

int32_t Vocabulary::Lookup(std::string_view text) const {
  auto it = text_to_id_.find(text);
  return it == text_to_id_.end() ? kNoToken : it->second;
}

}  // namespace valet
