#include "model/model_config.h"

#include <limits>

#include "gguf/gguf_file.h"

namespace valet {
namespace {

// Reads `<arch>.<suffix>` as a positive int32; `fallback` < 0 makes it required.
Result<int32_t> ReadDim(const GgufFile& file, const std::string& key, int64_t fallback = -1) {
  if (file.Find(key) == nullptr) {
    if (fallback >= 0) return static_cast<int32_t>(fallback);
    return NotFound(file.path() + ": missing metadata key '" + key + "'");
  }
  VALET_ASSIGN_OR_RETURN(uint64_t v, file.GetUint(key));
  if (v == 0 || v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return Corrupt(file.path() + ": metadata '" + key + "' = " + std::to_string(v) + " is out of range");
  }
  return static_cast<int32_t>(v);
}

Result<float> ReadFloat(const GgufFile& file, const std::string& key, float fallback) {
  if (file.Find(key) == nullptr) return fallback;
  VALET_ASSIGN_OR_RETURN(double v, file.GetFloat(key));
  if (!(v > 0.0) || v > 1e12) {
    return Corrupt(file.path() + ": metadata '" + key + "' = " + std::to_string(v) + " is out of range");
  }
  return static_cast<float>(v);
}

}  // namespace

Result<ModelConfig> ModelConfig::FromGguf(const GgufFile& file) {
  ModelConfig c;
  VALET_ASSIGN_OR_RETURN(std::string_view arch, file.GetString("general.architecture"));
  c.architecture = std::string(arch);
  c.arch = FindArch(c.architecture);
  if (c.arch == nullptr) {
    std::string known;
    for (const ArchSpec& a : SupportedArchs()) known += (known.empty() ? "" : ", ") + std::string(a.name);
    return Unsupported(file.path() + ": unknown architecture '" + c.architecture + "' (valet runs " +
                       known + ")");
  }
  c.rope_style = c.arch->rope;
  if (file.Find("general.name") != nullptr) {
    VALET_ASSIGN_OR_RETURN(std::string_view name, file.GetString("general.name"));
    c.name = std::string(name);
  }
  const std::string p = c.architecture + ".";
  VALET_ASSIGN_OR_RETURN(c.n_embd, ReadDim(file, p + "embedding_length"));
  VALET_ASSIGN_OR_RETURN(c.n_layer, ReadDim(file, p + "block_count"));
  VALET_ASSIGN_OR_RETURN(c.n_ff, ReadDim(file, p + "feed_forward_length"));
  VALET_ASSIGN_OR_RETURN(c.n_head, ReadDim(file, p + "attention.head_count"));
  VALET_ASSIGN_OR_RETURN(c.n_head_kv, ReadDim(file, p + "attention.head_count_kv", c.n_head));
  VALET_ASSIGN_OR_RETURN(c.n_ctx_train, ReadDim(file, p + "context_length", 2048));
  if (c.n_head % c.n_head_kv != 0) {
    return Corrupt(file.path() + ": " + std::to_string(c.n_head) + " heads are not a multiple of " +
                   std::to_string(c.n_head_kv) + " KV heads");
  }
  const bool head_dim_given = file.Find(p + "attention.key_length") != nullptr;
  if (!head_dim_given && c.n_embd % c.n_head != 0) {
    return Corrupt(file.path() + ": embedding length " + std::to_string(c.n_embd) +
                   " is not a multiple of the " + std::to_string(c.n_head) + " heads");
  }
  VALET_ASSIGN_OR_RETURN(c.head_dim, ReadDim(file, p + "attention.key_length", c.n_embd / c.n_head));
  VALET_ASSIGN_OR_RETURN(const int32_t value_dim, ReadDim(file, p + "attention.value_length", c.head_dim));
  if (value_dim != c.head_dim) {
    return Unsupported(file.path() + ": value head size " + std::to_string(value_dim) +
                       " differs from the key head size " + std::to_string(c.head_dim));
  }
  VALET_ASSIGN_OR_RETURN(c.rope_dim, ReadDim(file, p + "rope.dimension_count", c.head_dim));
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    return Corrupt(file.path() + ": rope dimension " + std::to_string(c.rope_dim) +
                   " must be even and at most the head size " + std::to_string(c.head_dim));
  }
  VALET_ASSIGN_OR_RETURN(c.rope_base, ReadFloat(file, p + "rope.freq_base", 10000.0f));
  VALET_ASSIGN_OR_RETURN(c.rope_orig_ctx, ReadDim(file, p + "rope.scaling.original_context_length", c.n_ctx_train));
  VALET_ASSIGN_OR_RETURN(c.rope_attn_factor, ReadFloat(file, p + "rope.scaling.attn_factor", 1.0f));
  VALET_ASSIGN_OR_RETURN(c.rms_eps, ReadFloat(file, p + "attention.layer_norm_rms_epsilon", 1e-5f));
  // As llama.cpp reads it: any scaling factor divides the positions.
  VALET_ASSIGN_OR_RETURN(const float rope_factor, ReadFloat(file, p + "rope.scaling.factor", 1.0f));
  c.rope_freq_scale = 1.0f / rope_factor;
  const bool embd_scaled = c.n_layer == c.arch->embd_scaled_attn_layers;
  c.attn_scale_dim = embd_scaled ? c.n_embd / c.n_head : c.head_dim;
  if (c.arch->swa_period > 0) {
    VALET_ASSIGN_OR_RETURN(c.n_swa, ReadDim(file, p + "attention.sliding_window",
                                            c.arch->default_window > 0 ? c.arch->default_window : -1));
    const bool own_rope = c.arch->swa_rope_base > 0.0f;
    c.rope_base_swa = own_rope ? c.arch->swa_rope_base : c.rope_base;
    c.rope_freq_scale_swa = own_rope ? 1.0f : c.rope_freq_scale;
  }
  if (c.arch->attn_softcap > 0.0f) {
    VALET_ASSIGN_OR_RETURN(c.attn_softcap, ReadFloat(file, p + "attn_logit_softcapping", c.arch->attn_softcap));
  }
  if (c.arch->final_softcap > 0.0f) {
    VALET_ASSIGN_OR_RETURN(c.final_softcap, ReadFloat(file, p + "final_logit_softcapping", c.arch->final_softcap));
  }
  return c;
}

int64_t ModelConfig::n_params() const {
  const int64_t attn = int64_t{n_embd} * q_dim() * 2 + int64_t{n_embd} * kv_dim() * 2;
  const int64_t ffn = int64_t{n_embd} * n_ff * 3;
  return n_layer * (attn + ffn);
}

}  // namespace valet
