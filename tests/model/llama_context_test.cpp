// LlamaContext behaviour that the golden tests do not reach: an aborted step
// changes nothing and can be redone to the same bits.
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

class LlamaContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "valet_llama_context_test_" + std::to_string(getpid()) + ".gguf";
    SynthModelOptions o;
    o.type = GgmlType::kQ8_0;
    ASSERT_TRUE(WriteSyntheticModel(o, path_).ok());
    Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(path_);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = *model;
    const ModelConfig& c = model_->config();
    KvPoolOptions po;
    po.layout = KvLayout{c.n_layer, c.n_head_kv, c.head_dim, 16};
    po.capacity_bytes = 8u << 20;
    pool_ = std::move(KvPool::Create(po)).value();
    ContextOptions co;
    co.n_threads = 2;
    ctx_ = std::move(LlamaContext::Create(model_, co)).value();
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::string path_;
  std::shared_ptr<const LlamaModel> model_;
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<LlamaContext> ctx_;
};

TEST_F(LlamaContextTest, AnAbortedStepChangesNothingAndRedoesBitExactly) {
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
TEST_F(LlamaContextTest, LogitsDoNotDependOnChunkingBatchingOrThreads) {
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

}  // namespace
}  // namespace valet
