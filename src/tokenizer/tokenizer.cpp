#include "tokenizer/tokenizer.h"

#include <cassert>
#include <utility>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_token_splitter.h"
#include "tokenizer/spm_tokenizer.h"

namespace valet {

Tokenizer::Tokenizer(std::shared_ptr<const Vocabulary> vocab) : vocab_(std::move(vocab)) {
  assert(vocab_ != nullptr);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::Create(std::shared_ptr<const Vocabulary> vocab) {
  if (vocab == nullptr) return InvalidArgument("Tokenizer::Create: no vocabulary");
  if (vocab->model() == "llama")
    return std::unique_ptr<Tokenizer>(std::make_unique<SpmTokenizer>(std::move(vocab)));
  if (vocab->model() == "gpt2") {
    VALET_ASSIGN_OR_RETURN(PreTokenizerInfo pre, PreTokenizerForName(vocab->pre()));
    return std::unique_ptr<Tokenizer>(std::make_unique<BpeTokenizer>(std::move(vocab), pre));
  }
  return Unsupported("tokenizer model '" + vocab->model() +
                     "' is not supported: valet handles 'llama' (SentencePiece) and 'gpt2' "
                     "(byte-level BPE)");
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, EncodeOptions opts) const {
  const Vocabulary& vocab = *vocab_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 2 + 2);
  if (opts.add_bos && vocab.add_bos() && vocab.bos_id() != Vocabulary::kNoToken) {
    out.push_back(vocab.bos_id());
  }
  // The input start counts as "after a special token".
  bool after_special = true;
  const SpecialTokens mode =
      opts.parse_special ? SpecialTokens::kParse : SpecialTokens::kUserDefinedOnly;
  for (const TextFragment& f : SplitSpecialTokens(vocab, text, mode, opts.literal)) {
    if (f.token != Vocabulary::kNoToken) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    EncodeText(text.substr(f.begin, f.length), after_special, out);
    after_special = false;
  }
  if (opts.add_eos && vocab.add_eos() && vocab.eos_id() != Vocabulary::kNoToken) {
    out.push_back(vocab.eos_id());
  }
  return out;
}

std::string Tokenizer::TokenToPiece(int32_t id, DecodeOptions opts) const {
  std::string piece;
  AppendPiece(id, opts, piece);
  return piece;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, DecodeOptions opts) const {
  const Vocabulary& vocab = *vocab_;
  bool strip_space = StripsLeadingSpace();
  if (opts.remove_special && vocab.add_bos() && !ids.empty() && ids.front() == vocab.bos_id()) {
    ids = ids.subspan(1);
    strip_space = false;
  }
  if (opts.remove_special && vocab.add_eos() && !ids.empty() && ids.back() == vocab.eos_id()) {
    ids = ids.first(ids.size() - 1);
  }
  std::string out;
  out.reserve(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    AppendPiece(ids[i], opts, out);
    if (i == 0 && strip_space && !out.empty() && out.front() == ' ') out.erase(0, 1);
  }
  return out;
}

}  // namespace valet
