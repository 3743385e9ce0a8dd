// BatchPolicy, PreemptionController and the chat template.
#include <gtest/gtest.h>

#include "sched/batch_policy.h"
#include "sched/chat_template.h"
#include "sched/fake_engine.h"
#include "sched/preemption_controller.h"

namespace valet {
namespace {

TEST(BatchPolicy, StrictNeverAddsRiders) {
  BatchPolicy p(BatchMode::kStrict, 1.0);
  p.ObserveDecodeStep(1, 0.01);
  EXPECT_EQ(p.Plan({true, 5, 100}), 0);
}

TEST(BatchPolicy, FillMeasuresThenStaysWithinTheCostFraction) {
  BatchPolicy p(BatchMode::kFill, 0.25);
  EXPECT_EQ(p.Plan({true, 5, 100}), 0);  // nothing measured yet
  p.ObserveDecodeStep(1, 0.010);
  EXPECT_EQ(p.Plan({false, 5, 100}), 0);  // not a decode step of the lead
  EXPECT_EQ(p.Plan({true, 5, 100}), 1);   // one probe
  p.ObserveDecodeStep(2, 0.011);          // marginal 1 ms = 10% of a solo step
  EXPECT_NEAR(p.marginal_seconds(), 0.001, 1e-12);
  EXPECT_EQ(p.Plan({true, 5, 100}), 2);  // 2 x 10% <= 25%
  EXPECT_EQ(p.Plan({true, 1, 100}), 1);
  EXPECT_EQ(p.Plan({true, 5, 1}), 1);
  p.ObserveDecodeStep(2, 0.019);  // marginal now (1 + 9) / 2 = 5 ms
  EXPECT_EQ(p.Plan({true, 5, 100}), 0);
}

TEST(PreemptionController, ResidentWithoutPressureEngineAdviceWithIt) {
  FakeEngineOptions o;
  o.kv_bytes_per_token = 1000;
  FakeEngine engine(o);
  Result<SequenceId> seq = engine.OpenSequence({});
  ASSERT_TRUE(seq.ok());
  std::vector<int32_t> tokens(100, 5);
  StepItem item{*seq, tokens, 0, false};
  ASSERT_TRUE(engine.Step({&item, 1}).ok());
  PreemptionController automatic(ParkPolicy::kAuto);
  EXPECT_EQ(automatic.Decide(engine, {*seq, ParkReason::kPreempted, 0}), ParkKind::kResident);
  EXPECT_EQ(automatic.Decide(engine, {*seq, ParkReason::kPreempted, 4096}), engine.AdvisePark(*seq, 4096));
  EXPECT_NE(automatic.Decide(engine, {*seq, ParkReason::kPressure, 0}), ParkKind::kResident);
  EXPECT_EQ(automatic.Decide(engine, {*seq, ParkReason::kDestroy, 0}), ParkKind::kSnapshotDisk);
  PreemptionController forced(ParkPolicy::kForcePartial);
  EXPECT_EQ(forced.Decide(engine, {*seq, ParkReason::kPreempted, 0}), ParkKind::kPartial);
  PreemptionController resident(ParkPolicy::kForceResident);
  EXPECT_NE(resident.Decide(engine, {*seq, ParkReason::kPressure, 10}), ParkKind::kResident);
}

TEST(ChatTemplate, RendersThePlainTemplate) {
  Result<RenderedPrompt> r = RenderChat("Be brief.", {{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Sum?"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->shared, "Be brief.\n\n");
  EXPECT_EQ(r->own, "User: Hi\nAssistant: Hello\nUser: Sum?\nAssistant:");
  Result<RenderedPrompt> no_system = RenderChat("", {{"user", "x"}});
  ASSERT_TRUE(no_system.ok());
  EXPECT_EQ(no_system->shared, "");
  EXPECT_EQ(RenderChat("", {{"robot", "x"}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RenderChat("", {{"user", ""}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RenderRaw("S", "p").shared, "S\n\n");
}

}  // namespace
}  // namespace valet
