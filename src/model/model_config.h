// Hyper-parameters of a Llama-family model, read from GGUF metadata.
#pragma once

#include <cstdint>
#include <string>

#include "model/arch.h"
#include "valet/status.h"

namespace valet {

class GgufFile;

struct ModelConfig {
  std::string architecture;  // general.architecture: "llama", "qwen2", "qwen3", "phi3", "gemma3"
  const ArchSpec* arch = nullptr;  // the family's description; never null after FromGguf
  std::string name;          // general.name, if any
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;   // context length the model was trained for
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;     // < n_head for grouped-query attention
  int32_t head_dim = 0;      // attention.key_length; may differ from n_embd / n_head (Qwen3)
  int32_t n_ff = 0;
  int32_t rope_dim = 0;      // leading dims of each head that RoPE rotates
  RopeStyle rope_style = RopeStyle::kAdjacent;
  // LongRoPE (Phi-3.5): contexts up to this length use rope_factors_short,
  // longer ones rope_factors_long; cos/sin are scaled by rope_attn_factor.
  int32_t rope_orig_ctx = 0;  // rope.scaling.original_context_length; default n_ctx_train
  float rope_attn_factor = 1.0f;
  float rope_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // positions are multiplied by it: 1 / rope.scaling.factor
  float rms_eps = 1e-5f;
  // q·k is scaled by 1/sqrt(attn_scale_dim) before the softmax: the key
  // length, or n_embd / n_head (ArchSpec::embd_scaled_attn_layers).
  int32_t attn_scale_dim = 0;
  // Sliding-window layers (ArchSpec::swa_period) attend to the last n_swa
  // positions, their own included, with their own RoPE base and position
  // scale; n_swa is 0 when the family has none.
  int32_t n_swa = 0;
  float rope_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;
  // cap·tanh(x / cap) of the attention scores (natural units) and of the
  // output logits; 0: none (ArchSpec::attn_softcap, final_softcap).
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;

  // Validates the metadata of `file`; errors name the file and the key.
  static Result<ModelConfig> FromGguf(const GgufFile& file);
  int32_t q_dim() const { return n_head * head_dim; }      // width of all query heads
  int32_t kv_dim() const { return n_head_kv * head_dim; }  // width of all key (or value) heads
  bool sliding(int32_t layer) const {
    const int32_t period = arch->swa_period;
    return n_swa > 0 && layer % period < period - 1;
  }
  // Parameters of the attention/FFN weights (no embeddings), for reports.
  int64_t n_params() const;
};

}  // namespace valet
