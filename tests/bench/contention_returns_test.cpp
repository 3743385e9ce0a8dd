// Issue 22 item 4's measurements: many returns to the foreground in one run
// (their scheduling, deterministic on a scripted clock, and their report on
// the fake engine) and the cold start with recovered durable tasks (on the
// tiny model). Checks what happens and in which order, never timings.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "common/json.h"
#include "testing/bench/cold_start.h"
#include "testing/bench/contention_report.h"
#include "testing/bench/contention_runner.h"
#include "testing/bench/contention_scenario.h"
#include "testing/bench/contention_session.h"
#include "testing/model/synthetic_model.h"
#include "testing/sched/fake_engine.h"

namespace valet {
using namespace valet::testing;
namespace {

const std::vector<Arm> kArms = {Arm::kIdle, Arm::kFifo, Arm::kBatch, Arm::kPriority, Arm::kValet};

ScenarioConfig SmallConfig() {
  ScenarioConfig c;
  c.seed = 5;
  c.system_tokens = 24;
  c.user_tokens = 8;
  c.user_jitter = 2;
  c.answer_tokens = 6;
  c.doc_tokens = 60;
  c.doc_jitter = 8;
  c.doc_summary_tokens = 5;
  c.summary_prompt_tokens = 20;
  c.summary_tokens = 4;
  c.suggestion_prompt_tokens = 10;
  c.suggestion_tokens = 3;
  c.think_min_s = 0.2;
  c.think_max_s = 0.4;
  c.background_s = 0.5;
  c.valet_bg_chunk = 8;
  c.baseline_chunk = 32;
  c.batch_chunk = 48;
  return c;
}

TEST(ReturnTurns, SpreadEvenlyAndNeverABlocksFirstNorTheLowMemoryTurn) {
  for (auto [turns, block, low] : {std::tuple{30, 6, 22}, {100, 6, 75}, {30, 4, -1}}) {
    SCOPED_TRACE(std::to_string(turns) + " turns");
    const std::vector<int32_t> r = ReturnTurns(turns, 20, block, low);
    ASSERT_EQ(r.size(), 20u);
    EXPECT_TRUE(std::is_sorted(r.begin(), r.end()));
    EXPECT_EQ(std::adjacent_find(r.begin(), r.end()), r.end()) << "a turn listed twice";
    for (int32_t t : r) {
      EXPECT_GE(t, 1);
      EXPECT_LT(t, turns);
      EXPECT_NE(t % block, 0);
      EXPECT_NE(t, low);
    }
  }
  // Asked for more than qualify: every turn that qualifies.
  EXPECT_EQ(ReturnTurns(8, 100, 4, 6), (std::vector<int32_t>{1, 2, 3, 5, 7}));
  EXPECT_TRUE(ReturnTurns(8, 0, 4, 6).empty());
}

TEST(ReturnTurns, ResolveReplacesTheSingleExcursionOnlyWhenAsked) {
  ScenarioConfig c = SmallConfig();
  c.turns = 30;
  const ScenarioConfig single = Resolve(c);
  EXPECT_EQ(single.lifecycle_after_turn, 14);
  EXPECT_TRUE(single.return_turns.empty());
  EXPECT_EQ(single.hide_trim_level, 0) << "the single excursion sends no trim, as before";
  c.returns = 20;
  const ScenarioConfig many = Resolve(c);
  EXPECT_EQ(many.lifecycle_after_turn, -1);
  EXPECT_EQ(many.return_turns.size(), 20u);
  EXPECT_EQ(many.hide_trim_level, static_cast<int32_t>(TrimLevel::kUiHidden));
  EXPECT_EQ(Resolve(many).return_turns, many.return_turns) << "Resolve is idempotent";
  c.hide_trim_level = 0;
  EXPECT_EQ(Resolve(c).hide_trim_level, 0);
}

TEST(ReturnTurns, BlocksGetTheirOwnRenumbered) {
  ScenarioConfig c = SmallConfig();
  c.turns = 14;
  c.block_turns = 4;
  c.returns = 6;
  c = Resolve(c);
  size_t total = 0;
  for (size_t first = 0; first < 14; first += 4) {
    const size_t count = std::min<size_t>(4, 14 - first);
    const ScenarioConfig bc = BlockConfig(c, first, count);
    for (int32_t r : bc.return_turns) {
      EXPECT_GE(r, 1);
      EXPECT_LT(r, bc.turns);
      EXPECT_NE(std::find(c.return_turns.begin(), c.return_turns.end(), r + static_cast<int32_t>(first)),
                c.return_turns.end());
    }
    total += bc.return_turns.size();
  }
  EXPECT_EQ(total, c.return_turns.size());
}

// What the session tells its sink, with the scripted time it was told at.
class RecordingSink : public ScenarioSink {
 public:
  struct Event {
    std::string what;
    double at = 0.0;
    bool operator==(const Event&) const = default;
  };
  Result<TaskId> Submit(TaskRequest request) override {
    events.push_back({request.tier == Tier::kForegroundChat ? "chat" : "other", now});
    pending.push_back(++next_id_);
    return next_id_;
  }
  Status Lifecycle(LifecycleEvent event) override {
    events.push_back({LifecycleEventName(event), now});
    return Status::Ok();
  }
  Status TrimMemory(TrimLevel level) override {
    events.push_back({"trim " + std::to_string(static_cast<int>(level)), now});
    return Status::Ok();
  }
  SchedulerStats Stats() const override { return {}; }

  double now = 0.0;
  std::vector<Event> events;
  std::vector<TaskId> pending;

 private:
  TaskId next_id_ = 0;
};

// The idle arm (no background work, so only the chat and the app's events)
// on a scripted clock: every answer takes kAnswer seconds.
TEST(ReturnTurns, EachReturnIsPauseStopTrimsThenStartResumeAndTheTurnsThinkTime) {
  ScenarioConfig c = SmallConfig();
  c.turns = 4;
  c.block_turns = 4;
  c.low_memory_turn = 100;  // none
  c.returns = 2;
  c.deep_trim_level = 80;
  c = Resolve(c);
  ASSERT_EQ(c.return_turns, (std::vector<int32_t>{1, 2}));
  FakeEngine tokenizer;
  Result<Workload> w = BuildWorkload(c, tokenizer);
  ASSERT_TRUE(w.ok());
  RecordingSink sink;
  ContentionSession session(*w, c, Arm::kIdle, sink);
  constexpr double kAnswer = 0.1;
  session.Start(0.0);
  while (!session.Finished()) {
    if (!sink.pending.empty()) {
      const TaskId id = sink.pending.front();
      sink.pending.erase(sink.pending.begin());
      sink.now += kAnswer;
      session.OnDone(id, TaskResult{}, sink.now);
      continue;
    }
    const double wake = session.NextWake();
    ASSERT_NE(wake, ContentionSession::kNever);
    sink.now = wake;
    session.OnTime(wake);
  }
  const auto think = [&](int i) { return w->turns[static_cast<size_t>(i)].think_s; };
  using E = RecordingSink::Event;
  const std::string pause = LifecycleEventName(LifecycleEvent::kOnPause), stop = LifecycleEventName(LifecycleEvent::kOnStop);
  const std::string start = LifecycleEventName(LifecycleEvent::kOnStart), resume = LifecycleEventName(LifecycleEvent::kOnResume);
  std::vector<E> want;
  double now = 0.0 + think(0);
  want.push_back({"chat", now});
  std::vector<std::pair<double, double>> away;  // ON_STOP, ON_RESUME
  for (int turn = 1; turn <= 2; ++turn) {
    const double done = now + kAnswer;
    const double back = done + c.background_s;
    for (const std::string& e : {pause, stop, std::string("trim 20")}) want.push_back({e, done});
    want.push_back({"trim 80", done + c.background_s / 2});
    want.push_back({start, back});
    want.push_back({resume, back});
    now = back + think(turn);  // not at once: the user types after coming back
    want.push_back({"chat", now});
    away.emplace_back(done, back);
  }
  now = now + kAnswer + think(3);
  want.push_back({"chat", now});
  EXPECT_EQ(sink.events, want);
  const ArmRun& run = session.run();
  ASSERT_EQ(run.excursions.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(run.excursions[i].return_turn, static_cast<int32_t>(i + 1));
    EXPECT_EQ(run.excursions[i].at_stop.time, away[i].first);
    EXPECT_EQ(run.excursions[i].at_resume.time, away[i].second);
  }
  EXPECT_EQ(run.first_turn_after_resume, 1);
}

Result<InterleavedRuns> RunVirtual(const ScenarioConfig& c, const Workload& w) {
  return RunInterleaved(c, w, kArms, [](Arm arm, const Workload& block, const ScenarioConfig& bc) {
    FakeEngine engine;
    return RunArmVirtual(engine, block, bc, arm);
  });
}

TEST(ReturnTurns, EveryArmReportsItsReturnTurnsApartAgainstIdlesSameMoments) {
  ScenarioConfig c = SmallConfig();
  c.turns = 10;
  c.block_turns = 5;
  c.returns = 4;
  c.deep_trim_level = 40;
  c = Resolve(c);
  ASSERT_EQ(c.return_turns, (std::vector<int32_t>{1, 2, 4, 8}));  // not 5 (a block's first) nor 7 (low memory)
  FakeEngine tokenizer;
  Result<Workload> w = BuildWorkload(c, tokenizer);
  ASSERT_TRUE(w.ok());
  Result<InterleavedRuns> runs = RunVirtual(c, *w);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  const ContentionReport report = ReportFrom(c, kArms, *runs);
  Result<InterleavedRuns> again = RunVirtual(c, *w);
  ASSERT_TRUE(again.ok());
  const ContentionReport report2 = ReportFrom(c, kArms, *again);
  Result<Json> json = ParseJson(ReportJson(report));
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(json->at("config").at("return_turns").size(), 4u);
  for (size_t i = 0; i < kArms.size(); ++i) {
    const ArmSummary& a = report.arms[i];
    SCOPED_TRACE(ArmName(a.arm));
    EXPECT_TRUE(a.error.empty()) << a.error;
    EXPECT_EQ(a.failed + a.cancelled + a.unfinished, 0);
    EXPECT_EQ(a.returns.ttft_ms.count, 4);
    EXPECT_EQ(a.ttft_ms.count, 10) << "the all-turn figures keep every turn";
    EXPECT_EQ(a.returns.ttft_samples_ms, report2.arms[i].returns.ttft_samples_ms) << "deterministic";
    int returns = 0;
    for (const TaskRow& t : a.tasks) {
      if (!t.return_turn) continue;
      ++returns;
      EXPECT_EQ(t.kind, TaskKind::kChat);
      EXPECT_NE(std::find(c.return_turns.begin(), c.return_turns.end(), t.turn), c.return_turns.end()) << t.turn;
    }
    EXPECT_EQ(returns, 4);
    if (a.arm == Arm::kIdle) {
      EXPECT_EQ(a.returns.slowdown_p50, 1.0);
    } else {
      EXPECT_GT(a.returns.slowdown_p50, 0.0);
      EXPECT_LE(a.returns.slowdown_p50_ci.lo, a.returns.slowdown_p50);
      EXPECT_GE(a.returns.slowdown_p50_ci.hi, a.returns.slowdown_p50);
      EXPECT_GE(a.bg_tps_background, 0.0) << "background rate over every stay away";
    }
    const Json& arm = json->at("arms").at(ArmName(a.arm));
    ASSERT_NE(FindMember(arm, "return_turns"), nullptr);
    EXPECT_EQ(arm.at("return_turns").at("ttft_ms").at("count").get<int64_t>(), 4);
    EXPECT_EQ(arm.at("return_turns").at("ratio_ci").size(), a.arm == Arm::kIdle ? 0u : 2u);
    EXPECT_NE(FindMember(arm, "prefix_warm_tokens"), nullptr);
  }
  EXPECT_NE(ReportMarkdown(report).find("Return turns"), std::string::npos);
}

TEST(ColdStart, RatioOfMediansWithItsInterval) {
  ColdStartReport r;
  for (double ms : {100.0, 110.0, 120.0, 130.0, 140.0}) {
    ColdStartSample a, b;
    a.ttft_ms = ms;
    a.launch_ttft_ms = ms + 1000.0;
    b.ttft_ms = 2 * ms;
    b.launch_ttft_ms = 2 * ms + 1000.0;
    r.empty.push_back(a);
    r.recovered.push_back(b);
  }
  SummarizeColdStart(r);
  EXPECT_DOUBLE_EQ(r.ttft_ratio, 2.0);
  EXPECT_LE(r.ttft_ratio_ci.lo, 2.0);
  EXPECT_GE(r.ttft_ratio_ci.hi, 2.0);
  EXPECT_DOUBLE_EQ(r.launch_ratio, 1240.0 / 1120.0);
  Result<Json> json = ParseJson(ColdStartJson(r));
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->at("ttft_ratio").at("ratio_ci").size(), 2u);
  EXPECT_EQ(json->at("recovered").at("samples").size(), 5u);
}

size_t ScratchDirectories() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    n += e.path().filename().string().rfind("valet-cold-", 0) == 0 ? 1 : 0;
  }
  return n;
}

// Whole starts on the tiny model: (b) recovers the three tasks every time,
// (a) none, and every scratch directory is gone afterwards.
TEST(ColdStart, EveryRecoveredStartFindsTheSameThreeTasks) {
  const std::string dir = ::testing::TempDir() + "/valet_cold_start_test";
  std::filesystem::create_directories(dir);
  std::string model = std::string(VALET_SHARED_DIR) + "/models/synth-tiny-q8_0.gguf";
  if (!std::filesystem::exists(model)) {
    model = dir + "/tiny-q8_0.gguf";
    SynthModelOptions s;
    s.preset = SynthPreset::kTiny;
    s.type = GgmlType::kQ8_0;
    ASSERT_TRUE(WriteSyntheticModel(s, model).ok());
  }
  ColdStartOptions o;
  o.repetitions = 2;
  o.durable_tokens = 3;
  o.open_engine = [&model](const std::string& snapshot_dir) {
    RealEngineOptions e;
    e.engine.model_path = model;
    e.engine.n_threads = 1;
    e.engine.kv_capacity_bytes = 2u << 20;
    e.store.disk_dir = snapshot_dir;
    e.calibrate = false;
    return RealEngine::Open(e);
  };
  Result<std::unique_ptr<RealEngine>> tokenizer = o.open_engine(dir + "/snapshots");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  ScenarioConfig c = SmallConfig();
  c.turns = 2;
  Result<Workload> w = BuildWorkload(c, **tokenizer);
  ASSERT_TRUE(w.ok());
  const size_t scratch_before = ScratchDirectories();
  Result<ColdStartReport> r = RunColdStart(*w, c, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ScratchDirectories(), scratch_before);
  ASSERT_EQ(r->empty.size(), 2u);
  ASSERT_EQ(r->recovered.size(), 2u);
  EXPECT_GE(r->checkpoints_written, 3);
  for (const ColdStartSample& s : r->empty) {
    EXPECT_EQ(s.recovered, 0);
    EXPECT_GE(s.ttft_ms, 0.0);
  }
  for (const ColdStartSample& s : r->recovered) {
    EXPECT_EQ(s.recovered, 3);
    EXPECT_GE(s.ttft_ms, 0.0);
    EXPECT_GE(s.launch_ttft_ms, s.ttft_ms);
  }
  EXPECT_GT(r->ttft_ratio, 0.0);
  EXPECT_NE(ColdStartMarkdown(*r).find("(b) recovered"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace valet
