#include "sampling/candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace valet {
namespace {

std::vector<float> LogitsFromProbs(const std::vector<float>& probs) {
  std::vector<float> logits;
  for (float p : probs) logits.push_back(std::log(p));
  return logits;
}

std::set<int32_t> Ids(const CandidateList& list) {
  std::set<int32_t> ids;
  for (const Candidate& c : list.items) ids.insert(c.id);
  return ids;
}

// Probabilities deliberately not in id order, so the steps must sort.
const std::vector<float> kProbs = {0.06f, 0.3f, 0.04f, 0.5f, 0.1f};
// Best-first: id3 0.5, id1 0.3, id4 0.1, id0 0.06, id2 0.04.

CandidateList ListOf(const std::vector<float>& logits) {
  CandidateList list;
  list.Reset(logits);
  return list;
}

TEST(CandidatesTest, ResetKeepsIdOrderAndMapsNanToNegInf) {
  CandidateList list = ListOf({1.0f, NAN, -2.0f});
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_FALSE(list.sorted);
  EXPECT_EQ(list.items[1].id, 1);
  EXPECT_EQ(list.items[1].logit, -INFINITY);
  EXPECT_EQ(list.items[2].logit, -2.0f);
}

TEST(CandidatesTest, TopKKeepsBestSortedWithTiesToLowestId) {
  CandidateList list = ListOf({1.0f, 3.0f, 2.0f, 3.0f, 2.0f, 0.0f});
  ApplyTopK(list, 3);
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_TRUE(list.sorted);
  EXPECT_EQ(list.items[0].id, 1);
  EXPECT_EQ(list.items[1].id, 3);
  EXPECT_EQ(list.items[2].id, 2);
}

TEST(CandidatesTest, TopKOnAWideListKeepsTiesAtTheCutToLowestIds) {
  // k much smaller than the list takes the heap-selection path.
  std::vector<float> logits(200, 0.0f);
  logits[150] = 5.0f;
  logits[40] = 2.0f;
  logits[7] = 2.0f;
  logits[90] = 2.0f;
  logits[3] = 1.0f;
  CandidateList list = ListOf(logits);
  ApplyTopK(list, 3);
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.items[0].id, 150);
  EXPECT_EQ(list.items[1].id, 7);
  EXPECT_EQ(list.items[2].id, 40);

  list = ListOf(logits);
  ApplyTopK(list, 6);  // 0.0 ties at the cut: the lowest such id is 0
  ASSERT_EQ(list.items.size(), 6u);
  EXPECT_EQ(list.items[4].id, 3);
  EXPECT_EQ(list.items[5].id, 0);
}

TEST(CandidatesTest, TopKZeroOrLargerThanVocabKeepsAll) {
  CandidateList list = ListOf({1.0f, 2.0f});
  ApplyTopK(list, 0);
  EXPECT_EQ(list.items.size(), 2u);
  ApplyTopK(list, 10);
  EXPECT_EQ(list.items.size(), 2u);
}

TEST(CandidatesTest, TopPKeepsShortestPrefixReachingMass) {
  // Cumulative best-first mass: 0.5, 0.8, 0.9, 0.96, 1.0.
  struct Case {
    float p;
    std::set<int32_t> expected;
  };
  const std::vector<Case> cases = {
      {0.0f, {3}}, {0.4f, {3}}, {0.75f, {3, 1}}, {0.85f, {3, 1, 4}}, {0.93f, {3, 1, 4, 0}},
      {0.99f, {3, 1, 4, 0, 2}}, {1.0f, {0, 1, 2, 3, 4}}};
  for (const Case& c : cases) {
    CandidateList list = ListOf(LogitsFromProbs(kProbs));
    ApplyTopP(list, c.p);
    EXPECT_EQ(Ids(list), c.expected) << "p=" << c.p;
  }
}

TEST(CandidatesTest, TopPUsesMassOfCurrentCandidatesAfterTopK) {
  // After top-k 2 the survivors are 0.5 and 0.3, i.e. 0.625 and 0.375.
  CandidateList list = ListOf(LogitsFromProbs(kProbs));
  ApplyTopK(list, 2);
  ApplyTopP(list, 0.6f);
  EXPECT_EQ(Ids(list), (std::set<int32_t>{3}));
  list = ListOf(LogitsFromProbs(kProbs));
  ApplyTopK(list, 2);
  ApplyTopP(list, 0.65f);
  EXPECT_EQ(Ids(list), (std::set<int32_t>{3, 1}));
}

TEST(CandidatesTest, TopPOnLargeUnsortedVocabMatchesFullSortReference) {
  // Flat-ish logits make the nucleus span several of the growing sort chunks.
  std::mt19937 gen(123);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> logits(5000);
  for (float& l : logits) l = dist(gen);

  for (float p : {0.01f, 0.05f, 0.3f, 0.9f}) {
    std::vector<int32_t> order(logits.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    double total = 0.0;
    for (float l : logits) total += std::exp(static_cast<double>(l));
    std::set<int32_t> expected;
    double cumulative = 0.0;
    for (int32_t id : order) {
      expected.insert(id);
      cumulative += std::exp(static_cast<double>(logits[id]));
      if (cumulative >= p * total) break;
    }
    ASSERT_GT(expected.size(), 1u);

    CandidateList list = ListOf(logits);
    ApplyTopP(list, p);
    EXPECT_EQ(Ids(list), expected) << "p=" << p;
    EXPECT_TRUE(std::is_sorted(list.items.begin(), list.items.end(), CandidateBefore));
  }
}

TEST(CandidatesTest, TopPWithEqualOrInfiniteLogits) {
  // Four equal candidates: 0.25 each, so p = 0.6 needs three (lowest ids).
  CandidateList list = ListOf({1.0f, 1.0f, 1.0f, 1.0f});
  ApplyTopP(list, 0.6f);
  EXPECT_EQ(Ids(list), (std::set<int32_t>{0, 1, 2}));
  // -inf candidates carry no mass and are never needed.
  std::vector<float> logits(100, -INFINITY);
  logits[10] = 0.0f;
  logits[20] = std::log(3.0f);  // 0.75 of the mass
  list = ListOf(logits);
  ApplyTopP(list, 0.7f);
  EXPECT_EQ(Ids(list), (std::set<int32_t>{20}));
  list = ListOf(logits);
  ApplyTopP(list, 0.8f);
  EXPECT_EQ(Ids(list), (std::set<int32_t>{10, 20}));
}

TEST(CandidatesTest, MinPKeepsThoseAtLeastMinPTimesTheBest) {
  // Relative to the best (0.5): 1, 0.6, 0.2, 0.12, 0.08.
  struct Case {
    float min_p;
    std::set<int32_t> expected;
  };
  const std::vector<Case> cases = {{0.0f, {0, 1, 2, 3, 4}}, {0.05f, {0, 1, 2, 3, 4}},
                                   {0.1f, {0, 1, 3, 4}},    {0.15f, {1, 3, 4}},
                                   {0.5f, {1, 3}},          {0.7f, {3}},
                                   {1.0f, {3}}};
  for (const Case& c : cases) {
    CandidateList list = ListOf(LogitsFromProbs(kProbs));
    ApplyMinP(list, c.min_p);
    EXPECT_EQ(Ids(list), c.expected) << "min_p=" << c.min_p;
  }
}

TEST(CandidatesTest, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  CandidateList list = ListOf({2.0f, -1.0f, 0.5f, 3.0f});
  const std::vector<int32_t> tokens = {0, 1, 7 /* out of range: ignored */};
  ApplyRepetitionPenalty(list, tokens, 2.0f);
  EXPECT_EQ(list.items[0].logit, 1.0f);
  EXPECT_EQ(list.items[1].logit, -2.0f);
  EXPECT_EQ(list.items[2].logit, 0.5f);
  EXPECT_EQ(list.items[3].logit, 3.0f);
}

TEST(CandidatesTest, OccurrencePenaltiesSubtractPresenceOnceAndFrequencyPerCount) {
  CandidateList list = ListOf({2.0f, -1.0f, 0.5f, 3.0f});
  const std::vector<TokenCount> counts = {{1, 3}, {3, 1}, {9, 4} /* out of range: ignored */};
  ApplyOccurrencePenalties(list, counts, 0.5f, 0.25f);
  EXPECT_EQ(list.items[0].logit, 2.0f);
  EXPECT_EQ(list.items[1].logit, -1.0f - 0.5f - 3 * 0.25f);
  EXPECT_EQ(list.items[2].logit, 0.5f);
  EXPECT_EQ(list.items[3].logit, 3.0f - 0.5f - 0.25f);
  ApplyOccurrencePenalties(list, counts, -1.0f, 0.0f);  // negative: encourages repeats
  EXPECT_EQ(list.items[3].logit, 3.0f - 0.5f - 0.25f + 1.0f);
}

TEST(CandidatesTest, SoftmaxAndTemperature) {
  CandidateList list = ListOf({0.0f, std::log(3.0f)});
  ApplySoftmax(list);
  EXPECT_NEAR(list.items[0].p, 0.25f, 1e-6f);
  EXPECT_NEAR(list.items[1].p, 0.75f, 1e-6f);
  ApplyTemperature(list, 0.5f);  // doubles logits: odds 1:9
  ApplySoftmax(list);
  EXPECT_NEAR(list.items[0].p, 0.1f, 1e-6f);
  EXPECT_NEAR(list.items[1].p, 0.9f, 1e-6f);
}

TEST(CandidatesTest, SoftmaxWithInfiniteLogitsStaysFinite) {
  CandidateList list = ListOf({-INFINITY, -INFINITY});
  ApplySoftmax(list);
  EXPECT_FLOAT_EQ(list.items[0].p, 0.5f);
  list = ListOf({1.0f, INFINITY, -INFINITY});
  ApplySoftmax(list);
  EXPECT_FLOAT_EQ(list.items[1].p, 1.0f);
  EXPECT_FLOAT_EQ(list.items[0].p, 0.0f);
}

TEST(CandidatesTest, KeepArgmaxTiesToLowestId) {
  CandidateList list = ListOf({1.0f, 4.0f, 2.0f, 4.0f});
  KeepArgmax(list);
  ASSERT_EQ(list.items.size(), 1u);
  EXPECT_EQ(list.items[0].id, 1);
  EXPECT_EQ(list.items[0].p, 1.0f);
}

TEST(CandidatesTest, DrawIndexWalksCumulativeProbability) {
  CandidateList list;
  list.items = {{5, 0.0f, 0.25f}, {6, 0.0f, 0.0f}, {7, 0.0f, 0.75f}};
  EXPECT_EQ(DrawIndex(list, 0.0), 0u);
  EXPECT_EQ(DrawIndex(list, 0.2499), 0u);
  EXPECT_EQ(DrawIndex(list, 0.25), 2u);  // the zero-mass candidate is never drawn
  EXPECT_EQ(DrawIndex(list, 0.9999999), 2u);
}

}  // namespace
}  // namespace valet
