#include "model/llama_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <thread>

#include "kernels/kernel_table.h"
#include "kernels/weight_pack.h"

namespace valet {
namespace {

std::string Shape(const GgufTensorInfo& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

// Gives the whole pages inside [p, p + n) of the model's bytes back to the
// kernel: a repacked tensor's bytes are never read again, and touching them
// would fault them back in from the file (or, for a model read into
// anonymous memory, as zeros: so [p, p + n) must be the tensor's own bytes).
void ReleasePages(const void* p, size_t n) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

Result<std::shared_ptr<const LlamaModel>> LlamaModel::Load(const std::string& path) {
  VALET_ASSIGN_OR_RETURN(GgufFile file, GgufFile::Open(path));
  return Load(std::move(file));
}

Result<std::shared_ptr<const LlamaModel>> LlamaModel::Load(GgufFile file) {
  std::shared_ptr<LlamaModel> model(new LlamaModel(std::move(file)));
  VALET_ASSIGN_OR_RETURN(model->config_, ModelConfig::FromGguf(model->file_));
  VALET_RETURN_IF_ERROR(model->BindTensors());
  model->PackMatrices();
  return std::shared_ptr<const LlamaModel>(std::move(model));
}

Result<WeightMatrix> LlamaModel::Matrix(const std::string& name, int64_t n_in, int64_t n_out) const {
  const GgufTensorInfo* t = file_.FindTensor(name);
  if (t == nullptr) return NotFound(file_.path() + ": missing tensor '" + name + "'");
  if (t->n_dims != 2 || t->ne[0] != n_in || t->ne[1] != n_out) {
    return Corrupt(file_.path() + ": tensor '" + name + "' has shape " + Shape(*t) + ", expected [" +
                   std::to_string(n_in) + ", " + std::to_string(n_out) + "]");
  }
  if (!ActiveKernels().SupportsWeight(t->type)) {
    return Unsupported(file_.path() + ": tensor '" + name + "' has type " + GgmlTypeName(t->type) +
                       ", which valet has no kernels for");
  }
  return WeightMatrix{t->type, n_in, n_out, t->data, GgmlRowSize(t->type, n_in)};
}

Result<const float*> LlamaModel::Vector(const std::string& name, int64_t n) const {
  const GgufTensorInfo* t = file_.FindTensor(name);
  if (t == nullptr) return NotFound(file_.path() + ": missing tensor '" + name + "'");
  if (t->n_dims != 1 || t->ne[0] != n || t->type != GgmlType::kF32) {
    return Corrupt(file_.path() + ": tensor '" + name + "' must be f32 of shape [" + std::to_string(n) +
                   "], found " + GgmlTypeName(t->type) + " " + Shape(*t));
  }
  // GGUF aligns tensor data (>= 32 bytes), so an f32 view is aligned.
  return reinterpret_cast<const float*>(t->data);
}

Result<const float*> LlamaModel::OptionalVector(const std::string& name, int64_t n, bool required) const {
  if (!required && file_.FindTensor(name) == nullptr) return static_cast<const float*>(nullptr);
  return Vector(name, n);
}

Status LlamaModel::BindAttention(const std::string& b, LlamaLayer& l) const {
  const ModelConfig& c = config_;
  const ArchSpec& arch = *c.arch;
  VALET_ASSIGN_OR_RETURN(l.attn_norm, Vector(b + "attn_norm.weight", c.n_embd));
  // A fused family may still ship separate tensors (older conversions); use what is there.
  if (arch.qkv == TensorLayout::kFused && file_.FindTensor(b + "attn_qkv.weight") != nullptr) {
    VALET_ASSIGN_OR_RETURN(WeightMatrix qkv, Matrix(b + "attn_qkv.weight", c.n_embd, c.q_dim() + 2 * c.kv_dim()));
    l.wq = qkv.Rows(0, c.q_dim());
    l.wk = qkv.Rows(c.q_dim(), c.kv_dim());
    l.wv = qkv.Rows(c.q_dim() + c.kv_dim(), c.kv_dim());
  } else {
    VALET_ASSIGN_OR_RETURN(l.wq, Matrix(b + "attn_q.weight", c.n_embd, c.q_dim()));
    VALET_ASSIGN_OR_RETURN(l.wk, Matrix(b + "attn_k.weight", c.n_embd, c.kv_dim()));
    VALET_ASSIGN_OR_RETURN(l.wv, Matrix(b + "attn_v.weight", c.n_embd, c.kv_dim()));
  }
  VALET_ASSIGN_OR_RETURN(l.bq, OptionalVector(b + "attn_q.bias", c.q_dim(), arch.qkv_bias));
  VALET_ASSIGN_OR_RETURN(l.bk, OptionalVector(b + "attn_k.bias", c.kv_dim(), arch.qkv_bias));
  VALET_ASSIGN_OR_RETURN(l.bv, OptionalVector(b + "attn_v.bias", c.kv_dim(), arch.qkv_bias));
  VALET_ASSIGN_OR_RETURN(l.q_norm, OptionalVector(b + "attn_q_norm.weight", c.head_dim, arch.qk_norm));
  VALET_ASSIGN_OR_RETURN(l.k_norm, OptionalVector(b + "attn_k_norm.weight", c.head_dim, arch.qk_norm));
  VALET_ASSIGN_OR_RETURN(l.wo, Matrix(b + "attn_output.weight", c.q_dim(), c.n_embd));
  VALET_ASSIGN_OR_RETURN(l.post_attn_norm, OptionalVector(b + "post_attention_norm.weight", c.n_embd, arch.post_norms));
  return Status::Ok();
}

Status LlamaModel::BindFeedForward(const std::string& b, LlamaLayer& l) const {
  const ModelConfig& c = config_;
  VALET_ASSIGN_OR_RETURN(l.ffn_norm, Vector(b + "ffn_norm.weight", c.n_embd));
  if (c.arch->gate_up == TensorLayout::kFused && file_.FindTensor(b + "ffn_gate.weight") == nullptr) {
    VALET_ASSIGN_OR_RETURN(WeightMatrix gate_up, Matrix(b + "ffn_up.weight", c.n_embd, 2 * int64_t{c.n_ff}));
    l.w_gate = gate_up.Rows(0, c.n_ff);
    l.w_up = gate_up.Rows(c.n_ff, c.n_ff);
  } else {
    VALET_ASSIGN_OR_RETURN(l.w_gate, Matrix(b + "ffn_gate.weight", c.n_embd, c.n_ff));
    VALET_ASSIGN_OR_RETURN(l.w_up, Matrix(b + "ffn_up.weight", c.n_embd, c.n_ff));
  }
  VALET_ASSIGN_OR_RETURN(l.w_down, Matrix(b + "ffn_down.weight", c.n_ff, c.n_embd));
  VALET_ASSIGN_OR_RETURN(l.post_ffn_norm, OptionalVector(b + "post_ffw_norm.weight", c.n_embd, c.arch->post_norms));
  return Status::Ok();
}

Status LlamaModel::BindTensors() {
  ModelConfig& c = config_;
  const GgufTensorInfo* embd = file_.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound(file_.path() + ": missing tensor 'token_embd.weight'");
  if (embd->n_dims != 2 || embd->ne[1] <= 0 || embd->ne[1] > INT32_MAX) {
    return Corrupt(file_.path() + ": tensor 'token_embd.weight' has shape " + Shape(*embd));
  }
  c.n_vocab = static_cast<int32_t>(embd->ne[1]);
  VALET_ASSIGN_OR_RETURN(token_embd_, Matrix("token_embd.weight", c.n_embd, c.n_vocab));
  VALET_ASSIGN_OR_RETURN(output_norm_, Vector("output_norm.weight", c.n_embd));
  tied_output_ = file_.FindTensor("output.weight") == nullptr;
  if (tied_output_) {
    output_ = token_embd_;
  } else {
    VALET_ASSIGN_OR_RETURN(output_, Matrix("output.weight", c.n_embd, c.n_vocab));
  }
  VALET_ASSIGN_OR_RETURN(rope_freqs_, OptionalVector("rope_freqs.weight", c.rope_dim / 2, false));
  VALET_ASSIGN_OR_RETURN(rope_long_, OptionalVector("rope_factors_long.weight", c.rope_dim / 2, false));
  VALET_ASSIGN_OR_RETURN(rope_short_, OptionalVector("rope_factors_short.weight", c.rope_dim / 2, false));
  if ((rope_long_ == nullptr) != (rope_short_ == nullptr)) {
    return Corrupt(file_.path() + ": LongRoPE needs both rope_factors_long and rope_factors_short");
  }
  layers_.resize(c.n_layer);
  for (int32_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    VALET_RETURN_IF_ERROR(BindAttention(b, layers_[i]));
    VALET_RETURN_IF_ERROR(BindFeedForward(b, layers_[i]));
  }
  for (const GgufTensorInfo& t : file_.tensors()) weight_bytes_ += t.nbytes;
  return Status::Ok();
}

void LlamaModel::PackMatrices() {
  const KernelTable& table = ActiveKernels();
  std::vector<WeightMatrix*> targets;
  auto consider = [&](WeightMatrix& m) {
    if (table[m.type].packed_gemm.fn != nullptr && CanPack(m)) targets.push_back(&m);
  };
  for (LlamaLayer& l : layers_) {
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) consider(*m);
  }
  // A tied output shares token_embd's rows, which the embedding lookup reads.
  if (!tied_output_) consider(output_);
  // Each matrix on a cache line: its row groups' vector loads never straddle two.
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const WeightMatrix* m : targets) {
    offsets.push_back(total);
    total += RoundUpToCacheLine(PackedBytes(*m));
  }
  if (total == 0) return;
  packed_ = MakeCacheAlignedBytes(total);
  // Matrices pack independently into their own ranges: one per thread at a
  // time, so a large model's load takes a fraction of the single-core time.
  const size_t n_threads = std::min<size_t>(targets.size(), std::max(1u, std::thread::hardware_concurrency()));
  auto pack_some = [&](size_t first) {
    for (size_t i = first; i < targets.size(); i += n_threads) {
      const WeightMatrix rows = *targets[i];
      *targets[i] = PackWeights(rows, packed_.get() + offsets[i]);
      // The original bytes: a K-quant's row groups are larger than its rows.
      ReleasePages(rows.data, rows.row_bytes * static_cast<size_t>(rows.n_out));
    }
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < n_threads; ++t) workers.emplace_back(pack_some, t);
  pack_some(0);
  for (std::thread& w : workers) w.join();
}

}  // namespace valet
