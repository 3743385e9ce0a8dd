#include "model/llama_model.h"

#include "kernels/kernel_table.h"

namespace valet {
namespace {

std::string Shape(const GgufTensorInfo& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

}  // namespace

Result<std::shared_ptr<const LlamaModel>> LlamaModel::Load(const std::string& path) {
  VALET_ASSIGN_OR_RETURN(GgufFile file, GgufFile::Open(path));
  std::shared_ptr<LlamaModel> model(new LlamaModel(std::move(file)));
  VALET_ASSIGN_OR_RETURN(model->config_, ModelConfig::FromGguf(model->file_));
  VALET_RETURN_IF_ERROR(model->BindTensors());
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
  if (file_.FindTensor("rope_freqs.weight") != nullptr) {
    return Unsupported(file_.path() + ": per-dimension RoPE frequencies (rope_freqs.weight) are not supported");
  }
  const int64_t q_dim = int64_t{c.n_head} * c.head_dim;
  const int64_t kv_dim = int64_t{c.n_head_kv} * c.head_dim;
  layers_.resize(c.n_layer);
  for (int32_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    LlamaLayer& l = layers_[i];
    VALET_ASSIGN_OR_RETURN(l.attn_norm, Vector(b + "attn_norm.weight", c.n_embd));
    VALET_ASSIGN_OR_RETURN(l.wq, Matrix(b + "attn_q.weight", c.n_embd, q_dim));
    VALET_ASSIGN_OR_RETURN(l.wk, Matrix(b + "attn_k.weight", c.n_embd, kv_dim));
    VALET_ASSIGN_OR_RETURN(l.wv, Matrix(b + "attn_v.weight", c.n_embd, kv_dim));
    VALET_ASSIGN_OR_RETURN(l.wo, Matrix(b + "attn_output.weight", q_dim, c.n_embd));
    VALET_ASSIGN_OR_RETURN(l.ffn_norm, Vector(b + "ffn_norm.weight", c.n_embd));
    VALET_ASSIGN_OR_RETURN(l.w_gate, Matrix(b + "ffn_gate.weight", c.n_embd, c.n_ff));
    VALET_ASSIGN_OR_RETURN(l.w_up, Matrix(b + "ffn_up.weight", c.n_embd, c.n_ff));
    VALET_ASSIGN_OR_RETURN(l.w_down, Matrix(b + "ffn_down.weight", c.n_ff, c.n_embd));
  }
  for (const GgufTensorInfo& t : file_.tensors()) weight_bytes_ += t.nbytes;
  return Status::Ok();
}

}  // namespace valet
