// What sets one GGUF architecture apart from another, as data. The forward
// pass is the same pre-norm decoder for every family valet runs; a family only
// chooses the rotation style, which tensors it stores fused, which optional
// tensors it requires (biases, per-head norms) and its metadata prefix. Adding
// a family is one row in kArchitectures (arch.cpp), not branches in the
// forward pass.
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

struct ArchSpec {
  std::string_view name;  // general.architecture, and the metadata key prefix
  RopeStyle rope = RopeStyle::kAdjacent;
  TensorLayout qkv = TensorLayout::kSeparate;
  TensorLayout gate_up = TensorLayout::kSeparate;
  bool qkv_bias = false;  // attn_{q,k,v}.bias required (optional for every family)
  bool qk_norm = false;   // attn_{q,k}_norm.weight: RMSNorm over each head before RoPE
};

// The spec of a supported architecture, or nullptr.
const ArchSpec* FindArch(std::string_view name);
// Every supported architecture, for messages and tests.
std::span<const ArchSpec> SupportedArchs();

}  // namespace valet
