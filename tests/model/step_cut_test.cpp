// A step cut between layers goes on from its StepCut to the same bits as a
// step never cut: on every architecture, at every layer, beside items that
// start fresh, cut twice; a cut that does not belong to its item is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "model/llama_context.h"
#include "testing/model/synthetic_model.h"

namespace valet {
using namespace valet::testing;
namespace {

class StepCutTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "valet_step_cut_test_" + GetParam() + "_" + std::to_string(getpid()) + ".gguf";
    SynthModelOptions o;
    o.arch = GetParam();
    o.type = GgmlType::kQ8_0;
    ASSERT_TRUE(WriteSyntheticModel(o, path_).ok());
    Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(path_);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = *model;
    const ModelConfig& c = model_->config();
    KvPoolOptions po;
    po.layout = ModelKvLayout(c, c.n_ctx_train, 16, KvType::kF16);  // windowed layers keep their window only
    po.capacity_bytes = 16u << 20;
    pool_ = std::move(KvPool::Create(po)).value();
    ContextOptions co;
    co.n_threads = 2;
    ctx_ = std::move(LlamaContext::Create(model_, co)).value();
    // Long enough that Gemma's windowed layers (16 positions) drop keys.
    for (int32_t i = 0; i < 21; ++i) prompt_.push_back((i * 37 + 11) % c.n_vocab);
    for (int32_t i = 0; i < 9; ++i) chunk_.push_back((i * 53 + 5) % c.n_vocab);
  }
  void TearDown() override { std::filesystem::remove(path_); }

  int32_t n_layer() const { return model_->config().n_layer; }

  // The prompt, then the chunk with every row's logits, never cut.
  std::vector<float> Reference() {
    KvSequence seq(*pool_);
    std::vector<float> logits;
    EXPECT_TRUE(Run({{&seq, prompt_, LogitsMode::kNone}}, logits).ok());
    EXPECT_TRUE(Run({{&seq, chunk_, LogitsMode::kAll}}, logits).ok());
    return logits;
  }

  Status Run(std::vector<BatchItem> batch, std::vector<float>& logits) { return ctx_->Forward(batch, logits); }

  std::string path_;
  std::shared_ptr<const LlamaModel> model_;
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<LlamaContext> ctx_;
  std::vector<int32_t> prompt_, chunk_;
};

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_P(StepCutTest, AStepCutAtAnyLayerGoesOnToTheSameBits) {
  const std::vector<float> want = Reference();
  for (int32_t layer = 0; layer < n_layer(); ++layer) {
    SCOPED_TRACE("cut before layer " + std::to_string(layer));
    KvSequence seq(*pool_);
    std::vector<float> logits;
    ASSERT_TRUE(Run({{&seq, prompt_, LogitsMode::kNone}}, logits).ok());
    StepCut cut;
    const BatchItem item{&seq, chunk_, LogitsMode::kAll, &cut};
    ctx_->set_cut_for_testing(layer);
    EXPECT_EQ(Run({item}, logits).code(), StatusCode::kAborted);
    EXPECT_EQ(seq.n_tokens(), static_cast<int32_t>(prompt_.size()));
    // Before the first layer nothing was computed, so nothing is kept.
    EXPECT_EQ(cut.layer, layer);
    EXPECT_EQ(cut.tokens, layer == 0 ? std::vector<int32_t>{} : chunk_);
    EXPECT_EQ(cut.hidden.size(), layer == 0 ? 0u : chunk_.size() * model_->config().n_embd);
    ASSERT_TRUE(Run({item}, logits).ok());
    EXPECT_TRUE(cut.empty());
    EXPECT_EQ(seq.n_tokens(), static_cast<int32_t>(prompt_.size() + chunk_.size()));
    EXPECT_TRUE(SameBits(logits, want));
  }
}

// The resumed item comes first in the batch and starts at a later layer than
// the fresh one beside it; each gets its own rows of logits in item order.
TEST_P(StepCutTest, ACutItemGoesOnBesideOneThatStartsFresh) {
  const std::vector<float> want = Reference();
  const std::vector<int32_t> other = {3, 4, 5};
  std::vector<float> other_want;
  {
    KvSequence alone(*pool_);
    ASSERT_TRUE(Run({{&alone, other, LogitsMode::kLast}}, other_want).ok());
  }
  const int32_t layer = n_layer() / 2;
  KvSequence seq(*pool_), fresh(*pool_);
  std::vector<float> logits;
  ASSERT_TRUE(Run({{&seq, prompt_, LogitsMode::kNone}}, logits).ok());
  StepCut cut, fresh_cut;
  ctx_->set_cut_for_testing(layer);
  ASSERT_EQ(Run({{&seq, chunk_, LogitsMode::kAll, &cut}}, logits).code(), StatusCode::kAborted);
  ASSERT_EQ(cut.layer, layer);
  ASSERT_TRUE(Run({{&seq, chunk_, LogitsMode::kAll, &cut}, {&fresh, other, LogitsMode::kLast, &fresh_cut}}, logits).ok());
  ASSERT_EQ(logits.size(), want.size() + other_want.size());
  EXPECT_TRUE(SameBits({logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(want.size())}, want));
  EXPECT_TRUE(SameBits({logits.begin() + static_cast<std::ptrdiff_t>(want.size()), logits.end()}, other_want));
  EXPECT_TRUE(cut.empty());
  EXPECT_TRUE(fresh_cut.empty());
}

// Cut again while going on: past the first cut the kept state moves on, before
// it (no new layer computed) the first cut stays as it was.
TEST_P(StepCutTest, AStepCutTwiceGoesOnFromTheLaterCut) {
  const std::vector<float> want = Reference();
  KvSequence seq(*pool_);
  std::vector<float> logits;
  ASSERT_TRUE(Run({{&seq, prompt_, LogitsMode::kNone}}, logits).ok());
  StepCut cut;
  const BatchItem item{&seq, chunk_, LogitsMode::kAll, &cut};
  ctx_->set_cut_for_testing(1);
  ASSERT_EQ(Run({item}, logits).code(), StatusCode::kAborted);
  ctx_->set_cut_for_testing(0);
  ASSERT_EQ(Run({item}, logits).code(), StatusCode::kAborted);
  EXPECT_EQ(cut.layer, 1);
  ctx_->set_cut_for_testing(n_layer() - 1);
  ASSERT_EQ(Run({item}, logits).code(), StatusCode::kAborted);
  EXPECT_EQ(cut.layer, n_layer() - 1);
  ASSERT_TRUE(Run({item}, logits).ok());
  EXPECT_TRUE(SameBits(logits, want));
}

TEST_P(StepCutTest, ACutThatDoesNotBelongToItsItemIsRefused) {
  const std::vector<float> want = Reference();
  KvSequence seq(*pool_);
  std::vector<float> logits;
  ASSERT_TRUE(Run({{&seq, prompt_, LogitsMode::kNone}}, logits).ok());
  StepCut cut;
  ctx_->set_cut_for_testing(1);
  ASSERT_EQ(Run({{&seq, chunk_, LogitsMode::kAll, &cut}}, logits).code(), StatusCode::kAborted);
  const std::vector<int32_t> shorter(chunk_.begin(), chunk_.end() - 1);
  EXPECT_EQ(Run({{&seq, shorter, LogitsMode::kAll, &cut}}, logits).code(), StatusCode::kInvalidArgument);
  StepCut past_the_end = cut;
  past_the_end.layer = n_layer();
  EXPECT_EQ(Run({{&seq, chunk_, LogitsMode::kAll, &past_the_end}}, logits).code(), StatusCode::kInvalidArgument);
  StepCut short_hidden = cut;
  short_hidden.hidden.pop_back();
  EXPECT_EQ(Run({{&seq, chunk_, LogitsMode::kAll, &short_hidden}}, logits).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(seq.n_tokens(), static_cast<int32_t>(prompt_.size()));
  ASSERT_TRUE(Run({{&seq, chunk_, LogitsMode::kAll, &cut}}, logits).ok());
  EXPECT_TRUE(SameBits(logits, want));
}

INSTANTIATE_TEST_SUITE_P(Architectures, StepCutTest,
                         ::testing::Values("llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace valet
