// A loaded Llama-family model: configuration plus weight views into the
// memory-mapped GGUF file. Immutable after Load, so any number of contexts and
// threads may share one instance.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/cache_aligned.h"
#include "gguf/gguf_file.h"
#include "kernels/matmul.h"
#include "model/model_config.h"
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

class LlamaModel {
 public:
  static Result<std::shared_ptr<const LlamaModel>> Load(const std::string& path);
  static Result<std::shared_ptr<const LlamaModel>> Load(GgufFile file);

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

 private:
  explicit LlamaModel(GgufFile file) : file_(std::move(file)) {}
  Status BindTensors();
  Result<WeightMatrix> Matrix(const std::string& name, int64_t n_in, int64_t n_out) const;
  Result<const float*> Vector(const std::string& name, int64_t n) const;
  // Vector() when the file has the tensor, nullptr otherwise (or when `required`, an error).
  Result<const float*> OptionalVector(const std::string& name, int64_t n, bool required) const;
  Status BindAttention(const std::string& prefix, LlamaLayer& l) const;
  Status BindFeedForward(const std::string& prefix, LlamaLayer& l) const;
  // Repacks the matrices the active kernels multiply as row groups into packed_.
  void PackMatrices();

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
  CacheAlignedBytes packed_;  // the row-group matrices, one after another
  size_t weight_bytes_ = 0;
};

}  // namespace valet
