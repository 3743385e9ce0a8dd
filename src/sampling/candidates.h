// The candidate list a sampling chain narrows down, and the chain's steps as
// free functions so each can be tested on hand-made distributions. Semantics
// follow llama.cpp's samplers of the same names; every step keeps at least one
// candidate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace valet {

struct Candidate {
  int32_t id = 0;
  float logit = 0.0f;
  float p = 0.0f;  // filled by ApplySoftmax / KeepArgmax
};

// `sorted` records that `items` is in descending logit order (ties by ascending
// id), so later steps skip re-sorting. The vector is reused across calls so a
// sampler allocates only on its first use.
struct CandidateList {
  std::vector<Candidate> items;
  bool sorted = false;
  std::vector<float> scratch;  // reused by ApplyTopK's selection heap

  // Rebuilds the list in id order from raw logits. NaN logits become -inf so
  // one bad value cannot poison the softmax.
  void Reset(std::span<const float> logits);
};

// "Better" order used by every step: higher logit first, then lower id, so
// results never depend on the unstable order of nth_element or sort.
// Inline because it is the comparator of every sort and selection.
inline bool CandidateBefore(const Candidate& a, const Candidate& b) {
  if (a.logit != b.logit) return a.logit > b.logit;
  return a.id < b.id;
}

// llama.cpp's repetition rule: a positive logit is divided by `penalty`, any
// other is multiplied by it; once per token however often it occurred.
// Precondition: `list` is still in id order (right after Reset) and
// `distinct_tokens` holds no duplicates. Ids outside the list are ignored.
void ApplyRepetitionPenalty(CandidateList& list, std::span<const int32_t> distinct_tokens,
                            float penalty);

struct TokenCount {
  int32_t token = 0;
  int32_t count = 0;
};

// OpenAI's presence and frequency penalties: each listed token's logit drops
// by presence (it occurred) plus frequency times its count. Precondition:
// `list` is still in id order. Ids outside the list are ignored.
void ApplyOccurrencePenalties(CandidateList& list, std::span<const TokenCount> counts, float presence,
                              float frequency);

// Keeps the k best (k <= 0 disables) and leaves them sorted; for small k one
// cheap scan with a k-element heap, then a sort of only the k survivors.
// Ties at the cut go to the lowest ids (an unsorted list is in id order).
void ApplyTopK(CandidateList& list, int32_t k);

// Nucleus: keeps the shortest best-first prefix whose softmax mass (over the
// current logits) reaches p; p >= 1 disables. A mass histogram over logit
// buckets locates the nucleus, so only it (plus one bucket) is sorted:
// O(n + m log m) for a nucleus of m.
void ApplyTopP(CandidateList& list, float p);

// Keeps candidates whose probability is at least min_p times the best one's,
// i.e. logit >= max_logit + log(min_p); min_p <= 0 disables. Keeps order.
void ApplyMinP(CandidateList& list, float min_p);

// Divides logits by a positive temperature.
void ApplyTemperature(CandidateList& list, float temperature);

// Fills p with the softmax of the logits.
void ApplySoftmax(CandidateList& list);

// Greedy: keeps only the best candidate (lowest id among ties), with p = 1.
void KeepArgmax(CandidateList& list);

// Index of the candidate whose cumulative-p interval contains u * sum(p), for u
// in [0, 1). Precondition: non-empty list with p filled.
size_t DrawIndex(const CandidateList& list, double u);

}  // namespace valet
