// A loaded Llama-family model: configuration plus weight views into the
// memory-mapped GGUF file. Immutable after Load, so any number of contexts and
// threads may share one instance.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cache_aligned.h"
#include "gguf/gguf_file.h"
#include "kernels/matmul.h"
#include "model/model_config.h"
#include "model/weights_cache.h"
#include "valet/engine_interface.h"
#include "valet/load.h"
#include "valet/status.h"

namespace valet {

// One decoder layer. Fused tensors (Phi-3's attn_qkv, its [gate | up] ffn_up)
// are bound as row-range views, so every family fills the same fields.
// Optional tensors are nullptr when the file has none.
struct LlamaLayer {
  const float* attn_norm = nullptr;  // [n_embd]
  WeightMatrix wq;                   // [n_embd -> q_dim]
  WeightMatrix wk;                   // [n_embd -> kv_dim]
  WeightMatrix wv;                   // [n_embd -> kv_dim]
  const float* bq = nullptr;         // [q_dim] (Qwen2)
  const float* bk = nullptr;         // [kv_dim]
  const float* bv = nullptr;         // [kv_dim]
  const float* q_norm = nullptr;     // [head_dim], RMSNorm of each query head (Qwen3)
  const float* k_norm = nullptr;     // [head_dim], RMSNorm of each key head
  WeightMatrix wo;                   // [q_dim -> n_embd]
  const float* post_attn_norm = nullptr;  // [n_embd], of the attention's output (Gemma)
  const float* ffn_norm = nullptr;   // [n_embd]
  WeightMatrix w_gate;               // [n_embd -> n_ff]
  WeightMatrix w_up;                 // [n_embd -> n_ff]
  WeightMatrix w_down;               // [n_ff -> n_embd]
  const float* post_ffn_norm = nullptr;  // [n_embd], of the FFN's output (Gemma)
};

// Where a load keeps its packed weights as a file (model/weights_cache.h).
struct WeightsCacheOptions {
  // Empty: packed in memory at every load. A directory (one that exists, or
  // a path ending in '/'; created 0700 when missing): the cache is the file
  // in it named for the model (WeightsCacheFileName). Anything else: the
  // cache file itself.
  std::string path;
  // The most the directory's caches may take: older caches of other models
  // are removed to make room, and a cache that still does not fit is not
  // written (the load packs in memory).
  uint64_t budget_bytes = uint64_t{8} << 30;
  // A seam for tests: runs once the new cache's temporary file is whole,
  // before it is renamed into place (a kill there must leave no cache).
  std::function<void()> before_publish;
};

// Watches a load from the loading thread: where it is, and whether to stop.
struct LoadObserver {
  LoadProgress progress;
  // When set and true, the load stops at its next check (between stages and
  // between packed matrices) and fails with kAborted.
  const std::atomic<bool>* cancel = nullptr;

  bool cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
  void Report(LoadStage stage, uint64_t done = 0, uint64_t total = 0) const {
    if (progress) progress(stage, done, total);
  }
};

struct ModelLoadOptions {
  WeightsCacheOptions weights_cache;
  LoadObserver observer;
};

// How a load came by its packed weights.
struct ModelLoadReport {
  int32_t matrices_packed = 0;  // repacked by this load
  int32_t matrices_mapped = 0;  // mapped from the weights cache
  bool cache_written = false;   // this load made the cache it then mapped
  std::string cache_path;       // the cache file, when a cache was asked for
  // Why the cache was not used or not written (a torn or foreign file, the
  // budget, an I/O error); empty when it was, or when none was asked for.
  std::string cache_note;
};

class LlamaModel {
 public:
  static Result<std::shared_ptr<const LlamaModel>> Load(const std::string& path, const ModelLoadOptions& options = {});
  static Result<std::shared_ptr<const LlamaModel>> Load(GgufFile file, const ModelLoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const GgufFile& file() const { return file_; }
  const WeightMatrix& token_embd() const { return token_embd_; }  // [n_embd -> n_vocab] rows per token
  const float* output_norm() const { return output_norm_; }       // [n_embd]
  const WeightMatrix& output() const { return output_; }          // [n_embd -> n_vocab]; may alias token_embd
  bool tied_output() const { return tied_output_; }
  // [rope_dim / 2] divisors of each rotated pair's frequency for a context of
  // n_ctx positions: Llama 3.x rope_freqs.weight, or LongRoPE's short or long
  // table (Phi-3.5); nullptr when the model has none.
  const float* rope_freq_factors(int32_t n_ctx) const {
    if (rope_freqs_ != nullptr) return rope_freqs_;
    return n_ctx > config_.rope_orig_ctx ? rope_long_ : rope_short_;
  }
  const std::vector<LlamaLayer>& layers() const { return layers_; }
  // Bytes of tensor data in the file: mapped, or repacked into row groups
  // (kernels/weight_pack.h) in place of the mapped pages, never both.
  size_t weight_bytes() const { return weight_bytes_; }
  // Where the weights the forward pass reads live: file-backed (the model's
  // mapping and the weights cache's: pages the system may drop and read
  // again) or anonymous (row groups packed by this load without a cache).
  struct WeightMemory {
    size_t file_backed = 0;
    size_t anonymous = 0;
  };
  WeightMemory weight_memory() const { return weight_memory_; }
  // Names the model file: a checksum of its whole header (every metadata
  // key, the tokenizer and chat template among them, and every tensor's
  // description), of 16 pages spread over its tensor data, and its size.
  // Taken before any page is repacked.
  const std::string& fingerprint() const { return fingerprint_; }
  const ModelLoadReport& load_report() const { return load_report_; }
  // madvise over the weights: kCold on every byte the forward pass reads
  // (anonymous row groups only where swap or zram can take them), kPageOut
  // on the file-backed ones only (anonymous row groups would go to swap or
  // zram, costlier to bring back than to keep). Returns the bytes
  // advised. The pages come back on the next touch: nothing changes but speed.
  size_t AdviseWeights(WeightsAdvice advice) const;

 private:
  explicit LlamaModel(GgufFile file) : file_(std::move(file)) {}
  Status BindTensors();
  Result<WeightMatrix> Matrix(const std::string& name, int64_t n_in, int64_t n_out) const;
  Result<const float*> Vector(const std::string& name, int64_t n) const;
  // Vector() when the file has the tensor, nullptr otherwise (or when `required`, an error).
  Result<const float*> OptionalVector(const std::string& name, int64_t n, bool required) const;
  Status BindAttention(const std::string& prefix, LlamaLayer& l) const;
  Status BindFeedForward(const std::string& prefix, LlamaLayer& l) const;
  // Repacks the matrices the active kernels multiply as row groups: mapped
  // from the weights cache when it holds them, else into packed_ (and then
  // written to the cache and mapped from there, when one is asked for).
  // kAborted when the observer cancels the load midway.
  Status PackMatrices(const WeightsCacheOptions& cache, const LoadObserver& observer);
  struct PackPlan;
  // Publishes the packed matrices as the cache at `at` (within the budget)
  // and views them there.
  void WriteWeightsCache(const WeightsCacheLocation& at, const WeightsCacheKey& key, const PackPlan& plan,
                         const WeightsCacheOptions& options, const LoadObserver& observer);
  // Points the planned matrices at their row groups in `cache`.
  void ViewPacked(const PackPlan& plan, WeightsCache cache);

  GgufFile file_;
  ModelConfig config_;
  WeightMatrix token_embd_{};
  const float* output_norm_ = nullptr;
  WeightMatrix output_{};
  bool tied_output_ = false;
  const float* rope_freqs_ = nullptr;
  const float* rope_long_ = nullptr;
  const float* rope_short_ = nullptr;
  std::vector<LlamaLayer> layers_;
  CacheAlignedBytes packed_;  // the row-group matrices, one after another (no weights cache)
  WeightMemory weight_memory_;
  std::optional<WeightsCache> weights_cache_;  // or there
  size_t weight_bytes_ = 0;
  std::string fingerprint_;
  ModelLoadReport load_report_;
};

}  // namespace valet
