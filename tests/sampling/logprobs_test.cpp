// ComputeLogprobs against hand-computed log-softmax values.
#include "sampling/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace valet {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(LogprobsTest, LogSoftmaxOfTheSampledAndTheTop) {
  // exp: 1, 2, 1, 4 -> sum 8.
  const std::vector<float> logits = {0.0f, std::log(2.0f), 0.0f, std::log(4.0f)};
  const TokenLogprobs lp = ComputeLogprobs(logits, 2, 3);
  EXPECT_EQ(lp.sampled.token, 2);
  EXPECT_NEAR(lp.sampled.logprob, std::log(1.0 / 8), 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].token, 3);
  EXPECT_NEAR(lp.top[0].logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(lp.top[1].token, 1);
  EXPECT_EQ(lp.top[2].token, 0) << "ties go to the lower id";
  EXPECT_TRUE(lp.sampled.piece.empty());
}

TEST(LogprobsTest, ZeroTopAndMoreThanTheVocabulary) {
  const std::vector<float> logits = {1.0f, 2.0f};
  EXPECT_TRUE(ComputeLogprobs(logits, 0, 0).top.empty());
  EXPECT_EQ(ComputeLogprobs(logits, 0, 20).top.size(), 2u);
}

TEST(LogprobsTest, LargeLogitsDoNotOverflowAndTheyNormalise) {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = 500.0f + static_cast<float>(i % 17);
  double total = 0.0;
  for (int32_t t = 0; t < 1000; ++t) total += std::exp(ComputeLogprobs(logits, t, 0).sampled.logprob);
  EXPECT_NEAR(total, 1.0, 1e-4);
}

TEST(LogprobsTest, MaskedTokensAreMinusInfinity) {
  const std::vector<float> logits = {-kInf, 0.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  const TokenLogprobs lp = ComputeLogprobs(logits, 0, 4);
  EXPECT_EQ(lp.sampled.logprob, -kInf);
  EXPECT_NEAR(lp.top[0].logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(lp.top[1].token, 3);
  EXPECT_EQ(lp.top[2].token, 0);
  EXPECT_EQ(lp.top[3].logprob, -kInf);
}

}  // namespace
}  // namespace valet
