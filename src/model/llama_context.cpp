#include "model/llama_context.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <unordered_set>
#include <utility>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"

namespace valet {
namespace {

// Up to this many tokens in a step, element-wise work runs on the calling
// thread alone: a decode token's norm or residual add takes less time than
// waking the pool and meeting at its barrier. Every element is computed the
// same way on any thread, so this changes no result.
constexpr int32_t kInlineTokens = 4;

void Parallel(ThreadPool& pool, bool inline_run, const std::function<void(int, int)>& fn) {
  if (inline_run) {
    fn(0, 1);
  } else {
    pool.Run(fn);
  }
}

// R rows from x to y: y = (x / rms(x)) * w. Each row's sum of squares is one
// chain of double additions in element order, as llama.cpp accumulates it
// (long rows do not drift); a chain waits on every addition, so R rows'
// chains advance side by side.
template <int R>
void RmsNormRows(const float* x, const float* w, float* y, int32_t dim, float eps) {
  double sum[R] = {};
  for (int32_t i = 0; i < dim; ++i) {
    for (int k = 0; k < R; ++k) sum[k] += static_cast<double>(x[k * dim + i] * x[k * dim + i]);
  }
  for (int k = 0; k < R; ++k) {
    const float mean = static_cast<float>(sum[k] / dim);
    const float scale = 1.0f / std::sqrt(mean + eps);
    const float* xr = x + k * dim;
    float* yr = y + k * dim;
    for (int32_t i = 0; i < dim; ++i) yr[i] = (xr[i] * scale) * w[i];
  }
}

void RmsNorm(const float* x, const float* w, float* y, int32_t n_rows, int32_t dim, float eps,
             ThreadPool& pool, bool inline_run) {
  constexpr int kRows = 4;
  Parallel(pool, inline_run, [&](int ith, int nth) {
    const Range r = SplitRange(n_rows, ith, nth);
    int64_t row = r.begin;
    for (; row + kRows <= r.end; row += kRows) RmsNormRows<kRows>(x + row * dim, w, y + row * dim, dim, eps);
    for (; row < r.end; ++row) RmsNormRows<1>(x + row * dim, w, y + row * dim, dim, eps);
  });
}

void AddInPlace(float* x, const float* y, int64_t n, ThreadPool& pool, bool inline_run) {
  Parallel(pool, inline_run, [&](int ith, int nth) {
    Range r = SplitRange(n, ith, nth);
    for (int64_t i = r.begin; i < r.end; ++i) x[i] += y[i];
  });
}

// GELU (tanh approximation) at every f16 value, rounded to f16: ggml's CPU
// GeGLU looks the gate up here after rounding it to f16, and valet agrees
// with its numerics rather than with the exact function.
const uint16_t* GeluF16Table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(1 << 16);
    constexpr float kCoef = 0.044715f;
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    for (uint32_t i = 0; i < t.size(); ++i) {
      const float x = Fp16ToFp32(static_cast<uint16_t>(i));
      t[i] = Fp32ToFp16(0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x))));
    }
    return t;
  }();
  return table.data();
}

// gate = act(gate) * up, element-wise, over a block of tokens and columns:
// MatMulMany's epilogue after the gate and up products. SwiGLU runs the
// kernel table's; GeGLU looks GELU up in GeluF16Table() (outside [-10, 10] it
// is 0 or the identity).
struct GatedRows {
  float* gate;  // [n_tokens, n_ff]
  const float* up;
  int64_t n_ff;
  swiglu_fn swiglu;            // SwiGLU families
  const uint16_t* gelu_f16;    // GeGLU families

  static void SwiGlu(void* self, Range tokens, Range cols) {
    const auto& s = *static_cast<const GatedRows*>(self);
    for (int64_t t = tokens.begin; t < tokens.end; ++t)
      s.swiglu(cols.end - cols.begin, s.gate + t * s.n_ff + cols.begin, s.up + t * s.n_ff + cols.begin);
  }
  static void GeGlu(void* self, Range tokens, Range cols) {
    const auto& s = *static_cast<const GatedRows*>(self);
    for (int64_t t = tokens.begin; t < tokens.end; ++t) {
      float* gate = s.gate + t * s.n_ff;
      const float* up = s.up + t * s.n_ff;
      for (int64_t i = cols.begin; i < cols.end; ++i) {
        const float g = gate[i];
        const float gelu = g <= -10.0f ? 0.0f : g >= 10.0f ? g : Fp16ToFp32(s.gelu_f16[Fp32ToFp16(g)]);
        gate[i] = gelu * up[i];
      }
    }
  }
};

// y[row] += b over each row of a [n_rows, dim] matrix.
void AddBias(float* y, const float* b, int32_t n_rows, int32_t dim, ThreadPool& pool, bool inline_run) {
  Parallel(pool, inline_run, [&](int ith, int nth) {
    Range r = SplitRange(n_rows, ith, nth);
    for (int64_t row = r.begin; row < r.end; ++row) {
      float* yr = y + row * dim;
      for (int32_t i = 0; i < dim; ++i) yr[i] += b[i];
    }
  });
}

// Rotates the first rope_dim dims of one head, pair p by the angle whose
// (cos, sin) is cs[2p], cs[2p+1] for this token's position. The style says
// which dims form pair p: (2p, 2p+1), or (p, p + rope_dim/2) for NeoX.
void RopeHead(float* h, const float* cs, int32_t rope_dim, RopeStyle style) {
  const int32_t half = rope_dim / 2;
  for (int32_t p = 0; p < half; ++p) {
    const int32_t i0 = style == RopeStyle::kNeox ? p : 2 * p;
    const int32_t i1 = style == RopeStyle::kNeox ? p + half : 2 * p + 1;
    const float c = cs[2 * p], s = cs[2 * p + 1];
    const float x0 = h[i0], x1 = h[i1];
    h[i0] = x0 * c - x1 * s;
    h[i1] = x0 * s + x1 * c;
  }
}

// A pool may keep every position of a windowed layer, never fewer than its window.
bool KeepsWhatLayersRead(const KvLayout& layout, const ModelConfig& c) {
  if (layout.window == 0) return true;
  if (layout.window < c.n_swa) return false;
  for (int32_t il = 0; il < c.n_layer; ++il) {
    if (layout.windowed(il) && !c.sliding(il)) return false;
  }
  return true;
}

}  // namespace

KvLayout ModelKvLayout(const ModelConfig& c, int32_t n_ctx, int32_t block_tokens, KvType type) {
  KvLayout l{c.n_layer, c.n_head_kv, c.head_dim, block_tokens, type};
  if (c.n_swa > 0 && c.n_swa < n_ctx) {
    l.window = c.n_swa;
    l.window_period = c.arch->swa_period;
  }
  return l;
}

LlamaContext::LlamaContext(std::shared_ptr<const LlamaModel> model, const ContextOptions& options)
    : model_(std::move(model)),
      options_(options),
      lanes_(ThreadLanesOptions{options.n_threads, options.priority_mode, options.sysfs_root}),
      gelu_f16_(model_->config().arch->activation == FfnActivation::kGeluTanh ? GeluF16Table() : nullptr) {}

Result<std::unique_ptr<LlamaContext>> LlamaContext::Create(std::shared_ptr<const LlamaModel> model,
                                                           const ContextOptions& options) {
  if (options.n_threads < 1 || options.n_threads > 256) {
    return InvalidArgument("thread count must be between 1 and 256, got " + std::to_string(options.n_threads));
  }
  if (options.max_batch_tokens < 1) return InvalidArgument("max_batch_tokens must be positive");
  if (options.n_ctx < 0) return InvalidArgument("context size must not be negative");
  ContextOptions o = options;
  const ModelConfig& c = model->config();
  if (o.n_ctx == 0) o.n_ctx = c.n_ctx_train;
  std::unique_ptr<LlamaContext> ctx(new LlamaContext(std::move(model), o));
  const size_t n = static_cast<size_t>(o.max_batch_tokens);
  ctx->x_.resize(n * c.n_embd);
  ctx->xn_.resize(n * c.n_embd);
  ctx->q_.resize(n * c.n_head * c.head_dim);
  ctx->k_.resize(n * c.n_head_kv * c.head_dim);
  ctx->v_.resize(n * c.n_head_kv * c.head_dim);
  ctx->attn_.resize(n * c.n_head * c.head_dim);
  ctx->gate_.resize(n * c.n_ff);
  ctx->up_.resize(n * c.n_ff);
  ctx->tmp_.resize(n * c.n_embd);
  ctx->rope_.resize(n * c.rope_dim);
  if (c.n_swa > 0) ctx->rope_swa_.resize(n * c.rope_dim);
  ctx->attn_work_.resize(static_cast<size_t>(ctx->lanes_.size()) * AttentionWorkFloats(c.head_dim));
  ctx->attn_rows_.resize(static_cast<size_t>(ctx->lanes_.size()) * 2 * o.n_ctx);
  return ctx;
}

size_t LlamaContext::scratch_bytes() const {
  size_t floats = x_.size() + xn_.size() + q_.size() + k_.size() + v_.size() + attn_.size() +
                  gate_.size() + up_.size() + tmp_.size() + rope_.size() + rope_swa_.size() + attn_work_.size();
  return floats * sizeof(float) + attn_rows_.size() * sizeof(void*) + matmul_scratch_.activations.capacity() +
         matmul_scratch_.dequantized.capacity() * sizeof(float);
}

Status LlamaContext::Validate(std::span<const BatchItem> batch, int32_t* n_tokens, int32_t* n_rows) const {
  const ModelConfig& c = model_->config();
  std::unordered_set<const KvSequence*> seen;
  int64_t tokens = 0, rows = 0;
  for (const BatchItem& item : batch) {
    if (item.seq == nullptr) return InvalidArgument("batch item without a sequence");
    const KvLayout& layout = item.seq->pool().layout();
    if (layout.n_layer != c.n_layer || layout.n_kv_head != c.n_head_kv || layout.head_dim != c.head_dim) {
      return InvalidArgument("sequence belongs to a KV pool laid out for another model");
    }
    if (!KeepsWhatLayersRead(layout, c)) {
      return InvalidArgument("sequence's KV pool drops positions this model's layers still attend to");
    }
    if (!seen.insert(item.seq).second) return InvalidArgument("a sequence appears twice in one batch");
    if (item.tokens.empty()) return InvalidArgument("batch item without tokens");
    for (int32_t id : item.tokens) {
      if (id < 0 || id >= c.n_vocab) {
        return InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary of " +
                               std::to_string(c.n_vocab));
      }
    }
    const int64_t end = int64_t{item.seq->n_tokens()} + static_cast<int64_t>(item.tokens.size());
    if (end > options_.n_ctx) {
      return OutOfRange("sequence would reach " + std::to_string(end) + " tokens, past the context of " +
                        std::to_string(options_.n_ctx));
    }
    if (item.cut != nullptr && !item.cut->empty() &&
        (item.cut->layer >= c.n_layer || !std::ranges::equal(item.cut->tokens, item.tokens) ||
         item.cut->hidden.size() != item.tokens.size() * static_cast<size_t>(c.n_embd))) {
      return InvalidArgument("a step cut does not belong to its item's tokens");
    }
    tokens += static_cast<int64_t>(item.tokens.size());
    rows += item.logits == LogitsMode::kAll ? static_cast<int64_t>(item.tokens.size())
            : item.logits == LogitsMode::kLast ? 1 : 0;
  }
  if (tokens == 0) return InvalidArgument("empty batch");
  if (tokens > options_.max_batch_tokens) {
    return OutOfRange("batch of " + std::to_string(tokens) + " tokens exceeds the step limit of " +
                      std::to_string(options_.max_batch_tokens));
  }
  *n_tokens = static_cast<int32_t>(tokens);
  *n_rows = static_cast<int32_t>(rows);
  return Status::Ok();
}

Status LlamaContext::Forward(std::span<const BatchItem> batch, std::vector<float>& logits) {
  const auto t0 = std::chrono::steady_clock::now();
  const ModelConfig& c = model_->config();
  int32_t n = 0, n_rows = 0;
  VALET_RETURN_IF_ERROR(Validate(batch, &n, &n_rows));
  for (size_t i = 0; i < batch.size(); ++i) {
    Status s = batch[i].seq->Reserve(static_cast<int32_t>(batch[i].tokens.size()));
    if (!s.ok()) return s;  // reserved-but-unfilled blocks stay with their sequences for next time
  }

  PlaceRows(batch);
  RopeAngles(n);
  const int32_t cut_at = std::exchange(cut_for_testing_, -1);
  for (int32_t il = 0; il < c.n_layer; ++il) {
    // K/V rows written so far sit past each sequence's committed length, so
    // stopping here commits nothing; items with a cut keep how far they got.
    if ((abort_ != nullptr && abort_->load(std::memory_order_relaxed)) || il == cut_at) {
      KeepCuts(batch, il);
      return Aborted("step aborted before layer " + std::to_string(il) + " for a higher-priority request");
    }
    if (rows_from_[il] > 0) Layer(model_->layers()[il], il, rows_from_[il]);
  }

  // Only the rows whose logits were asked for go through the output head.
  for (int32_t r = 0; r < n_rows; ++r) {
    std::copy_n(x_.data() + static_cast<size_t>(out_rows_[r]) * c.n_embd, c.n_embd,
                tmp_.data() + static_cast<size_t>(r) * c.n_embd);
  }
  logits.resize(static_cast<size_t>(n_rows) * c.n_vocab);
  if (n_rows > 0) {
    RmsNorm(tmp_.data(), model_->output_norm(), xn_.data(), n_rows, c.n_embd, c.rms_eps, lanes_.pool(),
            n_rows <= kInlineTokens);
    MatMul(model_->output(), xn_.data(), n_rows, logits.data(), lanes_.pool(), matmul_scratch_);  // [n_rows, n_vocab]
    if (const float cap = c.final_softcap; cap > 0.0f) {
      for (float& v : logits) v = std::tanh(v * (1.0f / cap)) * cap;  // as ggml: scale, tanh, scale
    }
  }
  for (const BatchItem& item : batch) {
    item.seq->Commit(static_cast<int32_t>(item.tokens.size()));
    if (item.cut != nullptr) item.cut->Clear();
  }

  stats_.steps += 1;
  stats_.tokens += n;
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

void LlamaContext::PlaceRows(std::span<const BatchItem> batch) {
  const ModelConfig& c = model_->config();
  const size_t embd = static_cast<size_t>(c.n_embd);
  start_layer_.clear();
  for (const BatchItem& item : batch) start_layer_.push_back(item.cut != nullptr ? item.cut->layer : 0);
  order_.resize(batch.size());
  std::iota(order_.begin(), order_.end(), size_t{0});
  if (std::ranges::any_of(start_layer_, [](int32_t l) { return l > 0; })) {
    std::ranges::sort(order_, [&](size_t a, size_t b) {  // ties in item order
      return start_layer_[a] != start_layer_[b] ? start_layer_[a] < start_layer_[b] : a < b;
    });
  }

  ids_.clear();
  seq_of_.clear();
  pos_of_.clear();
  first_row_.assign(batch.size(), 0);
  rows_from_.assign(static_cast<size_t>(c.n_layer), 0);
  for (size_t i : order_) {
    const BatchItem& item = batch[i];
    first_row_[i] = static_cast<int32_t>(ids_.size());
    for (size_t j = 0; j < item.tokens.size(); ++j) {
      ids_.push_back(item.tokens[j]);
      seq_of_.push_back(item.seq);
      pos_of_.push_back(item.seq->n_tokens() + static_cast<int32_t>(j));
    }
    for (int32_t il = start_layer_[i]; il < c.n_layer; ++il) rows_from_[il] += static_cast<int32_t>(item.tokens.size());
  }
  out_rows_.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    const int32_t n_item = static_cast<int32_t>(batch[i].tokens.size());
    if (batch[i].logits == LogitsMode::kAll) {
      for (int32_t j = 0; j < n_item; ++j) out_rows_.push_back(first_row_[i] + j);
    } else if (batch[i].logits == LogitsMode::kLast) {
      out_rows_.push_back(first_row_[i] + n_item - 1);
    }
  }

  // x: [n, n_embd], embeddings for the rows starting at the first layer (a
  // prefix), the kept hidden state for the others.
  const int32_t fresh = rows_from_[0];
  GetRows(model_->token_embd(), std::span<const int32_t>(ids_).first(static_cast<size_t>(fresh)), x_.data());
  if (c.arch->embd_scale) {
    const float scale = std::sqrt(static_cast<float>(c.n_embd));
    for (size_t i = 0; i < static_cast<size_t>(fresh) * embd; ++i) x_[i] *= scale;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (start_layer_[i] == 0) continue;
    std::copy(batch[i].cut->hidden.begin(), batch[i].cut->hidden.end(), x_.data() + first_row_[i] * embd);
  }
}

void LlamaContext::KeepCuts(std::span<const BatchItem> batch, int32_t il) {
  const size_t embd = static_cast<size_t>(model_->config().n_embd);
  for (size_t i = 0; i < batch.size(); ++i) {
    StepCut* cut = batch[i].cut;
    if (cut == nullptr || start_layer_[i] >= il) continue;  // nothing computed for it yet
    cut->layer = il;
    cut->tokens.assign(batch[i].tokens.begin(), batch[i].tokens.end());
    const float* rows = x_.data() + static_cast<size_t>(first_row_[i]) * embd;
    cut->hidden.assign(rows, rows + batch[i].tokens.size() * embd);
  }
}

// RoPE angles per token, (cos, sin) per rotated pair, computed the way
// llama.cpp does (theta multiplied up pair by pair in float, then divided by
// the pair's frequency factor when the model has them and scaled by the
// position scale, cos/sin scaled by the LongRoPE attention factor); windowed
// layers have their own base and position scale (ModelConfig) and no factors.
void LlamaContext::RopeAngles(int32_t n) {
  const ModelConfig& c = model_->config();
  RopeTable(n, c.rope_base, c.rope_freq_scale, model_->rope_freq_factors(options_.n_ctx), rope_.data());
  if (c.n_swa > 0) RopeTable(n, c.rope_base_swa, c.rope_freq_scale_swa, nullptr, rope_swa_.data());
}

void LlamaContext::RopeTable(int32_t n, float base, float freq_scale, const float* factors, float* out) const {
  const ModelConfig& c = model_->config();
  const float mscale = c.rope_attn_factor;
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(c.rope_dim));
  for (int32_t t = 0; t < n; ++t) {
    float theta = static_cast<float>(pos_of_[t]);
    float* cs = out + static_cast<size_t>(t) * c.rope_dim;
    for (int32_t p = 0; p < c.rope_dim / 2; ++p) {
      const float angle = freq_scale * (factors != nullptr ? theta / factors[p] : theta);
      cs[2 * p] = std::cos(angle) * mscale;
      cs[2 * p + 1] = std::sin(angle) * mscale;
      theta *= theta_scale;
    }
  }
}

void LlamaContext::Layer(const LlamaLayer& L, int32_t il, int32_t n) {
  const ModelConfig& c = model_->config();
  const int64_t embd = static_cast<int64_t>(n) * c.n_embd;

  const bool few = n <= kInlineTokens;

  RmsNorm(x_.data(), L.attn_norm, xn_.data(), n, c.n_embd, c.rms_eps, lanes_.pool(), few);  // xn: [n, n_embd]
  // q: [n, q_dim], k and v: [n, kv_dim]
  const MatMulOutput qkv[] = {{&L.wq, q_.data()}, {&L.wk, k_.data()}, {&L.wv, v_.data()}};
  MatMulMany(qkv, xn_.data(), n, lanes_.pool(), matmul_scratch_);
  if (L.bq != nullptr) AddBias(q_.data(), L.bq, n, c.q_dim(), lanes_.pool(), few);
  if (L.bk != nullptr) AddBias(k_.data(), L.bk, n, c.kv_dim(), lanes_.pool(), few);
  if (L.bv != nullptr) AddBias(v_.data(), L.bv, n, c.kv_dim(), lanes_.pool(), few);
  // Per-head norms: q viewed as [n * n_head, head_dim], k as [n * n_head_kv, head_dim].
  if (L.q_norm != nullptr)
    RmsNorm(q_.data(), L.q_norm, q_.data(), n * c.n_head, c.head_dim, c.rms_eps, lanes_.pool(), few);
  if (L.k_norm != nullptr)
    RmsNorm(k_.data(), L.k_norm, k_.data(), n * c.n_head_kv, c.head_dim, c.rms_eps, lanes_.pool(), few);
  Attention(il, n);                                                 // attn: [n, n_head * head_dim]
  MatMul(L.wo, attn_.data(), n, tmp_.data(), lanes_.pool(), matmul_scratch_);  // tmp: [n, n_embd]
  if (L.post_attn_norm != nullptr) {
    RmsNorm(tmp_.data(), L.post_attn_norm, tmp_.data(), n, c.n_embd, c.rms_eps, lanes_.pool(), few);
  }
  AddInPlace(x_.data(), tmp_.data(), embd, lanes_.pool(), few);

  RmsNorm(x_.data(), L.ffn_norm, xn_.data(), n, c.n_embd, c.rms_eps, lanes_.pool(), few);  // xn: [n, n_embd]
  // gate = act(xn · w_gateᵀ) * (xn · w_upᵀ): [n, n_ff]
  GatedRows gated{gate_.data(), up_.data(), c.n_ff, ActiveKernels().swiglu, gelu_f16_};
  const RowsEpilogue activation{
      c.arch->activation == FfnActivation::kGeluTanh ? GatedRows::GeGlu : GatedRows::SwiGlu, &gated};
  const MatMulOutput gate_up[] = {{&L.w_gate, gate_.data()}, {&L.w_up, up_.data()}};
  MatMulMany(gate_up, xn_.data(), n, lanes_.pool(), matmul_scratch_, activation);
  MatMul(L.w_down, gate_.data(), n, tmp_.data(), lanes_.pool(), matmul_scratch_);  // tmp: [n, n_embd]
  if (L.post_ffn_norm != nullptr) {
    RmsNorm(tmp_.data(), L.post_ffn_norm, tmp_.data(), n, c.n_embd, c.rms_eps, lanes_.pool(), few);
  }
  AddInPlace(x_.data(), tmp_.data(), embd, lanes_.pool(), few);
}

void LlamaContext::Attention(int32_t il, int32_t n) {
  const ModelConfig& c = model_->config();
  // A windowed layer's query at position p sees keys (p - window, p].
  const bool sliding = c.sliding(il);
  const int32_t window = sliding ? c.n_swa : options_.n_ctx;
  const KvType kv_type = seq_of_[0]->pool().layout().type;
  const GgmlType row_type = kv_type == KvType::kF16    ? GgmlType::kF16
                            : kv_type == KvType::kQ8_0 ? GgmlType::kQ8_0
                                                       : GgmlType::kF32;
  const float q_scale = kLog2e / std::sqrt(static_cast<float>(c.attn_scale_dim));
  RotateAndStoreKv(il, n, sliding ? rope_swa_ : rope_, q_scale, row_type);
  PlanAttentionBlocks(n, window);
  RunAttentionBlocks(il, window, row_type, c.attn_softcap * kLog2e);  // the cap in the scores' base-2 units
}

// Rotate q and k, scale q for the kernel's base-2 softmax, then store k and
// v at each token's position (converted to the pool's element type), so
// that every token of the step sees the earlier tokens of its own sequence.
void LlamaContext::RotateAndStoreKv(int32_t il, int32_t n, const std::vector<float>& rope, float q_scale,
                                    GgmlType row_type) {
  const ModelConfig& c = model_->config();
  const int32_t hd = c.head_dim;
  const int32_t q_dim = c.n_head * hd;
  const int32_t kv_dim = c.n_head_kv * hd;
  const from_float_fn store_row = ActiveKernels()[row_type].from_float;
  Parallel(lanes_.pool(), n <= kInlineTokens, [&](int ith, int nth) {
    Range r = SplitRange(n, ith, nth);
    for (int64_t t = r.begin; t < r.end; ++t) {
      const float* cs = rope.data() + t * c.rope_dim;
      for (int32_t h = 0; h < c.n_head; ++h) {
        float* qh = q_.data() + t * q_dim + h * hd;
        RopeHead(qh, cs, c.rope_dim, c.rope_style);
        for (int32_t i = 0; i < hd; ++i) qh[i] *= q_scale;
      }
      for (int32_t h = 0; h < c.n_head_kv; ++h) {
        float* kh = k_.data() + t * kv_dim + h * hd;
        RopeHead(kh, cs, c.rope_dim, c.rope_style);
        store_row(kh, seq_of_[t]->row(il, 0, h, pos_of_[t]), hd);
        store_row(v_.data() + t * kv_dim + h * hd, seq_of_[t]->row(il, 1, h, pos_of_[t]), hd);
      }
    }
  });
}

// Blocks of up to kAttnMaxRows query rows, (token, head) of one sequence
// and KV head, so each K/V tile is loaded once for all of them. Which rows
// share a block does not change any row's result (kernels/attention.h).
// Rows share a block only while their keys all start at position 0: a
// token whose window has moved on gets blocks of its own.
void LlamaContext::PlanAttentionBlocks(int32_t n, int32_t window) {
  const ModelConfig& c = model_->config();
  const int32_t group = c.n_head / c.n_head_kv;  // query heads per KV head
  attn_blocks_.clear();
  for (int32_t first = 0; first < n;) {
    int32_t end = first + 1;
    if (pos_of_[first] < window) {
      while (end < n && seq_of_[end] == seq_of_[first] && pos_of_[end] < window) ++end;
    }
    const int32_t rows = (end - first) * group;
    for (int32_t kvh = 0; kvh < c.n_head_kv; ++kvh) {
      for (int32_t r = 0; r < rows; r += kAttnMaxRows) {
        attn_blocks_.push_back({first, kvh, r, std::min(rows, r + kAttnMaxRows)});
      }
    }
    first = end;
  }
}

// Threads take blocks from the end, where the causal mask leaves the most
// keys, so the shorter blocks fill in the imbalance at the finish.
void LlamaContext::RunAttentionBlocks(int32_t il, int32_t window, GgmlType row_type, float softcap) {
  const ModelConfig& c = model_->config();
  const int32_t hd = c.head_dim;
  const int32_t q_dim = c.n_head * hd;
  const int32_t group = c.n_head / c.n_head_kv;
  const KernelTable& kernels = ActiveKernels();
  std::atomic<int64_t> next{0};
  const int64_t n_blocks = static_cast<int64_t>(attn_blocks_.size());
  const size_t work_floats = AttentionWorkFloats(hd);
  lanes_.pool().Run([&](int ith, int) {
    float* work = attn_work_.data() + ith * work_floats;
    const void** k_rows = attn_rows_.data() + static_cast<size_t>(ith) * 2 * options_.n_ctx;
    const void** v_rows = k_rows + options_.n_ctx;
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n_blocks;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      const AttentionBlock& b = attn_blocks_[static_cast<size_t>(n_blocks - 1 - i)];
      KvSequence& seq = *seq_of_[b.first_token];
      const float* q[kAttnMaxRows];
      float* out[kAttnMaxRows];
      int32_t n_keys[kAttnMaxRows];
      const int32_t first_key = std::max(0, pos_of_[b.first_token] + 1 - window);
      int32_t max_keys = 0;
      for (int32_t r = b.row_begin; r < b.row_end; ++r) {
        const int64_t t = b.first_token + r / group;
        const int32_t h = b.kv_head * group + r % group;
        q[r - b.row_begin] = q_.data() + t * q_dim + h * hd;
        out[r - b.row_begin] = attn_.data() + t * q_dim + h * hd;
        n_keys[r - b.row_begin] = pos_of_[t] + 1 - first_key;
        max_keys = std::max(max_keys, n_keys[r - b.row_begin]);
      }
      seq.Rows(il, 0, b.kv_head, first_key, max_keys, k_rows);
      seq.Rows(il, 1, b.kv_head, first_key, max_keys, v_rows);
      const AttentionRows rows{b.row_end - b.row_begin, q, n_keys, out, softcap};
      kernels.attention(rows, AttentionKeys{row_type, hd, k_rows, v_rows}, work);
    }
  });
}

}  // namespace valet
