// What sets one GGUF architecture apart from another, as data. The forward
// pass is the same pre-norm decoder for every family valet runs; a family only
// chooses the rotation style, which tensors it stores fused, which optional
// tensors it requires (biases, per-head and post-block norms), the FFN's gate
// activation, embedding scaling, which layers attend through a sliding window,
// and its metadata prefix. Adding a family is one row in kArchitectures
// (arch.cpp), not branches in the forward pass.
#pragma once

#include <span>
#include <string_view>

namespace valet {

// How RoPE pairs the dims of a head.
enum class RopeStyle {
  kAdjacent,  // pairs (2i, 2i+1): GGUF `llama` (the converter permuted Q/K rows for it)
  kNeox,      // pairs (i, i + rope_dim/2): GPT-NeoX style, Qwen and Phi-3
};

// Where Q, K and V (and the FFN gate and up projections) are stored.
enum class TensorLayout {
  kSeparate,  // attn_q/attn_k/attn_v, ffn_gate/ffn_up
  kFused,     // attn_qkv rows [Q | K | V]; ffn_up rows [gate | up] (2·n_ff)
};

// The FFN's gate activation: act(x·gateᵀ) * (x·upᵀ).
enum class FfnActivation {
  kSilu,      // SwiGLU
  kGeluTanh,  // GeGLU with the tanh approximation of GELU (Gemma)
};

struct ArchSpec {
  std::string_view name;  // general.architecture, and the metadata key prefix
  RopeStyle rope = RopeStyle::kAdjacent;
  TensorLayout qkv = TensorLayout::kSeparate;
  TensorLayout gate_up = TensorLayout::kSeparate;
  bool qkv_bias = false;  // attn_{q,k,v}.bias required (optional for every family)
  bool qk_norm = false;   // attn_{q,k}_norm.weight: RMSNorm over each head before RoPE
  FfnActivation activation = FfnActivation::kSilu;
  bool embd_scale = false;  // token embeddings are multiplied by sqrt(n_embd)
  // post_attention_norm / post_ffw_norm.weight: RMSNorm of each sub-block's
  // output before it joins the residual stream.
  bool post_norms = false;
  // Sliding-window attention (attention.sliding_window keys): every layer
  // but each swa_period-th one (layers swa_period-1, 2·swa_period-1, ...
  // attend to the whole context); 0: no windowed layers.
  int32_t swa_period = 0;
  int32_t default_window = 0;  // when the file has no attention.sliding_window; 0: it must
  // RoPE base of the windowed layers, which then ignore rope.scaling.factor;
  // 0: they rotate as the global layers do.
  float swa_rope_base = 0.0f;
  // Logit soft-capping, cap·tanh(x / cap), of the attention scores and of the
  // output logits, with these caps when the file names none
  // (attn_logit_softcapping, final_logit_softcapping); 0: the family has none.
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  // The attention scale is 1/sqrt(key length), except in models of this
  // many layers (Gemma's 27B, whose query_pre_attn_scalar is n_embd/n_head,
  // a value GGUF does not store), where it is 1/sqrt(n_embd / n_head).
  int32_t embd_scaled_attn_layers = 0;
};

// The spec of a supported architecture, or nullptr.
const ArchSpec* FindArch(std::string_view name);
// Every supported architecture, for messages and tests.
std::span<const ArchSpec> SupportedArchs();

}  // namespace valet
