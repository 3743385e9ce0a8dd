// The engine end to end on a micro model (~70K parameters, synthesized in
// the test), for every weight type the tiny-model tests do not chunk: logits
// are the same bits however the prompt is chunked and on one or two threads,
// and a quantized model's logits stay close to the F32 model's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/cache_aligned.h"
#include "model/llama_context.h"
#include "testing/model/synthetic_model.h"

namespace valet {
using namespace valet::testing;
namespace {

constexpr int32_t kPromptTokens = 20;

std::shared_ptr<const LlamaModel> MicroModel(GgmlType type) {
  SynthModelOptions o;
  o.type = type;
  // n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx
  o.shape = SynthShape{64, 2, 2, 1, 128, 384, 64};
  const std::string path = ::testing::TempDir() + "valet_micro_" + std::to_string(getpid()) + "_" +
                           SynthTypeName(type) + ".gguf";
  EXPECT_TRUE(WriteSyntheticModel(o, path).ok());
  Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? *model : nullptr;
}

// Logits of every prompt token, the prompt fed in steps ending at `cuts`.
std::vector<float> Logits(const std::shared_ptr<const LlamaModel>& model, const std::vector<int32_t>& cuts,
                          int threads) {
  const ModelConfig& c = model->config();
  KvPoolOptions po;
  po.layout = KvLayout{c.n_layer, c.n_head_kv, c.head_dim, 16};
  po.capacity_bytes = 1u << 20;
  std::unique_ptr<KvPool> pool = std::move(KvPool::Create(po)).value();
  ContextOptions co;
  co.n_threads = threads;
  std::unique_ptr<LlamaContext> ctx = std::move(LlamaContext::Create(model, co)).value();
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < kPromptTokens; ++i) prompt.push_back((i * 37 + 11) % c.n_vocab);
  KvSequence seq(*pool);
  std::vector<float> all, logits;
  int32_t begin = 0;
  for (int32_t cut : cuts) {
    BatchItem item{&seq, std::span<const int32_t>(prompt).subspan(begin, cut - begin), LogitsMode::kAll};
    EXPECT_TRUE(ctx->Forward({&item, 1}, logits).ok());
    all.insert(all.end(), logits.begin(), logits.end());
    begin = cut;
  }
  return all;
}

class MicroEngineTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MicroEngineTest, LogitsDoNotDependOnChunkingOrThreadsAndStayCloseToF32) {
  const std::shared_ptr<const LlamaModel> model = MicroModel(GetParam());
  ASSERT_NE(model, nullptr);
  // Every table (scalar, AVX2, NEON) has row-group kernels for these types, so
  // the model runs them; rows here would mean the engine tests below, run
  // under qemu on each ARM CPU, no longer cover the packed path.
  if (GetParam() == GgmlType::kQ8_0 || GetParam() == GgmlType::kQ4_0) {
    EXPECT_EQ(model->layers().front().wq.layout, WeightLayout::kRowGroups) << ActiveKernelsName();
  }
  const std::vector<float> want = Logits(model, {kPromptTokens}, 2);
  ASSERT_EQ(want.size(), static_cast<size_t>(kPromptTokens) * model->config().n_vocab);
  std::vector<int32_t> one_by_one;
  for (int32_t i = 1; i <= kPromptTokens; ++i) one_by_one.push_back(i);
  for (const auto& [what, got] : {std::pair{"chunks 1/6/13", Logits(model, {1, 7, kPromptTokens}, 2)},
                                  {"token by token", Logits(model, one_by_one, 2)},
                                  {"one thread", Logits(model, {kPromptTokens}, 1)}}) {
    ASSERT_EQ(got.size(), want.size()) << what;
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float))) << what;
  }
  if (GetParam() == GgmlType::kF32) return;
  // Quantization error only: the RMS difference from the F32 model's logits
  // within the tolerances synthetic_model_test uses for the tiny model.
  const std::vector<float> f32 = Logits(MicroModel(GgmlType::kF32), {kPromptTokens}, 2);
  double sum = 0, sum_sq = 0, diff_sq = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    sum += f32[i];
    sum_sq += static_cast<double>(f32[i]) * f32[i];
    diff_sq += static_cast<double>(want[i] - f32[i]) * (want[i] - f32[i]);
  }
  const double n = static_cast<double>(f32.size());
  const double stddev = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
  ASSERT_GT(stddev, 0.0);
  const double tolerance = GetParam() == GgmlType::kF16 ? 0.01 : GetParam() == GgmlType::kQ8_0 ? 0.05 : 0.4;
  EXPECT_LT(std::sqrt(diff_sq / n) / stddev, tolerance) << SynthTypeName(GetParam());
}

TEST_P(MicroEngineTest, PackedMatricesStartOnCacheLines) {
  const std::shared_ptr<const LlamaModel> model = MicroModel(GetParam());
  ASSERT_NE(model, nullptr);
  for (const LlamaLayer& l : model->layers()) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      if (m->layout != WeightLayout::kRowGroups) continue;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data) % kCacheLineBytes, 0u) << SynthTypeName(GetParam());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MicroEngineTest,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(SynthTypeName(info.param));
                         });

}  // namespace
}  // namespace valet
