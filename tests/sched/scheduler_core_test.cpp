// Deterministic tests of SchedulerCore on the fake engine's virtual clock:
// tier order, FIFO, preemption at step boundaries, parking of every kind,
// never-cancel, app cancel, bad input, observability.
#include "sched/scheduler_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "common/json.h"
#include "sched_test_util.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;
using testing::Harness;

std::string Text(size_t n, char seed) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + (seed + i * 7) % 26));
  return s;
}

TEST(SchedulerCore, RunsTiersInOrderAndFifoWithinATier) {
  Harness h;
  std::vector<TaskId> done_order;
  auto submit = [&](Tier tier, const std::string& prompt) {
    TaskRequest r = h.Request(tier, prompt, 8);
    auto inner = r.callbacks.on_done;
    r.callbacks.on_done = [&, inner](TaskId id, const TaskResult& res) {
      inner(id, res);
      done_order.push_back(id);
    };
    return *h.core.Submit(std::move(r));
  };
  const TaskId a = submit(Tier::kOfflineIndexing, "index me");
  const TaskId b = submit(Tier::kBackgroundSummary, "summarize");
  const TaskId c = submit(Tier::kForegroundChat, "hello");
  const TaskId d = submit(Tier::kForegroundChat, "again");
  const TaskId e = submit(Tier::kInlineSuggestion, "suggest");
  h.core.RunUntilIdle();
  EXPECT_EQ(done_order, (std::vector<TaskId>{c, d, e, b, a}));
  const std::vector<std::pair<TaskId, std::string>> prompts = {
      {a, "index me"}, {b, "summarize"}, {c, "hello"}, {d, "again"}, {e, "suggest"}};
  for (const auto& [id, prompt] : prompts) {
    EXPECT_EQ(h.out[id].tokens, ExpectedAlone(h.engine, prompt, 7, 8)) << id;
    EXPECT_EQ(h.out[id].result->state, TaskState::kDone);
    EXPECT_EQ(h.out[id].result->tokens, h.out[id].tokens);
  }
  EXPECT_EQ(h.engine.open_sequences(), 0u);
}

TEST(SchedulerCore, LeavesNoAbortFlagWithTheEngineAfterAStep) {
  // The engine may outlive the scheduler (the benchmark reuses one engine
  // across arms), so a step must not leave it pointing at the scheduler's flag.
  Harness h;
  std::atomic<bool> abort_signal{false};
  h.core.set_arrival_signals({&abort_signal, &abort_signal});
  h.Submit(Tier::kOfflineIndexing, Text(40, 1), 4);
  ASSERT_TRUE(h.core.RunOneStep());
  EXPECT_EQ(h.engine.abort_flag(), nullptr);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.engine.abort_flag(), nullptr);
}

TEST(SchedulerCore, PreemptsAtTheNextStepBoundaryAndResumesWhereItStopped) {
  Harness h;
  const std::string doc = Text(200, 3);
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, doc, 20);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.core.RunOneStep());
  const TaskId fg = h.Submit(Tier::kForegroundChat, "quick question", 10);
  ASSERT_TRUE(h.core.RunOneStep());
  EXPECT_EQ(h.Leads(), (std::vector<TaskId>{bg, bg, bg, fg}));
  Result<std::vector<TimelineEvent>> tl = h.core.recorder().Timeline(bg);
  ASSERT_TRUE(tl.ok());
  EXPECT_EQ(tl->back().kind, TimelineKind::kParked);
  EXPECT_EQ(tl->back().park_kind, ParkKind::kResident);  // the pool has room
  // The arrival waited for no running step: only the (virtual) park cost.
  const SchedulerStats stats = h.core.recorder().Stats();
  ASSERT_EQ(stats.preemption_latencies.size(), 1u);
  EXPECT_NEAR(stats.preemption_latencies[0], FakeEngineOptions{}.park_overhead_seconds, 1e-12);
  h.core.RunUntilIdle();
  // Foreground ran uninterrupted, then the background finished.
  const std::vector<TaskId> leads = h.Leads();
  const auto first_bg_after = std::find(leads.begin() + 3, leads.end(), bg);
  EXPECT_TRUE(std::all_of(leads.begin() + 3, first_bg_after, [&](TaskId t) { return t == fg; }));
  EXPECT_TRUE(std::all_of(first_bg_after, leads.end(), [&](TaskId t) { return t == bg; }));
  EXPECT_EQ(h.out[fg].tokens, ExpectedAlone(h.engine, "quick question", 7, 10));
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, doc, 7, 20));
  EXPECT_EQ(h.core.recorder().Metrics(bg)->parks, 1);
}

// Every park kind, forced: background output equals its output run alone.
class ParkKindTest : public ::testing::TestWithParam<ParkPolicy> {};

TEST_P(ParkKindTest, OutputWithPreemptionsEqualsOutputAlone) {
  SchedulerOptions o;
  o.park_policy = GetParam();
  Harness h({}, o);
  const std::string system = "You are a careful summarizer.";
  TaskRequest bg_req = h.Request(Tier::kBackgroundSummary, Text(150, 1), 40, 11);
  bg_req.system_prompt = system;
  const TaskId bg = *h.core.Submit(std::move(bg_req));
  std::vector<TaskId> fgs;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 4 + round; ++i) h.core.RunOneStep();
    fgs.push_back(h.Submit(Tier::kForegroundChat, Text(10 + round, static_cast<char>(round)), 4, 5));
  }
  h.core.RunUntilIdle();
  std::vector<int32_t> history = h.engine.Tokenize(system + "\n\n", true);
  const std::vector<int32_t> own = h.engine.Tokenize(Text(150, 1), false);
  history.insert(history.end(), own.begin(), own.end());
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, history, 11, 40));
  for (size_t i = 0; i < fgs.size(); ++i) {
    EXPECT_EQ(h.out[fgs[i]].tokens, ExpectedAlone(h.engine, Text(10 + i, static_cast<char>(i)), 5, 4));
  }
  const TaskMetrics m = *h.core.recorder().Metrics(bg);
  EXPECT_EQ(m.parks, 5);
  const int kind = static_cast<int>(GetParam()) - 1;  // kForceResident -> kResident ...
  EXPECT_EQ(m.parks_by_kind[static_cast<size_t>(kind)], 5);
  const SchedulerStats stats = h.core.recorder().Stats();
  EXPECT_EQ(stats.cancelled + stats.failed, 0);
  if (GetParam() == ParkPolicy::kForcePartial || GetParam() == ParkPolicy::kForceFull) {
    EXPECT_GT(m.tokens_recomputed, 0);
  }
  if (GetParam() == ParkPolicy::kForcePartial) {
    // The shared system prompt stayed cached: only the task's own tokens came back.
    const int32_t shared = static_cast<int32_t>(h.engine.Tokenize(system + "\n\n", true).size());
    EXPECT_LE(m.tokens_recomputed, 5 * (m.prompt_tokens + 40 - shared));
  }
  // Each recomputed token under its park's cause, and nothing else.
  std::array<int64_t, kNumRecomputeCauses> by_cause{};
  if (GetParam() == ParkPolicy::kForcePartial) by_cause[static_cast<size_t>(RecomputeCause::kPartialEviction)] = m.tokens_recomputed;
  if (GetParam() == ParkPolicy::kForceFull) by_cause[static_cast<size_t>(RecomputeCause::kFullEviction)] = m.tokens_recomputed;
  EXPECT_EQ(stats.recomputed_by_cause, by_cause);
  EXPECT_EQ(stats.tokens_recomputed, m.tokens_recomputed);
}

// A snapshot the store cannot take while memory must be freed: the task is
// parked down to its prefix, and what it recomputes is counted as the
// snapshot's fallback, not as an eviction.
TEST(RecomputeCauses, ASnapshotTheStoreCannotTakeCountsAsItsFallback) {
  FakeEngineOptions e;
  e.kv_bytes_per_token = 100;
  e.pool_capacity_bytes = 100 * 260;  // room for one of the two tasks at a time
  e.snapshot_ram_capacity_bytes = 0;
  SchedulerOptions o;
  o.park_policy = ParkPolicy::kForceSnapshotRam;
  Harness h(e, o);
  const std::string doc = Text(200, 1), question = Text(150, 2);
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, doc, 12, 3);
  for (int i = 0; i < 8; ++i) h.core.RunOneStep();
  const TaskId chat = h.Submit(Tier::kForegroundChat, question, 4, 5);
  h.core.RunUntilIdle();
  const SchedulerStats s = h.core.recorder().Stats();
  EXPECT_GE(s.parks_by_kind[static_cast<size_t>(ParkKind::kPartial)], 1);
  EXPECT_EQ(s.parks_by_kind[static_cast<size_t>(ParkKind::kSnapshotRam)], 0);
  EXPECT_GT(s.tokens_recomputed, 0);
  std::array<int64_t, kNumRecomputeCauses> want{};
  want[static_cast<size_t>(RecomputeCause::kSnapshotFallback)] = s.tokens_recomputed;
  EXPECT_EQ(s.recomputed_by_cause, want);
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, doc, 3, 12));
  EXPECT_EQ(h.out[chat].tokens, ExpectedAlone(h.engine, question, 5, 4));
}

INSTANTIATE_TEST_SUITE_P(AllKinds, ParkKindTest,
                         ::testing::Values(ParkPolicy::kForceResident, ParkPolicy::kForceSnapshotRam,
                                           ParkPolicy::kForceSnapshotDisk, ParkPolicy::kForcePartial,
                                           ParkPolicy::kForceFull));

TEST(SchedulerCore, MemoryPressureMovesParkedWorkOutOfThePool) {
  FakeEngineOptions eo;
  eo.kv_bytes_per_token = 1024;
  eo.pool_capacity_bytes = 400 * 1024;
  Harness h(eo);
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, Text(250, 2), 30);
  for (int i = 0; i < 12; ++i) h.core.RunOneStep();
  const TaskId fg = h.Submit(Tier::kForegroundChat, Text(180, 4), 20);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[bg].tokens, ExpectedAlone(h.engine, Text(250, 2), 7, 30));
  EXPECT_EQ(h.out[fg].tokens, ExpectedAlone(h.engine, Text(180, 4), 7, 20));
  const TaskMetrics m = *h.core.recorder().Metrics(bg);
  EXPECT_EQ(m.parks, 1);
  EXPECT_EQ(m.parks_by_kind[static_cast<size_t>(ParkKind::kResident)], 0);
  EXPECT_GT(m.park_bytes, 0u);
  EXPECT_EQ(h.core.recorder().Stats().failed, 0);
}

TEST(SchedulerCore, NeverCancelsAndAppCancelIsExact) {
  Harness h;
  const TaskId keep = h.Submit(Tier::kOfflineIndexing, "long job", 30);
  const TaskId drop = h.Submit(Tier::kOfflineIndexing, "doomed job", 30);
  for (int i = 0; i < 20; ++i) h.core.RunOneStep();
  ASSERT_TRUE(h.core.Cancel(drop).ok());
  EXPECT_EQ(h.core.Cancel(drop).code(), StatusCode::kInvalidArgument);  // finished
  EXPECT_EQ(h.core.Cancel(12345).code(), StatusCode::kNotFound);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.core.Cancel(keep).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.out[keep].result->state, TaskState::kDone);
  EXPECT_EQ(h.out[keep].tokens, ExpectedAlone(h.engine, "long job", 7, 30));
  EXPECT_EQ(h.out[drop].result->state, TaskState::kCancelled);
  EXPECT_EQ(h.out[drop].done_calls, 1);
  const std::vector<int32_t> full = ExpectedAlone(h.engine, "doomed job", 7, 30);
  ASSERT_LE(h.out[drop].tokens.size(), full.size());
  EXPECT_TRUE(std::equal(h.out[drop].tokens.begin(), h.out[drop].tokens.end(), full.begin()));
  const SchedulerStats s = h.core.recorder().Stats();
  EXPECT_EQ(s.cancelled, 1);
  EXPECT_EQ(s.done, 1);
}

TEST(SchedulerCore, BadInputIsAClearErrorWithNoEffectOnOtherTasks) {
  FakeEngineOptions eo;
  eo.context_length = 64;
  Harness h(eo);
  const TaskId good = h.Submit(Tier::kBackgroundSummary, "fine", 10);
  h.core.RunOneStep();
  auto code = [&](TaskRequest r) { return h.core.Submit(std::move(r)).status().code(); };
  TaskRequest r = h.Request(static_cast<Tier>(7), "x", 5);
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(h.Request(Tier::kForegroundChat, "", 5)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(h.Request(Tier::kForegroundChat, "x", -3)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(h.Request(Tier::kForegroundChat, "x", 64)), StatusCode::kOutOfRange);
  EXPECT_EQ(code(h.Request(Tier::kForegroundChat, Text(60, 0), 10)), StatusCode::kOutOfRange);
  r = h.Request(Tier::kForegroundChat, "x", 5);
  r.stop = {""};
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  r = h.Request(Tier::kForegroundChat, "", 5);
  r.messages = {{"wizard", "hi"}};
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  r = h.Request(Tier::kForegroundChat, "x", 5);
  r.tools = {{"f"}};  // tools are shown through the chat template: a raw prompt has none
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.core.OnLifecycleEvent(LifecycleEvent::kOnResume).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.core.lifecycle_state(), LifecycleState::kResumed);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[good].tokens, ExpectedAlone(h.engine, "fine", 7, 10));
  const SchedulerStats s = h.core.recorder().Stats();
  EXPECT_EQ(s.rejected, 8);
  EXPECT_EQ(s.submitted, 1);
  EXPECT_EQ(h.out.size(), 1u);  // no callback for rejected requests
}

TEST(SchedulerCore, StopStringEndsTheTaskWithoutShowingIt) {
  Harness h;
  const std::vector<int32_t> full = ExpectedAlone(h.engine, "stop test", 7, 40);
  std::string text;
  for (int32_t t : full) text += h.engine.TokenPiece(t);
  const std::string stop = text.substr(10, 2);
  const size_t at = text.find(stop);
  TaskRequest r = h.Request(Tier::kForegroundChat, "stop test", 40);
  r.stop = {stop};
  const TaskId id = *h.core.Submit(std::move(r));
  h.core.RunUntilIdle();
  EXPECT_EQ(h.out[id].result->stop_reason, StopReason::kStopString);
  EXPECT_EQ(h.out[id].result->text, text.substr(0, at));
  EXPECT_EQ(h.out[id].text, text.substr(0, at));
  EXPECT_EQ(h.out[id].tokens.size(), at + stop.size());
}

TEST(SchedulerCore, ChatTasksShareTheSystemPromptPrefix) {
  Harness h;
  auto chat = [&](const std::string& user) {
    TaskRequest r = h.Request(Tier::kForegroundChat, "", 6);
    r.system_prompt = "You are valet.";
    r.messages = {{"user", user}};
    return *h.core.Submit(std::move(r));
  };
  const TaskId a = chat("hi");
  h.core.RunUntilIdle();
  const TaskId b = chat("hello there");
  ASSERT_TRUE(h.core.RunOneStep());
  // The second chat's first step is its own prompt: the system prompt is cached.
  const StepTrace last = h.core.recorder().Steps().back();
  EXPECT_EQ(last.items[0].kind, StepItemKind::kPrefill);
  h.core.RunUntilIdle();
  // The fake engine has no chat template: the built-in ChatML renders it.
  std::vector<int32_t> history = h.engine.Tokenize("<|im_start|>system\nYou are valet.<|im_end|>\n", true);
  const std::vector<int32_t> own =
      h.engine.Tokenize("<|im_start|>user\nhello there<|im_end|>\n<|im_start|>assistant\n", false);
  history.insert(history.end(), own.begin(), own.end());
  EXPECT_EQ(h.out[b].tokens, ExpectedAlone(h.engine, history, 7, 6));
  EXPECT_EQ(h.out[a].result->state, TaskState::kDone);
}

TEST(SchedulerCore, TimelineMetricsAndChromeTrace) {
  Harness h;
  const TaskId bg = h.Submit(Tier::kOfflineIndexing, Text(100, 5), 5);
  h.core.RunOneStep();
  const TaskId fg = h.Submit(Tier::kForegroundChat, "hey", 5);
  h.core.RunUntilIdle();
  std::vector<TimelineKind> kinds;
  const std::vector<TimelineEvent> bg_tl = *h.core.recorder().Timeline(bg);
  for (const TimelineEvent& e : bg_tl) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<TimelineKind>{TimelineKind::kSubmitted, TimelineKind::kStarted, TimelineKind::kParked,
                                              TimelineKind::kResumed, TimelineKind::kFirstToken, TimelineKind::kDone}));
  const TaskMetrics m = *h.core.recorder().Metrics(fg);
  EXPECT_EQ(m.generated_tokens, 5);
  EXPECT_GT(m.ttft(), 0.0);
  EXPECT_GT(m.tpot(), 0.0);
  EXPECT_GE(m.e2e(), m.ttft());
  const std::vector<TimelineEvent> fg_tl = *h.core.recorder().Timeline(fg);
  for (size_t i = 1; i < fg_tl.size(); ++i) EXPECT_LE(fg_tl[i - 1].time, fg_tl[i].time);
  Result<Json> trace = ParseJson(h.core.recorder().ChromeTraceJson());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const Json* events = FindMember(*trace, "traceEvents");
  ASSERT_NE(events, nullptr);
  EXPECT_GT(events->size(), h.core.recorder().Steps().size());
}

TEST(SchedulerCore, CallbacksMayReenterTheCore) {
  Harness h;
  TaskId follow_up = 0;
  TaskRequest first = h.Request(Tier::kForegroundChat, "first", 3);
  auto inner = first.callbacks.on_done;
  first.callbacks.on_done = [&, inner](TaskId id, const TaskResult& r) {
    inner(id, r);
    follow_up = *h.core.Submit(h.Request(Tier::kForegroundChat, "second", 3));
  };
  ASSERT_TRUE(h.core.Submit(std::move(first)).ok());
  h.core.RunUntilIdle();
  ASSERT_NE(follow_up, 0);
  EXPECT_EQ(h.out[follow_up].tokens, ExpectedAlone(h.engine, "second", 7, 3));
}

}  // namespace
}  // namespace valet
