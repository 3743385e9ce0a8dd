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
