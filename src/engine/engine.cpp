#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace valet {
namespace {

Result<GgufFile> OpenModelFile(const EngineOptions& options) {
  if (options.model_range.fd < 0) return GgufFile::Open(options.model_path);
  VALET_ASSIGN_OR_RETURN(MappedBuffer bytes, MappedBuffer::MapRange(options.model_range, options.model_path));
  return GgufFile::Parse(std::move(bytes), options.model_path);
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  e->options_ = options;
  const LoadObserver& observer = options.load_observer;
  auto t = std::chrono::steady_clock::now();
  // Each phase's wall time, from the end of the one before; a cancelled load
  // stops there.
  const auto phase = [&](const char* name) {
    const auto now = std::chrono::steady_clock::now();
    e->load_profile_.push_back({name, std::chrono::duration<double>(now - t).count()});
    t = now;
    return observer.cancelled() ? Aborted("the load of " + options.model_path + " was cancelled") : Status::Ok();
  };
  observer.Report(LoadStage::kMap);
  VALET_ASSIGN_OR_RETURN(GgufFile file, OpenModelFile(options));
  VALET_RETURN_IF_ERROR(phase("map and parse the file"));
  ModelLoadOptions model_options;
  model_options.weights_cache = options.weights_cache;
  model_options.observer = observer;
  VALET_ASSIGN_OR_RETURN(e->model_, LlamaModel::Load(std::move(file), model_options));
  const ModelLoadReport& report = e->model_->load_report();
  VALET_RETURN_IF_ERROR(phase(report.cache_written      ? "bind, pack and write the weights cache"
                              : report.matrices_mapped ? "bind and map the weights cache"
                                                       : "bind and pack the weights"));
  observer.Report(LoadStage::kPrepare);
  VALET_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::FromGguf(e->model_->file()));
  const ModelConfig& c = e->model_->config();
  if (vocab.size() != c.n_vocab) {
    return Corrupt(options.model_path + ": the vocabulary has " + std::to_string(vocab.size()) +
                   " tokens but the embedding matrix has " + std::to_string(c.n_vocab) + " rows");
  }
  Result<std::unique_ptr<Tokenizer>> tokenizer =
      Tokenizer::Create(std::make_shared<const Vocabulary>(std::move(vocab)));
  if (!tokenizer.ok()) {
    return Status(tokenizer.status().code(), options.model_path + ": " + tokenizer.status().message());
  }
  e->tokenizer_ = std::move(tokenizer).value();
  VALET_RETURN_IF_ERROR(phase("vocabulary and tokenizer"));

  ContextOptions ctx_options;
  ctx_options.n_threads = options.n_threads;
  ctx_options.n_ctx = options.n_ctx;
  ctx_options.max_batch_tokens = options.max_batch_tokens;
  ctx_options.priority_mode = options.priority_mode;
  ctx_options.sysfs_root = options.sysfs_root;
  VALET_ASSIGN_OR_RETURN(e->context_, LlamaContext::Create(e->model_, ctx_options));
  VALET_RETURN_IF_ERROR(phase("forward context and threads"));

  KvPoolOptions pool_options;
  pool_options.layout =
      ModelKvLayout(c, e->context_->options().n_ctx, options.kv_block_tokens, options.kv_type);
  pool_options.capacity_bytes = options.kv_capacity_bytes;
  VALET_ASSIGN_OR_RETURN(e->kv_pool_, KvPool::Create(pool_options));
  VALET_RETURN_IF_ERROR(phase("KV pool"));
  return e;
}

MemoryReport Engine::memory() const {
  const LlamaModel::WeightMemory w = model_->weight_memory();
  return MemoryReport{w.file_backed, w.anonymous, kv_pool_->capacity_bytes(), context_->scratch_bytes()};
}

std::vector<int32_t> Engine::TokenizePrompt(std::string_view text, bool add_bos) const {
  TokenizeOptions o;
  o.add_bos = add_bos;
  return TokenizePrompt(text, o);
}

std::vector<int32_t> Engine::TokenizePrompt(std::string_view text, const TokenizeOptions& options) const {
  EncodeOptions o;
  o.add_bos = false;
  o.parse_special = true;
  o.literal = options.literal;
  std::vector<int32_t> tokens = tokenizer_->Encode(text, o);
  const Vocabulary& vocab = tokenizer_->vocabulary();
  const int32_t bos = vocab.bos_id();
  if (options.add_bos && vocab.add_bos() && bos >= 0 && (tokens.empty() || tokens.front() != bos)) {
    tokens.insert(tokens.begin(), bos);
  }
  return tokens;
}

std::string Engine::fingerprint() const { return model_->fingerprint(); }

ChatFormat Engine::chat_format() const {
  ChatFormat f;
  const GgufFile& file = model_->file();
  if (file.Find("tokenizer.chat_template") != nullptr) {
    if (Result<std::string_view> t = file.GetString("tokenizer.chat_template"); t.ok()) f.template_source = *t;
  }
  const Vocabulary& vocab = tokenizer_->vocabulary();
  if (vocab.Contains(vocab.bos_id())) f.bos_token = vocab.TokenText(vocab.bos_id());
  if (vocab.Contains(vocab.eos_id())) f.eos_token = vocab.TokenText(vocab.eos_id());
  for (int32_t id : vocab.SplittingTokens()) {
    if (vocab.Type(id) != TokenType::kUserDefined) f.special_texts.push_back(vocab.TokenText(id));
  }
  return f;
}

}  // namespace valet
