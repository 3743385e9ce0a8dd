#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace valet {
namespace {

SamplingParams NoFilters(float temperature, uint64_t seed = 1) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.0f;
  p.seed = seed;
  return p;
}

Sampler MakeSampler(const SamplingParams& params, int32_t n_vocab) {
  Result<Sampler> s = Sampler::Create(params, n_vocab);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

std::vector<float> RandomLogits(std::mt19937& gen, size_t n, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> logits(n);
  for (float& l : logits) l = dist(gen);
  return logits;
}

int32_t Argmax(const std::vector<float>& logits) {
  // std::max_element returns the first maximum, i.e. the lowest id on ties.
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<double> Softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p;
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l / temperature);
  for (float l : logits) p.push_back(std::exp(l / temperature) / sum);
  return p;
}

double ChiSquare(const std::vector<double>& observed, const std::vector<double>& expected) {
  double chi2 = 0.0;
  for (size_t i = 0; i < observed.size(); ++i) {
    chi2 += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  }
  return chi2;
}

TEST(SamplerTest, GreedyIsArgmaxWithTiesToLowestId) {
  Sampler s = MakeSampler(NoFilters(0.0f), 6);
  EXPECT_EQ(s.Sample(std::vector<float>{1.0f, 3.0f, -2.0f, 3.0f, 2.9f, 0.0f}), 1);
  std::mt19937 gen(7);
  for (int i = 0; i < 50; ++i) {
    const std::vector<float> logits = RandomLogits(gen, 6, 2.0f);
    EXPECT_EQ(s.Sample(logits), Argmax(logits));
  }
}

TEST(SamplerTest, NegativeTemperatureIsGreedyAndLeavesRngUntouched) {
  Sampler s = MakeSampler(NoFilters(-1.0f), 3);
  const RngState before = s.state().rng;
  EXPECT_EQ(s.Sample(std::vector<float>{0.0f, 0.0f, 5.0f}), 2);
  EXPECT_EQ(s.state().rng, before);
}

TEST(SamplerTest, TopK1EqualsGreedyForAnyTemperature) {
  std::mt19937 gen(11);
  for (float temperature : {0.1f, 0.8f, 1.0f, 5.0f, 100.0f}) {
    SamplingParams p = SamplingParams{};
    p.temperature = temperature;
    p.top_k = 1;
    Sampler s = MakeSampler(p, 1000);
    for (int i = 0; i < 20; ++i) {
      const std::vector<float> logits = RandomLogits(gen, 1000, 1.0f);
      EXPECT_EQ(s.Sample(logits), Argmax(logits)) << "temperature " << temperature;
    }
  }
}

TEST(SamplerTest, FilterAppliesTopKTopPMinPThenTemperature) {
  // Probabilities 0.5, 0.3, 0.1, 0.06, 0.04 at ids 3, 1, 4, 0, 2.
  const std::vector<float> logits = {std::log(0.06f), std::log(0.3f), std::log(0.04f),
                                     std::log(0.5f), std::log(0.1f)};
  SamplingParams p = NoFilters(1.0f);
  p.top_p = 0.85f;  // keeps 3, 1, 4
  Sampler s = MakeSampler(p, 5);
  std::span<const Candidate> kept = s.Filter(logits);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].id, 3);
  EXPECT_EQ(kept[1].id, 1);
  EXPECT_EQ(kept[2].id, 4);
  EXPECT_NEAR(kept[0].p, 0.5 / 0.9, 1e-5);
  EXPECT_NEAR(kept[2].p, 0.1 / 0.9, 1e-5);

  p.min_p = 0.5f;  // then drops 4 (0.2 of the best)
  s = MakeSampler(p, 5);
  kept = s.Filter(logits);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NEAR(kept[0].p, 0.5 / 0.8, 1e-5);

  p.temperature = 0.5f;  // squares the odds of the survivors: 25:9
  s = MakeSampler(p, 5);
  kept = s.Filter(logits);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NEAR(kept[0].p, 25.0 / 34.0, 1e-5);

  p = NoFilters(1.0f);
  p.top_k = 4;
  p.top_p = 0.9f;  // of the top 4 (mass 0.96): 0.5/0.96, 0.8/0.96 < 0.9 <= 0.9/0.96
  s = MakeSampler(p, 5);
  EXPECT_EQ(s.Filter(logits).size(), 3u);
}

TEST(SamplerTest, EmpiricalDistributionMatchesSoftmax) {
  const std::vector<float> logits = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, -1.0f, 0.2f, 1.2f};
  const int draws = 200000;
  // Chi-square with 7 degrees of freedom: P(X > 24.32) = 0.001.
  const double bound = 24.32;
  for (double temperature : {1.0, 2.0}) {
    Sampler s = MakeSampler(NoFilters(static_cast<float>(temperature), 2024), 8);
    std::vector<double> observed(8, 0.0);
    for (int i = 0; i < draws; ++i) observed[static_cast<size_t>(s.Sample(logits))] += 1.0;
    std::vector<double> expected = Softmax(logits, temperature);
    for (double& e : expected) e *= draws;
    EXPECT_LT(ChiSquare(observed, expected), bound) << "temperature " << temperature;

    // The bound is discriminating: a sampler ignoring the logits (uniform
    // counts) would be far outside it.
    const std::vector<double> uniform(8, draws / 8.0);
    EXPECT_GT(ChiSquare(uniform, expected), 100 * bound);
  }
}

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedDiffers) {
  std::mt19937 gen(3);
  const std::vector<float> logits = RandomLogits(gen, 100, 1.0f);
  SamplingParams p = NoFilters(1.0f, 77);
  Sampler a = MakeSampler(p, 100), b = MakeSampler(p, 100);
  p.seed = 78;
  Sampler c = MakeSampler(p, 100);
  int differences = 0;
  for (int i = 0; i < 200; ++i) {
    const int32_t t = a.Sample(logits);
    EXPECT_EQ(t, b.Sample(logits));
    differences += t != c.Sample(logits);
  }
  EXPECT_GT(differences, 0);
}

// Logits that depend on the step, as a model's would.
std::vector<float> StepLogits(int step, size_t n_vocab) {
  std::mt19937 gen(static_cast<uint32_t>(1000 + step));
  return RandomLogits(gen, n_vocab, 2.0f);
}

std::vector<int32_t> Generate(Sampler& s, int first_step, int steps) {
  std::vector<int32_t> out;
  for (int i = 0; i < steps; ++i) {
    const int32_t t = s.Sample(StepLogits(first_step + i, static_cast<size_t>(s.n_vocab())));
    s.Accept(t);
    out.push_back(t);
  }
  return out;
}

TEST(SamplerTest, StateRestoreGivesIdenticalContinuation) {
  SamplingParams p;  // defaults: top-k, top-p, min-p active
  p.temperature = 1.2f;
  p.repeat_penalty = 1.3f;
  p.repeat_last_n = 8;
  p.seed = 5;
  Sampler a = MakeSampler(p, 300);
  Generate(a, 0, 25);  // wraps the penalty ring several times
  const SamplerState snapshot = a.state();
  EXPECT_EQ(snapshot.recent_tokens.size(), 8u);
  const std::vector<int32_t> continuation = Generate(a, 25, 60);

  p.seed = 999;  // the snapshot, not the seed, must decide the stream
  Sampler b = MakeSampler(p, 300);
  Generate(b, 100, 3);
  b.set_state(snapshot);
  EXPECT_EQ(b.state(), snapshot);
  EXPECT_EQ(Generate(b, 25, 60), continuation);
}

// Greedy over fixed logits, so only the penalties change the choice.
std::vector<int32_t> GreedyRun(const SamplingParams& p, const std::vector<float>& logits, int steps) {
  Sampler s = MakeSampler(p, static_cast<int32_t>(logits.size()));
  for (int i = 0; i < 5; ++i) s.Accept(0);  // prompt tokens: never penalized
  std::vector<int32_t> out;
  for (int i = 0; i < steps; ++i) {
    out.push_back(s.Sample(logits));
    s.Accept(out.back());
  }
  return out;
}

TEST(SamplerTest, PresencePenaltyCountsGeneratedTokensOnce) {
  const std::vector<float> logits = {3.0f, 2.0f, 1.5f, 0.0f};
  SamplingParams p = NoFilters(0.0f);
  EXPECT_EQ(GreedyRun(p, logits, 3), (std::vector<int32_t>{0, 0, 0}));
  p.presence_penalty = 2.0f;
  // 0 (3) -> 1 (2 beats 3-2) -> 2 (1.5 beats 1 and 0) -> 0 (3-2 = 1 beats 0, -0.5, 0) -> 0 again.
  EXPECT_EQ(GreedyRun(p, logits, 5), (std::vector<int32_t>{0, 1, 2, 0, 0}));
}

TEST(SamplerTest, FrequencyPenaltyGrowsWithEachRepeat) {
  const std::vector<float> logits = {3.0f, 1.6f, 0.0f};
  SamplingParams p = NoFilters(0.0f);
  p.frequency_penalty = 0.5f;
  // 0 stays best while 3 - 0.5 n > 1.6, i.e. for n = 0, 1, 2; then 1 (1.6 > 1.5).
  EXPECT_EQ(GreedyRun(p, logits, 4), (std::vector<int32_t>{0, 0, 0, 1}));
}

TEST(SamplerTest, PenaltyCountsSurviveStateRestore) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.presence_penalty = 1.5f;
  p.frequency_penalty = 0.7f;
  p.seed = 11;
  Sampler a = MakeSampler(p, 50);
  const std::vector<int32_t> first = Generate(a, 0, 30);
  const SamplerState snapshot = a.state();
  EXPECT_EQ(snapshot.generated, first);
  const std::vector<int32_t> continuation = Generate(a, 30, 40);
  Sampler b = MakeSampler(p, 50);
  b.set_state(snapshot);
  EXPECT_EQ(b.state(), snapshot);
  EXPECT_EQ(Generate(b, 30, 40), continuation);
}

TEST(SamplerTest, StateListsRecentTokensOldestFirst) {
  SamplingParams p = NoFilters(1.0f);
  p.repeat_last_n = 3;
  Sampler s = MakeSampler(p, 10);
  s.Accept(1);
  s.Accept(2);
  EXPECT_EQ(s.state().recent_tokens, (std::vector<int32_t>{1, 2}));
  s.Accept(3);
  s.Accept(4);
  s.Accept(5);
  EXPECT_EQ(s.state().recent_tokens, (std::vector<int32_t>{3, 4, 5}));
  SamplerState st = s.state();
  st.recent_tokens = {9, 8, 7, 6};
  s.set_state(st);
  EXPECT_EQ(s.state().recent_tokens, (std::vector<int32_t>{8, 7, 6}));
}

TEST(SamplerTest, RepetitionPenaltyChangesGreedyChoiceAsDefined) {
  SamplingParams p = NoFilters(0.0f);
  p.repeat_penalty = 1.2f;
  p.repeat_last_n = 2;
  Sampler s = MakeSampler(p, 4);
  // Positive: 2.0 / 1.2 = 1.667 falls below 1.8.
  const std::vector<float> positive = {2.0f, 1.8f, -5.0f, -5.0f};
  EXPECT_EQ(s.Sample(positive), 0);
  s.Accept(0);
  EXPECT_EQ(s.Sample(positive), 1);
  std::span<const Candidate> kept = s.Filter(positive);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].logit, 1.8f);

  // Negative: -1.0 * 1.2 = -1.2 falls below -1.1.
  const std::vector<float> negative = {-1.0f, -1.1f, -5.0f, -5.0f};
  EXPECT_EQ(s.Sample(negative), 1);

  // Two more tokens push 0 out of the two-token window.
  s.Accept(2);
  s.Accept(3);
  EXPECT_EQ(s.Sample(positive), 0);
}

TEST(SamplerTest, RepetitionPenaltyAppliesOncePerDistinctToken) {
  SamplingParams p = NoFilters(0.0f);
  p.repeat_penalty = 1.2f;
  Sampler s = MakeSampler(p, 2);
  s.Accept(0);
  s.Accept(0);
  s.Accept(0);
  // Once: 2.0 / 1.2 = 1.667 > 1.6. Compounded it would be 1.157 < 1.6.
  EXPECT_EQ(s.Sample(std::vector<float>{2.0f, 1.6f}), 0);
}

TEST(SamplerTest, RepetitionPenaltyFeedsTheWholeChain) {
  SamplingParams p = NoFilters(1.0f);
  p.repeat_penalty = 2.0f;
  p.top_k = 1;
  Sampler s = MakeSampler(p, 3);
  s.Accept(0);
  // 3.0 -> 1.5 < 2.0, so top-1 is id 1.
  EXPECT_EQ(s.Sample(std::vector<float>{3.0f, 2.0f, 0.0f}), 1);
}

TEST(SamplerTest, LargeVocabSamplesFromTheTopK) {
  std::mt19937 gen(99);
  const std::vector<float> logits = RandomLogits(gen, 150000, 3.0f);
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const float kth = sorted[39];
  Sampler s = MakeSampler(SamplingParams{}, 150000);
  for (int i = 0; i < 20; ++i) {
    const int32_t t = s.Sample(logits);
    ASSERT_GE(t, 0);
    ASSERT_LT(t, 150000);
    EXPECT_GE(logits[static_cast<size_t>(t)], kth);
  }
}

TEST(SamplerTest, InvalidParamsAreRejected) {
  auto rejected = [](SamplingParams p, int32_t n_vocab = 10) {
    Result<Sampler> s = Sampler::Create(p, n_vocab);
    return !s.ok() && s.status().code() == StatusCode::kInvalidArgument;
  };
  SamplingParams ok;
  EXPECT_TRUE(Sampler::Create(ok, 10).ok());
  EXPECT_TRUE(rejected(ok, 0));
  EXPECT_TRUE(rejected(ok, -5));
  SamplingParams p = ok;
  p.top_p = NAN;
  EXPECT_TRUE(rejected(p));
  p.top_p = -0.1f;
  EXPECT_TRUE(rejected(p));
  p.top_p = 1.01f;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.min_p = -0.01f;
  EXPECT_TRUE(rejected(p));
  p.min_p = 1.5f;
  EXPECT_TRUE(rejected(p));
  p.min_p = NAN;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.top_k = -1;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.repeat_penalty = 0.0f;
  EXPECT_TRUE(rejected(p));
  p.repeat_penalty = -1.0f;
  EXPECT_TRUE(rejected(p));
  p.repeat_penalty = NAN;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.temperature = NAN;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.repeat_last_n = -1;
  EXPECT_TRUE(rejected(p));
  for (float bad : {2.5f, -2.01f, NAN}) {
    p = ok;
    p.presence_penalty = bad;
    EXPECT_TRUE(rejected(p)) << bad;
    p = ok;
    p.frequency_penalty = bad;
    EXPECT_TRUE(rejected(p)) << bad;
  }
}

}  // namespace
}  // namespace valet
