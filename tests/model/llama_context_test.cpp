// LlamaContext behaviour that the golden tests do not reach, on every
// architecture: an aborted step changes nothing and can be redone to the same
// bits; logits do not depend on chunking, batching or threads; a step cut
// between layers goes on from its StepCut to the same bits as a step never
// cut, at every layer, beside items that start fresh, cut twice; a cut that
// does not belong to its item is refused.
#include <gtest/gtest.h>

#include <atomic>
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

class LlamaContextTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "valet_llama_context_test_" + GetParam() + "_" + std::to_string(getpid()) + ".gguf";
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

TEST_P(LlamaContextTest, AnAbortedStepChangesNothingAndRedoesBitExactly) {
  const std::vector<int32_t> prompt = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};
  const std::vector<int32_t> chunk = {60, 61, 62, 63, 64};

  // Reference: prompt, then the chunk, never aborted.
  KvSequence ref(*pool_);
  std::vector<float> logits, ref_logits;
  BatchItem a{&ref, prompt, LogitsMode::kNone};
  ASSERT_TRUE(ctx_->Forward({&a, 1}, logits).ok());
  BatchItem b{&ref, chunk, LogitsMode::kAll};
  ASSERT_TRUE(ctx_->Forward({&b, 1}, ref_logits).ok());

  // Same, but the chunk is aborted once first.
  KvSequence seq(*pool_);
  BatchItem c{&seq, prompt, LogitsMode::kNone};
  ASSERT_TRUE(ctx_->Forward({&c, 1}, logits).ok());
  std::atomic<bool> abort{true};
  ctx_->set_abort_flag(&abort);
  BatchItem d{&seq, chunk, LogitsMode::kAll};
  Status s = ctx_->Forward({&d, 1}, logits);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(seq.n_tokens(), static_cast<int32_t>(prompt.size()));
  abort = false;
  ASSERT_TRUE(ctx_->Forward({&d, 1}, logits).ok());
  EXPECT_EQ(seq.n_tokens(), static_cast<int32_t>(prompt.size() + chunk.size()));
  ASSERT_EQ(logits.size(), ref_logits.size());
  EXPECT_EQ(0, std::memcmp(logits.data(), ref_logits.data(), logits.size() * sizeof(float)));
}

// Every logits row of a 70-token prompt (three attention tiles) is the same
// bits however the prompt is cut into steps, whether another sequence shares
// the steps, and on 1 or 2 threads.
TEST_P(LlamaContextTest, LogitsDoNotDependOnChunkingBatchingOrThreads) {
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 70; ++i) prompt.push_back((i * 37 + 11) % model_->config().n_vocab);
  auto run = [&](LlamaContext& ctx, const std::vector<size_t>& cuts, bool with_neighbour) {
    KvSequence seq(*pool_), other(*pool_);
    std::vector<float> all, logits;
    size_t begin = 0;
    for (size_t cut : cuts) {
      std::vector<BatchItem> batch;
      if (with_neighbour) batch.push_back({&other, std::span<const int32_t>(prompt).subspan(0, 3), LogitsMode::kLast});
      batch.push_back({&seq, std::span<const int32_t>(prompt).subspan(begin, cut - begin), LogitsMode::kAll});
      EXPECT_TRUE(ctx.Forward(batch, logits).ok());
      const size_t skip = with_neighbour ? static_cast<size_t>(model_->config().n_vocab) : 0;
      all.insert(all.end(), logits.begin() + static_cast<std::ptrdiff_t>(skip), logits.end());
      if (with_neighbour) other.Clear();
      begin = cut;
    }
    return all;
  };
  const std::vector<float> want = run(*ctx_, {70}, false);
  ASSERT_EQ(want.size(), 70u * model_->config().n_vocab);
  std::vector<size_t> one_by_one;
  for (size_t i = 1; i <= 70; ++i) one_by_one.push_back(i);
  ContextOptions co;
  co.n_threads = 1;
  std::unique_ptr<LlamaContext> single = std::move(LlamaContext::Create(model_, co)).value();
  const struct {
    const char* what;
    std::vector<float> got;
  } cases[] = {
      {"chunks 1/7/32/30", run(*ctx_, {1, 8, 40, 70}, false)},
      {"token by token", run(*ctx_, one_by_one, false)},
      {"beside another sequence", run(*ctx_, {33, 70}, true)},
      {"one thread", run(*single, {5, 70}, false)},
  };
  for (const auto& c : cases) {
    ASSERT_EQ(c.got.size(), want.size()) << c.what;
    EXPECT_EQ(0, std::memcmp(c.got.data(), want.data(), want.size() * sizeof(float))) << c.what;
  }
}

TEST_P(LlamaContextTest, AStepCutAtAnyLayerGoesOnToTheSameBits) {
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
TEST_P(LlamaContextTest, ACutItemGoesOnBesideOneThatStartsFresh) {
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
TEST_P(LlamaContextTest, AStepCutTwiceGoesOnFromTheLaterCut) {
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

TEST_P(LlamaContextTest, ACutThatDoesNotBelongToItsItemIsRefused) {
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

INSTANTIATE_TEST_SUITE_P(Architectures, LlamaContextTest,
                         ::testing::Values("llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace valet
