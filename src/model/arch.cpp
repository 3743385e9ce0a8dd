#include "model/arch.h"

namespace valet {
namespace {

constexpr ArchSpec kArchitectures[] = {
    // Llama 1–3 (and files that only reuse its layout: Mistral, SmolLM, TinyLlama).
    // Llama 3.x adds rope_freqs.weight, which any family may carry.
    {.name = "llama"},
    // Qwen2 / Qwen2.5: biases on Q, K and V.
    {.name = "qwen2", .rope = RopeStyle::kNeox, .qkv_bias = true},
    // Qwen3: RMSNorm of each Q and K head, head size set by attention.key_length.
    {.name = "qwen3", .rope = RopeStyle::kNeox, .qk_norm = true},
    // Phi-3 / Phi-3.5: fused QKV and fused gate+up.
    {.name = "phi3",
     .rope = RopeStyle::kNeox,
     .qkv = TensorLayout::kFused,
     .gate_up = TensorLayout::kFused},
    // Gemma 2: GeGLU, sandwich norms, scaled embeddings, windowed and global
    // layers alternating, soft-capped attention scores and logits.
    {.name = "gemma2",
     .rope = RopeStyle::kNeox,
     .activation = FfnActivation::kGeluTanh,
     .embd_scale = true,
     .post_norms = true,
     .swa_period = 2,
     .default_window = 4096,
     .attn_softcap = 50.0f,
     .final_softcap = 30.0f,
     .embd_scaled_attn_layers = 46},
    // Gemma 3 (text): GeGLU, sandwich norms, per-head Q/K norms, scaled
    // embeddings, five windowed layers (RoPE base 10,000) to one global.
    {.name = "gemma3",
     .rope = RopeStyle::kNeox,
     .qk_norm = true,
     .activation = FfnActivation::kGeluTanh,
     .embd_scale = true,
     .post_norms = true,
     .swa_period = 6,
     .swa_rope_base = 10000.0f,
     .embd_scaled_attn_layers = 62},
};

}  // namespace

const ArchSpec* FindArch(std::string_view name) {
  for (const ArchSpec& a : kArchitectures) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::span<const ArchSpec> SupportedArchs() { return kArchitectures; }

}  // namespace valet
