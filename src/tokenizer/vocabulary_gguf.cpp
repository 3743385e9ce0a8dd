// Vocabulary::FromGguf: the tokenizer.ggml.* keys of a GGUF file turned into
// VocabularyParts (kept apart from vocabulary.cpp so the core stays file-format free).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "tokenizer/vocabulary.h"

namespace valet {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

// An optional special-token id. Converters write UINT32_MAX (or -1) for "none";
// a key that is absent falls back to `fallback` when it lies inside the vocabulary.
Result<int32_t> ReadSpecialId(const GgufFile& file, std::string_view key, int32_t fallback,
                              size_t n_tokens) {
  const GgufValue* value = file.Find(key);
  if (value == nullptr) {
    const bool usable = fallback >= 0 && static_cast<size_t>(fallback) < n_tokens;
    return usable ? fallback : Vocabulary::kNoToken;
  }
  if (std::optional<uint64_t> u = value->AsUint()) {
    if (*u == std::numeric_limits<uint32_t>::max() || *u == std::numeric_limits<uint64_t>::max()) {
      return Vocabulary::kNoToken;
    }
    if (*u >= n_tokens) {
      return Corrupt(file.path() + ": " + std::string(key) + " = " + std::to_string(*u) +
                     " is outside the vocabulary of " + std::to_string(n_tokens) + " tokens");
    }
    return static_cast<int32_t>(*u);
  }
  if (std::optional<int64_t> i = value->AsInt(); i && *i < 0) return Vocabulary::kNoToken;
  return Corrupt(file.path() + ": " + std::string(key) + " is not an integer");
}

Result<bool> ReadFlag(const GgufFile& file, std::string_view key, bool fallback) {
  if (file.Find(key) == nullptr) return fallback;
  return file.GetBool(key);
}

Status ReadArrays(const GgufFile& file, VocabularyParts& parts) {
  VALET_ASSIGN_OR_RETURN(std::vector<std::string_view> tokens, file.GetStringArray(kTokensKey));
  parts.tokens.assign(tokens.begin(), tokens.end());
  if (file.Find(kScoresKey) != nullptr) {
    VALET_ASSIGN_OR_RETURN(parts.scores, file.GetFloatArray(kScoresKey));
  }
  if (file.Find(kTypesKey) != nullptr) {
    VALET_ASSIGN_OR_RETURN(std::vector<int32_t> types, file.GetIntArray(kTypesKey));
    parts.types.reserve(types.size());
    for (int32_t t : types) parts.types.push_back(static_cast<TokenType>(t));
  }
  return Status::Ok();
}

Status ReadSpecials(const GgufFile& file, VocabularyParts& parts) {
  const size_t n = parts.tokens.size();
  VALET_ASSIGN_OR_RETURN(parts.bos_id, ReadSpecialId(file, "tokenizer.ggml.bos_token_id", 1, n));
  VALET_ASSIGN_OR_RETURN(parts.eos_id, ReadSpecialId(file, "tokenizer.ggml.eos_token_id", 2, n));
  VALET_ASSIGN_OR_RETURN(parts.unk_id,
                         ReadSpecialId(file, "tokenizer.ggml.unknown_token_id", 0, n));
  VALET_ASSIGN_OR_RETURN(parts.pad_id, ReadSpecialId(file, "tokenizer.ggml.padding_token_id",
                                                     Vocabulary::kNoToken, n));
  VALET_ASSIGN_OR_RETURN(parts.add_bos, ReadFlag(file, "tokenizer.ggml.add_bos_token", true));
  VALET_ASSIGN_OR_RETURN(parts.add_eos, ReadFlag(file, "tokenizer.ggml.add_eos_token", false));
  VALET_ASSIGN_OR_RETURN(parts.add_space_prefix,
                         ReadFlag(file, "tokenizer.ggml.add_space_prefix", true));
  return Status::Ok();
}

}  // namespace

Result<Vocabulary> Vocabulary::FromGguf(const GgufFile& file) {
  VocabularyParts parts;
  Result<std::string_view> model = file.GetString(kModelKey);
  if (!model.ok()) {
    return Status(model.status().code(),
                  file.path() + ": no tokenizer vocabulary (" + model.status().message() + ")");
  }
  parts.model = std::string(*model);
  if (parts.model != "llama") {
    return Unsupported(file.path() + ": tokenizer model '" + parts.model +
                       "' is not supported yet: valet handles SentencePiece ('llama') "
                       "vocabularies; BPE and others are planned");
  }
  VALET_RETURN_IF_ERROR(ReadArrays(file, parts));
  VALET_RETURN_IF_ERROR(ReadSpecials(file, parts));
  Result<Vocabulary> vocab = FromParts(std::move(parts));
  if (!vocab.ok()) {
    return Status(vocab.status().code(), file.path() + ": " + vocab.status().message());
  }
  return vocab;
}

}  // namespace valet
