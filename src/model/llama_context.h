// Per-use state for running a LlamaModel: scratch buffers, the thread pool and
// the forward pass itself. The model is shared and immutable; KV state lives in
// KvSequence objects owned by the caller, so one context can serve many
// sequences in one batch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/cache_aligned.h"
#include "common/thread_lanes.h"
#include "kernels/matmul.h"
#include "kv/kv_pool.h"
#include "model/llama_model.h"
#include "model/step_cut.h"
#include "valet/status.h"

namespace valet {

enum class LogitsMode {
  kNone,  // just extend the KV cache (a prefill chunk that is not the last)
  kLast,  // logits after the item's last token
  kAll,   // logits after every token of the item (teacher forcing, scoring)
};

// One sequence's share of a forward step: `tokens` are appended at positions
// seq->n_tokens() onwards. With `cut`, a stopped step keeps the item's
// progress there, and a step starts from it when it holds (the same tokens).
struct BatchItem {
  KvSequence* seq = nullptr;
  std::span<const int32_t> tokens;
  LogitsMode logits = LogitsMode::kLast;
  StepCut* cut = nullptr;
};

struct ContextOptions {
  int n_threads = ThreadPool::DefaultThreadCount();
  int32_t n_ctx = 0;             // positions per sequence; 0 = the model's training context
  int32_t max_batch_tokens = 512;  // tokens per forward step (sizes the scratch buffers)
  PriorityMode priority_mode = PriorityMode::kAuto;  // how steps below the app's priority run (ThreadLanes)
  std::string sysfs_root = "/sys";                    // where the CPU topology is read
};

// Cumulative engine counters, the raw material of the cost models above.
struct ForwardStats {
  int64_t steps = 0;
  int64_t tokens = 0;
  double seconds = 0.0;
};

// The KV layout for sequences of up to n_ctx positions of `config`'s model:
// its sliding-window layers keep only their window when that is shorter.
KvLayout ModelKvLayout(const ModelConfig& config, int32_t n_ctx, int32_t block_tokens, KvType type);

class LlamaContext {
 public:
  static Result<std::unique_ptr<LlamaContext>> Create(std::shared_ptr<const LlamaModel> model,
                                                      const ContextOptions& options);

  const LlamaModel& model() const { return *model_; }
  const ContextOptions& options() const { return options_; }
  const ForwardStats& stats() const { return stats_; }
  int n_threads() const { return lanes_.size(); }
  // The compute threads by priority: Configure() sets the next steps' count,
  // priority and cores; a step runs inside lanes().Run().
  ThreadLanes& lanes() { return lanes_; }
  // While *flag is true, Forward stops before its next layer and returns
  // kAborted without committing any sequence (a higher-priority request wants
  // the engine); items with a StepCut keep their progress in it, the others
  // are redone from the first layer. nullptr: run to the end.
  void set_abort_flag(const std::atomic<bool>* flag) { abort_ = flag; }
  // The seam cut-and-resume tests go through: the next Forward stops before
  // `layer` as if the abort flag had been raised there (once; -1: never).
  void set_cut_for_testing(int32_t layer) { cut_for_testing_ = layer; }
  // Bytes of scratch memory the forward pass holds.
  size_t scratch_bytes() const;

  // Runs one forward step over the batch (each sequence at most once) and
  // writes the requested logits row after row, in item order:
  // logits is [n_rows, n_vocab]. On error no sequence is committed; on
  // success every item's cut is cleared.
  Status Forward(std::span<const BatchItem> batch, std::vector<float>& logits);

 private:
  LlamaContext(std::shared_ptr<const LlamaModel> model, const ContextOptions& options);
  Status Validate(std::span<const BatchItem> batch, int32_t* n_tokens, int32_t* n_rows) const;
  // Lays the step's tokens out as rows, items that start at lower layers
  // first (so a layer's rows are a prefix), and fills x_ with each row's
  // input: the embedding, or the hidden state a cut kept.
  void PlaceRows(std::span<const BatchItem> batch);
  // Keeps the progress of every item with a cut when the step stops before layer il.
  void KeepCuts(std::span<const BatchItem> batch, int32_t il);
  void RopeAngles(int32_t n);
  // (cos, sin) of every rotated pair of the step's n tokens into out: [n, rope_dim].
  void RopeTable(int32_t n, float base, float freq_scale, const float* factors, float* out) const;
  void Layer(const LlamaLayer& layer, int32_t il, int32_t n);
  void Attention(int32_t il, int32_t n);
  // Attention's three phases: q and k rotated (q scaled), k and v stored at
  // each token's position in the pool's element type; the blocks of query
  // rows that share K/V tiles; and the blocks run on the pool's threads.
  void RotateAndStoreKv(int32_t il, int32_t n, const std::vector<float>& rope, float q_scale, GgmlType row_type);
  void PlanAttentionBlocks(int32_t n, int32_t window);
  void RunAttentionBlocks(int32_t il, int32_t window, GgmlType row_type, float softcap);

  std::shared_ptr<const LlamaModel> model_;
  ContextOptions options_;
  ThreadLanes lanes_;
  MatMulScratch matmul_scratch_;
  ForwardStats stats_;
  const std::atomic<bool>* abort_ = nullptr;
  int32_t cut_for_testing_ = -1;
  const uint16_t* gelu_f16_ = nullptr;  // GeGLU families: GELU at every f16 value

  // Per-token bookkeeping of the current step.
  std::vector<int32_t> ids_;         // [n]
  std::vector<KvSequence*> seq_of_;  // [n]
  std::vector<int32_t> pos_of_;      // [n]
  std::vector<int32_t> out_rows_;    // [n_rows] token index of each logits row
  std::vector<size_t> order_;        // [batch items] item indices by start layer
  std::vector<int32_t> first_row_;   // [batch items] each item's first row
  std::vector<int32_t> start_layer_; // [batch items] the layer each item starts at (its cut's, or 0)
  std::vector<int32_t> rows_from_;   // [n_layer] rows taking part in each layer (a prefix)

  // Activations; n = tokens in the step.
  CacheAlignedVector<float> x_;     // [n, n_embd] residual stream
  CacheAlignedVector<float> xn_;    // [n, n_embd] normalised input of a sub-layer
  CacheAlignedVector<float> q_;     // [n, q_dim]
  CacheAlignedVector<float> k_;     // [n, kv_dim]
  CacheAlignedVector<float> v_;     // [n, kv_dim]
  CacheAlignedVector<float> attn_;  // [n, q_dim]
  CacheAlignedVector<float> gate_;  // [n, n_ff]
  CacheAlignedVector<float> up_;    // [n, n_ff]
  CacheAlignedVector<float> tmp_;   // [n, n_embd] sub-layer output before the residual add
  std::vector<float> rope_;         // [n, rope_dim] (cos, sin) of each rotated pair per token
  std::vector<float> rope_swa_;     // [n, rope_dim] the same for sliding-window layers (empty without them)

  // Attention: query-row blocks sharing one sequence's KV head (see Attention),
  // and per thread the kernel's work floats and a K and a V row pointer per position.
  struct AttentionBlock {
    int32_t first_token;  // the sequence's first token in the step
    int32_t kv_head;
    int32_t row_begin, row_end;  // rows (token - first_token) * group + head within group
  };
  std::vector<AttentionBlock> attn_blocks_;
  CacheAlignedVector<float> attn_work_;  // [n_threads, AttentionWorkFloats(head_dim)]
  std::vector<const void*> attn_rows_;   // [n_threads, 2, n_ctx]
};

}  // namespace valet
