#include "testing/sched/fake_engine.h"

#include <gtest/gtest.h>

#include "sched_test_util.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;

// Prefills `prompt` then decodes `n` tokens, parking with `kind` after each
// decode step; returns the sampled tokens.
std::vector<int32_t> RunWithParks(FakeEngine& e, const SequenceSpec& spec, const std::vector<int32_t>& prompt,
                                  int n, std::optional<ParkKind> kind) {
  Result<SequenceId> seq = e.OpenSequence(spec);
  EXPECT_TRUE(seq.ok());
  std::vector<int32_t> out;
  Result<SequenceInfo> info = e.Info(*seq);
  if (info->pending_recompute > 0) {
    StepItem r{*seq, {}, info->pending_recompute, false};
    EXPECT_TRUE(e.Step({&r, 1}).ok());
  }
  StepItem first{*seq, prompt, 0, true};
  Result<StepResult> step = e.Step({&first, 1});
  EXPECT_TRUE(step.ok());
  int32_t token = step->outputs[0].token;
  out.push_back(token);
  while (static_cast<int>(out.size()) < n) {
    if (kind) {
      EXPECT_TRUE(e.Park(*seq, *kind).ok());
      Result<ResumeReport> resumed = e.Resume(*seq);
      EXPECT_TRUE(resumed.ok());
      if (resumed->tokens_to_recompute > 0) {
        StepItem r{*seq, {}, resumed->tokens_to_recompute, false};
        EXPECT_TRUE(e.Step({&r, 1}).ok());
      }
    }
    StepItem d{*seq, {&token, 1}, 0, true};
    step = e.Step({&d, 1});
    EXPECT_TRUE(step.ok());
    token = step->outputs[0].token;
    out.push_back(token);
  }
  EXPECT_TRUE(e.CloseSequence(*seq).ok());
  return out;
}

TEST(FakeEngine, OutputIsAPureFunctionOfHistoryWhateverTheParkKind) {
  FakeEngine e;
  SequenceSpec spec;
  spec.shared_prefix = e.Tokenize("system", true);
  spec.sampling.seed = 99;
  const std::vector<int32_t> prompt = e.Tokenize(" hello", false);
  std::vector<int32_t> history = spec.shared_prefix;
  history.insert(history.end(), prompt.begin(), prompt.end());
  const std::vector<int32_t> expected = ExpectedAlone(e, history, 99, 12);
  EXPECT_EQ(RunWithParks(e, spec, prompt, 12, std::nullopt), expected);
  for (ParkKind k : {ParkKind::kResident, ParkKind::kSnapshotRam, ParkKind::kSnapshotDisk, ParkKind::kPartial,
                     ParkKind::kFull}) {
    EXPECT_EQ(RunWithParks(e, spec, prompt, 12, k), expected) << static_cast<int>(k);
  }
  EXPECT_EQ(e.open_sequences(), 0u);
}

TEST(FakeEngine, SharedPrefixIsComputedOnceAndPartialKeepsIt) {
  FakeEngine e;
  SequenceSpec spec;
  spec.shared_prefix = e.Tokenize("shared system prompt", true);
  const int32_t n = static_cast<int32_t>(spec.shared_prefix.size());
  Result<SequenceId> a = e.OpenSequence(spec);
  EXPECT_EQ(e.Info(*a)->pending_recompute, n);
  StepItem r{*a, {}, n, false};
  ASSERT_TRUE(e.Step({&r, 1}).ok());
  Result<SequenceId> b = e.OpenSequence(spec);
  EXPECT_EQ(e.Info(*b)->pending_recompute, 0);
  EXPECT_EQ(e.Info(*b)->n_shared, n);
  std::vector<int32_t> own(10, 40);
  StepItem s{*b, own, 0, false};
  ASSERT_TRUE(e.Step({&s, 1}).ok());
  Result<ParkReport> park = e.Park(*b, ParkKind::kPartial);
  ASSERT_TRUE(park.ok());
  EXPECT_EQ(park->tokens_dropped, 10);
  EXPECT_EQ(e.Resume(*b)->tokens_to_recompute, 10);
}

TEST(FakeEngine, RejectsMalformedStepsAndRunsOutOfPool) {
  FakeEngineOptions o;
  o.kv_bytes_per_token = 100;
  o.pool_capacity_bytes = 1000;
  FakeEngine e(o);
  Result<SequenceId> seq = e.OpenSequence({});
  std::vector<int32_t> big(11, 5);
  StepItem too_big{*seq, big, 0, false};
  EXPECT_EQ(e.Step({&too_big, 1}).status().code(), StatusCode::kResourceExhausted);
  StepItem both{*seq, big, 1, false};
  EXPECT_EQ(e.Step({&both, 1}).status().code(), StatusCode::kInvalidArgument);
  StepItem ok{*seq, std::span<const int32_t>(big.data(), 10), 0, false};
  EXPECT_TRUE(e.Step({&ok, 1}).ok());
  ASSERT_TRUE(e.Park(*seq, ParkKind::kResident).ok());
  StepItem parked{*seq, std::span<const int32_t>(big.data(), 1), 0, true};
  EXPECT_EQ(e.Step({&parked, 1}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.Park(*seq, ParkKind::kPartial).status().code(), StatusCode::kInvalidArgument);
  // kFull on a parked sequence drops what it still holds (the last resort).
  Result<ParkReport> dropped = e.Park(*seq, ParkKind::kFull);
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(dropped->tokens_dropped, 10);
  EXPECT_EQ(e.Info(*seq)->pending_recompute, 10);
  EXPECT_EQ(e.memory().pool_used_bytes, 0u);
}

}  // namespace
}  // namespace valet
