#include "sampling/candidates.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>

namespace valet {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float MaxLogit(const CandidateList& list) {
  if (list.sorted) return list.items.front().logit;
  float max = kNegInf;
  for (const Candidate& c : list.items) max = std::max(max, c.logit);
  return max;
}

// exp(logit - max), defined even when max is infinite: then only the
// candidates equal to max carry weight, all equally.
float Weight(float logit, float max) {
  if (std::isfinite(max)) return std::exp(logit - max);
  return logit == max ? 1.0f : 0.0f;
}

// Sets each p to its unnormalized weight and returns their sum.
double FillWeights(CandidateList& list) {
  const float max = MaxLogit(list);
  double total = 0.0;
  for (Candidate& c : list.items) {
    c.p = Weight(c.logit, max);
    total += c.p;
  }
  return total;
}

// Moves the best `count` of items[begin, end) to [begin, begin + count), sorted.
void SortBestPrefix(std::vector<Candidate>& items, size_t begin, size_t count) {
  auto first = items.begin() + static_cast<ptrdiff_t>(begin);
  auto mid = first + static_cast<ptrdiff_t>(count);
  if (mid < items.end()) std::nth_element(first, mid, items.end(), CandidateBefore);
  std::sort(first, mid, CandidateBefore);
}

// Shrinks an id-ordered list to its best `keep` candidates (order kept). A
// min-heap of the best logits seen rejects almost every candidate with one
// comparison, far cheaper than nth_element over 150k structs.
void KeepBestUnsorted(CandidateList& list, size_t keep) {
  std::vector<float>& heap = list.scratch;
  heap.clear();
  for (const Candidate& c : list.items) {
    if (heap.size() < keep) {
      heap.push_back(c.logit);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    } else if (c.logit > heap.front()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.back() = c.logit;
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  }
  const float threshold = heap.front();
  const size_t above = static_cast<size_t>(
      std::count_if(heap.begin(), heap.end(), [threshold](float l) { return l > threshold; }));
  // Ties at the threshold go to the lowest ids, which the id-order scan meets first.
  size_t ties_left = keep - above;
  size_t out = 0;
  for (const Candidate& c : list.items) {
    const bool tie = c.logit == threshold && ties_left > 0;
    if (c.logit > threshold || tie) {
      list.items[out++] = c;
      ties_left -= tie ? 1 : 0;
    }
  }
  assert(out == keep);
  list.items.resize(keep);
}

// Reorders items so that a best-first prefix [0, end) holds the nucleus (the
// shortest best-first run whose weights, already in p, reach `target`), sorts
// that prefix and returns end. A mass histogram over logit buckets finds the
// bucket where the nucleus ends in one pass, so only candidates in and above
// it are moved and sorted, rather than the whole vocabulary.
size_t SortNucleusPrefix(std::vector<Candidate>& items, double target) {
  constexpr int kBuckets = 512;
  // Weights below exp(-kMaxSpan) of the best all share the last bucket.
  constexpr float kMaxSpan = 40.0f;
  float max = -std::numeric_limits<float>::infinity();
  float min = std::numeric_limits<float>::infinity();
  for (const Candidate& c : items) {
    if (!std::isfinite(c.logit)) continue;
    max = std::max(max, c.logit);
    min = std::min(min, c.logit);
  }
  const float span = std::min(max - min, kMaxSpan);
  if (!(span > 0.0f)) {  // no spread to bucket by (or no finite logits)
    std::sort(items.begin(), items.end(), CandidateBefore);
    return items.size();
  }
  const float scale = kBuckets / span;
  auto bucket = [&](float logit) {
    if (!(logit >= max - span)) return logit > max ? 0 : kBuckets - 1;  // +inf, -inf
    return std::min(kBuckets - 1, static_cast<int>((max - logit) * scale));
  };
  std::array<double, kBuckets> mass{};
  for (const Candidate& c : items) mass[static_cast<size_t>(bucket(c.logit))] += c.p;
  int last = 0;
  for (double cumulative = 0.0; last < kBuckets - 1; ++last) {
    cumulative += mass[static_cast<size_t>(last)];
    if (cumulative >= target) break;
  }
  auto end = std::partition(items.begin(), items.end(),
                            [&](const Candidate& c) { return bucket(c.logit) <= last; });
  std::sort(items.begin(), end, CandidateBefore);
  return static_cast<size_t>(end - items.begin());
}

}  // namespace

void CandidateList::Reset(std::span<const float> logits) {
  items.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    items[i] = Candidate{static_cast<int32_t>(i), std::isnan(l) ? kNegInf : l, 0.0f};
  }
  sorted = false;
}

void ApplyRepetitionPenalty(CandidateList& list, std::span<const int32_t> distinct_tokens,
                            float penalty) {
  if (penalty == 1.0f) return;
  assert(!list.sorted && "repetition penalty indexes candidates by id");
  for (int32_t token : distinct_tokens) {
    if (token < 0 || static_cast<size_t>(token) >= list.items.size()) continue;
    Candidate& c = list.items[static_cast<size_t>(token)];
    assert(c.id == token);
    c.logit = c.logit > 0.0f ? c.logit / penalty : c.logit * penalty;
  }
}

void ApplyOccurrencePenalties(CandidateList& list, std::span<const TokenCount> counts, float presence,
                              float frequency) {
  if (presence == 0.0f && frequency == 0.0f) return;
  assert(!list.sorted && "occurrence penalties index candidates by id");
  for (const TokenCount& tc : counts) {
    if (tc.count <= 0 || tc.token < 0 || static_cast<size_t>(tc.token) >= list.items.size()) continue;
    Candidate& c = list.items[static_cast<size_t>(tc.token)];
    assert(c.id == tc.token);
    c.logit -= presence + frequency * static_cast<float>(tc.count);
  }
}

void ApplyTopK(CandidateList& list, int32_t k) {
  if (k <= 0 || list.items.empty()) return;
  const size_t keep = std::min(static_cast<size_t>(k), list.items.size());
  if (!list.sorted) {
    // The heap pays off while k is a small fraction of the list.
    if (keep * 16 < list.items.size()) KeepBestUnsorted(list, keep);
    SortBestPrefix(list.items, 0, keep);
  }
  list.items.resize(keep);
  list.sorted = true;
}

void ApplyTopP(CandidateList& list, float p) {
  const size_t n = list.items.size();
  if (p >= 1.0f || n <= 1) return;
  const double target = static_cast<double>(p) * FillWeights(list);
  size_t sorted_end = list.sorted ? n : SortNucleusPrefix(list.items, target);
  double cumulative = 0.0;
  for (size_t i = 0; i < n; ++i) {
    // Summation order differs from the selection's, so rounding may push the
    // cut past the prefix; then sort the rest too.
    if (i == sorted_end) {
      SortBestPrefix(list.items, i, n - i);
      sorted_end = n;
    }
    cumulative += list.items[i].p;
    if (cumulative >= target) {
      list.items.resize(i + 1);
      list.sorted = true;
      return;
    }
  }
  list.sorted = true;  // rounding kept the mass just below target: all stay
}

void ApplyMinP(CandidateList& list, float min_p) {
  if (min_p <= 0.0f || list.items.empty()) return;
  const float max = MaxLogit(list);
  const float threshold = max + std::log(min_p);
  // The best candidate always passes (log(min_p) <= 0), so at least one stays.
  std::erase_if(list.items, [threshold](const Candidate& c) { return c.logit < threshold; });
}

void ApplyTemperature(CandidateList& list, float temperature) {
  assert(temperature > 0.0f);
  for (Candidate& c : list.items) c.logit /= temperature;
}

void ApplySoftmax(CandidateList& list) {
  if (list.items.empty()) return;
  const double total = FillWeights(list);
  const float scale = static_cast<float>(1.0 / total);
  for (Candidate& c : list.items) c.p *= scale;
}

void KeepArgmax(CandidateList& list) {
  if (list.items.empty()) return;
  if (!list.sorted) {
    auto best = std::min_element(list.items.begin(), list.items.end(), CandidateBefore);
    list.items.front() = *best;
  }
  list.items.resize(1);
  list.items.front().p = 1.0f;
  list.sorted = true;
}

size_t DrawIndex(const CandidateList& list, double u) {
  assert(!list.items.empty());
  double total = 0.0;
  for (const Candidate& c : list.items) total += c.p;
  const double target = u * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < list.items.size(); ++i) {
    cumulative += list.items[i].p;
    if (target < cumulative) return i;
  }
  // Only rounding gets here; the last candidate with any mass owns the end.
  size_t last = list.items.size() - 1;
  while (last > 0 && list.items[last].p == 0.0f) --last;
  return last;
}

}  // namespace valet
