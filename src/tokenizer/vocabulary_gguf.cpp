// Vocabulary::FromGguf: the tokenizer.ggml.* keys of a GGUF file turned into
// VocabularyParts (kept apart from vocabulary.cpp so the core stays file-format free).
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace valet {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

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
  if (parts.model == "gpt2") {
    if (file.Find(kMergesKey) == nullptr) {
      return Corrupt(file.path() + ": BPE vocabulary without " + std::string(kMergesKey));
    }
    VALET_ASSIGN_OR_RETURN(std::vector<std::string_view> merges, file.GetStringArray(kMergesKey));
    parts.merges.assign(merges.begin(), merges.end());
  }
  return Status::Ok();
}

// llama.cpp's defaults for keys a file leaves out, per tokenizer model.
struct SpecialDefaults {
  int32_t bos;
  int32_t eos;
  int32_t unk;
  bool add_bos;
  bool add_space_prefix;
};

SpecialDefaults DefaultsFor(const VocabularyParts& parts) {
  if (parts.model != "gpt2") return {1, 2, 0, true, true};
  Result<PreTokenizerInfo> pre = PreTokenizerForName(parts.pre);
  return {11, 11, Vocabulary::kNoToken, pre.ok() && pre->add_bos_by_default, false};
}

// llama.cpp recognises Phi-3 by a lower-cased general.name containing "phi-3" or "phi3".
bool IsPhi3(const GgufFile& file) {
  if (file.Find("general.name") == nullptr) return false;
  Result<std::string_view> name = file.GetString("general.name");
  if (!name.ok()) return false;
  std::string lower(*name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
}

Status ReadSpecials(const GgufFile& file, VocabularyParts& parts) {
  const size_t n = parts.tokens.size();
  const SpecialDefaults d = DefaultsFor(parts);
  constexpr int32_t kNone = Vocabulary::kNoToken;
  VALET_ASSIGN_OR_RETURN(parts.bos_id,
                         ReadSpecialId(file, "tokenizer.ggml.bos_token_id", d.bos, n));
  VALET_ASSIGN_OR_RETURN(parts.eos_id,
                         ReadSpecialId(file, "tokenizer.ggml.eos_token_id", d.eos, n));
  VALET_ASSIGN_OR_RETURN(parts.unk_id,
                         ReadSpecialId(file, "tokenizer.ggml.unknown_token_id", d.unk, n));
  VALET_ASSIGN_OR_RETURN(parts.pad_id,
                         ReadSpecialId(file, "tokenizer.ggml.padding_token_id", kNone, n));
  VALET_ASSIGN_OR_RETURN(parts.eot_id,
                         ReadSpecialId(file, "tokenizer.ggml.eot_token_id", kNone, n));
  VALET_ASSIGN_OR_RETURN(parts.eom_id,
                         ReadSpecialId(file, "tokenizer.ggml.eom_token_id", kNone, n));
  VALET_ASSIGN_OR_RETURN(parts.add_bos, ReadFlag(file, "tokenizer.ggml.add_bos_token", d.add_bos));
  VALET_ASSIGN_OR_RETURN(parts.add_eos, ReadFlag(file, "tokenizer.ggml.add_eos_token", false));
  VALET_ASSIGN_OR_RETURN(parts.add_space_prefix,
                         ReadFlag(file, "tokenizer.ggml.add_space_prefix", d.add_space_prefix));
  parts.strip_after_special = IsPhi3(file);
  return Status::Ok();
}

}  // namespace

Result<VocabularyParts> Vocabulary::PartsFromGguf(const GgufFile& file) {
  VocabularyParts parts;
  Result<std::string_view> model = file.GetString(kModelKey);
  if (!model.ok()) {
    return Status(model.status().code(),
                  file.path() + ": no tokenizer vocabulary (" + model.status().message() + ")");
  }
  parts.model = std::string(*model);
  if (parts.model != "llama" && parts.model != "gpt2") {
    return Unsupported(file.path() + ": tokenizer model '" + parts.model +
                       "' is not supported: valet handles SentencePiece ('llama') and "
                       "byte-level BPE ('gpt2') vocabularies");
  }
  if (file.Find(kPreKey) != nullptr) {
    VALET_ASSIGN_OR_RETURN(std::string_view pre, file.GetString(kPreKey));
    parts.pre = std::string(pre);
  }
  VALET_RETURN_IF_ERROR(ReadArrays(file, parts));
  VALET_RETURN_IF_ERROR(ReadSpecials(file, parts));
  return parts;
}

Result<Vocabulary> Vocabulary::FromGguf(const GgufFile& file) {
  VALET_ASSIGN_OR_RETURN(VocabularyParts parts, PartsFromGguf(file));
  Result<Vocabulary> vocab = FromParts(std::move(parts));
  if (!vocab.ok()) {
    return Status(vocab.status().code(), file.path() + ": " + vocab.status().message());
  }
  return vocab;
}

}  // namespace valet
