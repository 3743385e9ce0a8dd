// The engine facade: one model, its tokenizer, a KV pool and a forward
// context, opened together from a GGUF path or a range of an open file. Higher layers (CLI, scheduler,
// server) hold an Engine and never assemble the parts themselves.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine_interface.h"
#include "kv/kv_pool.h"
#include "model/llama_context.h"
#include "model/llama_model.h"
#include "tokenizer/tokenizer.h"
#include "valet/status.h"

namespace valet {

struct EngineOptions {
  std::string model_path;  // with model_range.fd >= 0, only the model's name in messages
  FileRange model_range;   // fd >= 0: the model is this range of an open file
  int n_threads = ThreadPool::DefaultThreadCount();
  int32_t n_ctx = 0;                    // 0: the model's training context
  int32_t max_batch_tokens = 512;       // tokens per forward step
  int32_t kv_block_tokens = 16;
  KvType kv_type = KvType::kF16;        // F32 for comparisons against references at 1e-4
  size_t kv_capacity_bytes = 256u << 20;  // KV pool budget
  WeightsCacheOptions weights_cache;      // packed weights as a file (model/weights_cache.h); off by default
  LoadObserver load_observer;             // progress and cancellation of Open
  PriorityMode priority_mode = PriorityMode::kAuto;  // how steps below the app's priority run (ThreadLanes)
  std::string sysfs_root = "/sys";                    // the CPU topology's (tests: a fake phone)
};

// Resident memory of an engine, by part.
struct MemoryReport {
  size_t weights_mapped = 0;     // tensor bytes mapped from the model or the weights cache (file-backed)
  size_t weights_anonymous = 0;  // row groups packed in memory (no weights cache)
  size_t kv_pool = 0;         // KV pool capacity, allocated up front
  size_t scratch = 0;         // forward-pass activations and matmul buffers
};

// One phase of Engine::Open (RealEngine::Open adds its own), in order.
struct LoadPhase {
  const char* name;
  double seconds;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options);

  const LlamaModel& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  LlamaContext& context() { return *context_; }
  KvPool& kv_pool() { return *kv_pool_; }
  const KvPool& kv_pool() const { return *kv_pool_; }
  const EngineOptions& options() const { return options_; }
  MemoryReport memory() const;
  // Where Open spent its time.
  const std::vector<LoadPhase>& load_profile() const { return load_profile_; }

  // A prompt's tokens: special-token texts ("<|im_start|>") parsed as their
  // tokens, as llama.cpp's server and CLI do, and BOS added when `add_bos`
  // and the vocabulary asks for it, unless the text already starts with it
  // (templates that write {{ bos_token }}).
  std::vector<int32_t> TokenizePrompt(std::string_view text, bool add_bos) const;
  // The same with options.literal: ranges where control-token texts are text.
  std::vector<int32_t> TokenizePrompt(std::string_view text, const TokenizeOptions& options) const;
  // The file's chat template and the texts of its BOS/EOS tokens.
  ChatFormat chat_format() const;
  // Names the model file for durable-task journals (SchedulerOptions::
  // model_fingerprint): a checksum of its whole header (every metadata key,
  // the tokenizer and chat template among them, and every tensor's
  // description), of 16 pages spread over its tensor data, and its size.
  std::string fingerprint() const;

 private:
  Engine() = default;

  EngineOptions options_;
  std::shared_ptr<const LlamaModel> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<KvPool> kv_pool_;
  std::unique_ptr<LlamaContext> context_;
  std::vector<LoadPhase> load_profile_;
};

}  // namespace valet
