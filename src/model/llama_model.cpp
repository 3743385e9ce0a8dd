#include "model/llama_model.h"

#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <thread>

#include "kernels/kernel_table.h"
#include "kernels/weight_pack.h"
#include "kv/checksum.h"

// CMake passes the project version (valet_version()'s string); a cache
// written by another version is rebuilt.
#ifndef VALET_VERSION_STRING
#define VALET_VERSION_STRING "unversioned"
#endif

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

std::string Fingerprint(const GgufFile& file) {
  const std::span<const uint8_t> bytes = file.bytes();
  const size_t header = file.data_offset();
  uint64_t h = Checksum64(bytes.first(header));
  constexpr size_t kPages = 16, kPage = 4096;
  const size_t data = bytes.size() - header;
  for (size_t i = 0; i < kPages && data > 0; ++i) {
    const size_t at = header + data / kPages * i;
    h = h * 0x100000001b3ULL ^ Checksum64(bytes.subspan(at, std::min(kPage, bytes.size() - at)));
  }
  char text[48];
  std::snprintf(text, sizeof(text), "gguf-%016llx-%llu", static_cast<unsigned long long>(h),
                static_cast<unsigned long long>(bytes.size()));
  return text;
}

// madvise over the whole pages of [p, p + n); the bytes it covered.
size_t Advise(const void* p, size_t n, int advice) {
  if (p == nullptr || n == 0) return 0;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(p) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(p) + n + page - 1) / page * page;
  return madvise(reinterpret_cast<void*>(begin), end - begin, advice) == 0 ? end - begin : 0;
}

// Whether anonymous pages can leave RAM at all (swap or zram). Without it,
// MADV_COLD on them frees nothing and still costs the next step: a 3b-shape
// decode step went from 44 to 974 ms after it on a swapless Linux VM
// (`valet bench-trim`).
bool HasSwap() {
  struct sysinfo info {};
  return sysinfo(&info) == 0 && info.totalswap > 0;
}

}  // namespace

// The matrices a load packs, in order, with their places in packed memory.
struct LlamaModel::PackPlan {
  std::vector<WeightMatrix*> targets;
  std::vector<PackedMatrixEntry> entries;  // entries[i].offset: targets[i]'s row groups
  size_t total = 0;
  size_t source_bytes = 0;  // the rows they replace in the model's mapping
};

Result<std::shared_ptr<const LlamaModel>> LlamaModel::Load(const std::string& path, const ModelLoadOptions& options) {
  VALET_ASSIGN_OR_RETURN(GgufFile file, GgufFile::Open(path));
  return Load(std::move(file), options);
}

Result<std::shared_ptr<const LlamaModel>> LlamaModel::Load(GgufFile file, const ModelLoadOptions& options) {
  std::shared_ptr<LlamaModel> model(new LlamaModel(std::move(file)));
  VALET_ASSIGN_OR_RETURN(model->config_, ModelConfig::FromGguf(model->file_));
  VALET_RETURN_IF_ERROR(model->BindTensors());
  model->fingerprint_ = Fingerprint(model->file_);
  VALET_RETURN_IF_ERROR(model->PackMatrices(options.weights_cache, options.observer));
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
  weight_memory_.file_backed = weight_bytes_;
  return Status::Ok();
}

Status LlamaModel::PackMatrices(const WeightsCacheOptions& cache, const LoadObserver& observer) {
  const KernelTable& table = ActiveKernels();
  PackPlan plan;
  auto consider = [&](WeightMatrix& m) {
    if (table[m.type].packed_gemm.fn == nullptr || !CanPack(m)) return;
    plan.targets.push_back(&m);
    const auto source = static_cast<uint64_t>(static_cast<const uint8_t*>(m.data) - file_.bytes().data());
    // Each matrix on a cache line: its row groups' vector loads never straddle two.
    plan.entries.push_back({source, m.type, m.n_in, m.n_out, plan.total, PackedBytes(m)});
    plan.total += RoundUpToCacheLine(PackedBytes(m));
    plan.source_bytes += m.row_bytes * static_cast<size_t>(m.n_out);
  };
  for (LlamaLayer& l : layers_) {
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) consider(*m);
  }
  // A tied output shares token_embd's rows, which the embedding lookup reads.
  if (!tied_output_) consider(output_);
  if (plan.total == 0) return Status::Ok();
  std::optional<WeightsCacheLocation> at;
  const WeightsCacheKey key{VALET_VERSION_STRING, fingerprint_, kPackFormat};
  if (!cache.path.empty()) {
    Result<WeightsCacheLocation> located = LocateWeightsCache(cache.path, key);
    if (located.ok()) {
      at = std::move(located).value();
      load_report_.cache_path = at->dir.PathOf(at->name);
      Result<WeightsCache> mapped = WeightsCache::Map(at->dir, at->name, key, plan.entries);
      if (mapped.ok()) {
        ViewPacked(plan, std::move(mapped).value());
        return Status::Ok();
      }
      if (mapped.status().code() != StatusCode::kNotFound) load_report_.cache_note = mapped.status().message();
    } else {
      load_report_.cache_note = located.status().message();
    }
  }
  packed_ = MakeCacheAlignedBytes(plan.total);
  weight_memory_ = {weight_bytes_ - plan.source_bytes, plan.total};
  observer.Report(LoadStage::kPack, 0, plan.total);
  // Matrices pack independently into their own ranges: one per thread at a
  // time, so a large model's load takes a fraction of the single-core time.
  const size_t n_threads = std::min<size_t>(plan.targets.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<uint64_t> packed_bytes{0};
  auto pack_some = [&](size_t first) {
    for (size_t i = first; i < plan.targets.size() && !observer.cancelled(); i += n_threads) {
      const WeightMatrix rows = *plan.targets[i];
      *plan.targets[i] = PackWeights(rows, packed_.get() + plan.entries[i].offset);
      // The original bytes: a K-quant's row groups are larger than its rows.
      ReleasePages(rows.data, rows.row_bytes * static_cast<size_t>(rows.n_out));
      const uint64_t done = packed_bytes += plan.entries[i].bytes;
      // Reported from the loading thread only, as its callers are promised.
      if (first == 0 && done < plan.total) observer.Report(LoadStage::kPack, done, plan.total);
    }
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < n_threads; ++t) workers.emplace_back(pack_some, t);
  pack_some(0);
  for (std::thread& w : workers) w.join();
  if (observer.cancelled()) return Aborted("the load of " + file_.path() + " was cancelled");
  observer.Report(LoadStage::kPack, plan.total, plan.total);
  load_report_.matrices_packed = static_cast<int32_t>(plan.targets.size());
  if (at) WriteWeightsCache(*at, key, plan, cache, observer);
  return observer.cancelled() ? Aborted("the load of " + file_.path() + " was cancelled") : Status::Ok();
}

void LlamaModel::WriteWeightsCache(const WeightsCacheLocation& at, const WeightsCacheKey& key, const PackPlan& plan,
                                   const WeightsCacheOptions& options, const LoadObserver& observer) {
  if (observer.cancelled()) return;
  const uint64_t bytes = WeightsCache::FileBytes(key, plan.entries);
  if (!MakeRoomForWeightsCache(at, bytes, options.budget_bytes)) {
    load_report_.cache_note = "a weights cache of " + std::to_string(bytes) + " bytes does not fit the budget of " +
                              std::to_string(options.budget_bytes) + " in " + at.dir.path();
    return;
  }
  observer.Report(LoadStage::kWriteCache, 0, bytes);
  Status written = WeightsCache::Write(at.dir, at.name, key, plan.entries,
                                       reinterpret_cast<const uint8_t*>(packed_.get()), options.before_publish);
  Result<WeightsCache> mapped = written.ok() ? WeightsCache::Map(at.dir, at.name, key, plan.entries)
                                             : Result<WeightsCache>(written);
  if (!mapped.ok()) {
    load_report_.cache_note = mapped.status().message();
    return;
  }
  // The same bytes, now file-backed: the anonymous copy goes.
  load_report_.cache_written = true;
  ViewPacked(plan, std::move(mapped).value());
  packed_.reset();
}

size_t LlamaModel::AdviseWeights(WeightsAdvice advice) const {
  const int file_advice = advice == WeightsAdvice::kPageOut ? MADV_PAGEOUT : MADV_COLD;
  const std::span<const uint8_t> model = file_.bytes();
  size_t advised = Advise(model.data() + file_.data_offset(), model.size() - file_.data_offset(), file_advice);
  if (weights_cache_) advised += Advise(weights_cache_->data(), weights_cache_->data_bytes(), file_advice);
  if (packed_ && advice == WeightsAdvice::kCold && HasSwap()) {
    advised += Advise(packed_.get(), weight_memory_.anonymous, MADV_COLD);
  }
  return advised;
}

void LlamaModel::ViewPacked(const PackPlan& plan, WeightsCache cache) {
  for (size_t i = 0; i < plan.targets.size(); ++i) {
    WeightMatrix& m = *plan.targets[i];
    // Views of rows (not yet packed) give their file pages back; packed ones only move.
    if (m.layout == WeightLayout::kRows) ReleasePages(m.data, m.row_bytes * static_cast<size_t>(m.n_out));
    m = PackedView(m, cache.data() + plan.entries[i].offset);
  }
  weights_cache_ = std::move(cache);
  weight_memory_ = {weight_bytes_ - plan.source_bytes + plan.total, 0};
  load_report_.matrices_mapped = static_cast<int32_t>(plan.targets.size());
}

}  // namespace valet
