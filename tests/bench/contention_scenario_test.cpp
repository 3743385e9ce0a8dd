// The contention harness end to end on a short scenario: on the fake engine
// (virtual time, deterministic) and on the tiny synthetic model (real time),
// for every arm. Checks consistency, never timings.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <regex>

#include "bench/contention_report.h"
#include "bench/contention_scenario.h"
#include "bench/svg_timeline.h"
#include "common/json_value.h"
#include "engine/real_engine.h"
#include "model/synthetic_model.h"
#include "sched/fake_engine.h"

namespace valet {
namespace {

const std::vector<Arm> kArms = {Arm::kIdle, Arm::kFifo, Arm::kBatch, Arm::kPriority, Arm::kValet};

ScenarioConfig ShortConfig() {
  ScenarioConfig c;
  c.seed = 3;
  c.turns = 4;
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
  c.think_min_s = 0.0;
  c.think_max_s = 0.02;
  c.summary_chance = 0.7;
  c.suggestion_chance = 0.7;
  c.background_s = 0.02;
  c.valet_bg_chunk = 8;
  c.baseline_chunk = 32;
  c.batch_chunk = 48;
  return Resolve(c);
}

int64_t Sum(const std::array<int64_t, kNumTiers>& a) { return std::accumulate(a.begin(), a.end(), int64_t{0}); }

// Every task the arm submitted finished DONE, once, with consistent counts.
void ExpectConsistent(const ArmRun& run, const ScenarioConfig& c) {
  SCOPED_TRACE(ArmName(run.arm));
  EXPECT_TRUE(run.error.empty()) << run.error;
  int64_t chats = 0, docs = 0, generated = 0;
  for (const TaskRecord& t : run.tasks) {
    ASSERT_TRUE(t.done) << "task " << t.id << " lost";
    EXPECT_EQ(t.result.state, TaskState::kDone) << t.result.status.ToString();
    const TaskMetrics& m = t.result.metrics;
    EXPECT_EQ(m.generated_tokens, static_cast<int32_t>(t.result.tokens.size()));
    EXPECT_LE(m.submit_time, m.first_token_time);
    EXPECT_LE(m.first_token_time, m.end_time);
    EXPECT_GE(m.submit_time, run.start);
    EXPECT_LE(m.end_time, run.end);
    ASSERT_FALSE(t.timeline.empty());
    EXPECT_EQ(t.timeline.front().kind, TimelineKind::kSubmitted);
    EXPECT_EQ(t.timeline.back().kind, TimelineKind::kDone);
    generated += m.generated_tokens;
    if (t.kind == TaskKind::kChat) ++chats;
    if (t.kind == TaskKind::kDoc) ++docs;
  }
  EXPECT_EQ(chats, run.arm == Arm::kSolo ? 0 : c.turns);
  if (run.arm == Arm::kIdle) {
    EXPECT_EQ(docs, 0);
  }
  if (run.arm != Arm::kIdle) {
    EXPECT_GE(docs, 1);
  }
  const SchedulerStats& s = run.stats;
  EXPECT_EQ(s.cancelled, 0);
  EXPECT_EQ(s.failed, 0);
  const int64_t warmup = run.arm == Arm::kSolo ? 0 : 1;  // the one-token turn that caches the system prompt
  EXPECT_EQ(s.done, static_cast<int64_t>(run.tasks.size()) + warmup);
  EXPECT_EQ(Sum(s.generated_by_tier), generated + warmup);
  EXPECT_EQ(Sum(s.prefill_by_tier), s.prefill_tokens);
  // Each task's first token comes from its last prompt chunk, the rest from decode steps.
  EXPECT_EQ(s.decode_tokens, Sum(s.generated_by_tier) - s.done);
  // Marks are cumulative and ordered in time.
  EXPECT_LE(run.start, run.window_end);
  EXPECT_LE(run.window_end, run.end);
  for (size_t t = 0; t < kNumTiers; ++t) EXPECT_LE(run.at_start.processed[t], run.at_window_end.processed[t]);
  if (run.had_lifecycle) {
    EXPECT_LE(run.at_stop.time, run.at_resume.time);
    EXPECT_GE(run.first_turn_after_resume, 1);
  }
}

void ExpectOrdered(const Percentiles& p) {
  if (p.empty()) return;
  EXPECT_LE(p.p50, p.p90);
  EXPECT_LE(p.p90, p.p99);
  EXPECT_LE(p.p99, p.max);
}

// A minimal XML well-formedness check: tags nest and close, attributes quoted.
bool WellFormed(const std::string& xml) {
  std::vector<std::string> stack;
  size_t i = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return false;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return false;
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return false;
      stack.pop_back();
    } else if (tag.back() != '/') {
      stack.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return stack.empty();
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t i = text.find(needle); i != std::string::npos; i = text.find(needle, i + 1)) ++n;
  return n;
}

// Real-time runs race the wall clock, so whether background work fits in the
// window before the last chat turn ends is not a property to assert there.
enum class Timing { kVirtual, kRealTime };

void ExpectReport(const std::vector<ArmRun>& runs, const ScenarioConfig& c, const Calibration& cal, Timing timing) {
  ContentionReport report;
  report.config = c;
  report.calibration = cal;
  const ArmSummary* idle = nullptr;
  report.arms.reserve(runs.size());
  for (const ArmRun& r : runs) {
    report.arms.push_back(Summarize(r, cal, idle));
    if (r.arm == Arm::kIdle) idle = &report.arms.back();
  }
  size_t total_tasks = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const ArmSummary& a = report.arms[i];
    SCOPED_TRACE(ArmName(a.arm));
    total_tasks += runs[i].tasks.size();
    EXPECT_EQ(a.submitted, static_cast<int64_t>(runs[i].tasks.size()));
    EXPECT_EQ(a.done, a.submitted);
    EXPECT_EQ(a.cancelled + a.failed + a.unfinished, 0);
    EXPECT_EQ(a.chat_turns + a.docs_completed + a.summaries_done + a.suggestions_done, a.done);
    EXPECT_EQ(a.ttft_ms.count, c.turns);
    ExpectOrdered(a.ttft_ms);
    ExpectOrdered(a.tpot_ms);
    ExpectOrdered(a.e2e_ms);
    ExpectOrdered(a.preempt_ms);
    EXPECT_GE(a.bg_tokens, 0);
    if (a.arm == Arm::kIdle) {
      EXPECT_EQ(a.bg_tokens, 0);
    } else if (timing == Timing::kVirtual) {
      EXPECT_GT(a.bg_tokens, 0);
    }
    EXPECT_GE(a.ttft_after_resume_ms, 0);
  }
  Result<JsonValue> json = ParseJson(ReportJson(report));
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  const JsonValue* arms = json->Find("arms");
  ASSERT_NE(arms, nullptr);
  ASSERT_NE(json->Find("config"), nullptr);
  for (const ArmRun& r : runs) {
    const JsonValue* arm = arms->Find(ArmName(r.arm));
    ASSERT_NE(arm, nullptr) << ArmName(r.arm);
    for (const char* key : {"ttft_ms", "tpot_ms", "e2e_ms", "preempt_latency_ms"}) {
      const JsonValue* p = arm->Find(key);
      ASSERT_NE(p, nullptr) << key;
      for (const char* q : {"p50", "p90", "p99", "max"}) EXPECT_NE(p->Find(q), nullptr) << key << "." << q;
    }
    for (const char* key : {"bg_tokens_per_s", "docs_completed", "tasks_cancelled", "tokens_recomputed", "snapshot_bytes"}) {
      ASSERT_NE(arm->Find(key), nullptr) << key;
      EXPECT_TRUE(arm->Find(key)->is_number()) << key;
    }
    EXPECT_EQ(arm->Find("tasks_cancelled")->AsNumber(), 0.0);
    EXPECT_EQ(arm->Find("tasks")->size(), r.tasks.size());
  }
  const std::string svg = RenderTimelineSvg(runs);
  EXPECT_TRUE(WellFormed(svg));
  EXPECT_EQ(Count(svg, "<g class=\"task\""), total_tasks);
  EXPECT_EQ(Count(svg, "<g class=\"arm\""), runs.size());
  EXPECT_NE(ReportMarkdown(report).find("| valet |"), std::string::npos);
}

TEST(ContentionScenario, ParsesArms) {
  Result<std::vector<Arm>> arms = ParseArms("valet,idle");
  ASSERT_TRUE(arms.ok());
  EXPECT_EQ(*arms, (std::vector<Arm>{Arm::kValet, Arm::kIdle}));
  EXPECT_FALSE(ParseArms("valet,valet").ok());
  EXPECT_FALSE(ParseArms("fast").ok());
  EXPECT_FALSE(ParseArms("").ok());
}

TEST(ContentionScenario, WorkloadIsSeededAndHasTheRequestedLengths) {
  FakeEngine engine;
  const ScenarioConfig c = ShortConfig();
  Result<Workload> a = BuildWorkload(c, engine), b = BuildWorkload(c, engine);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->system_prompt, b->system_prompt);
  EXPECT_EQ(a->doc_texts, b->doc_texts);
  ASSERT_EQ(a->turns.size(), static_cast<size_t>(c.turns));
  // At least the requested tokens, and at most one word (<= 10 bytes here) more.
  const size_t sys = engine.Tokenize(a->system_prompt, false).size();
  EXPECT_GE(sys, static_cast<size_t>(c.system_tokens));
  EXPECT_LE(sys, static_cast<size_t>(c.system_tokens + 10));
  for (const TurnPlan& t : a->turns) {
    EXPECT_GE(t.think_s, c.think_min_s);
    EXPECT_LE(t.think_s, c.think_max_s);
  }
  ScenarioConfig other = c;
  other.seed = 4;
  EXPECT_NE(BuildWorkload(other, engine)->system_prompt, a->system_prompt);
}

TEST(ContentionScenario, EveryArmOnTheFakeEngineIsConsistentAndDeterministic) {
  const ScenarioConfig c = ShortConfig();
  ASSERT_GE(c.lifecycle_after_turn, 0);
  std::vector<ArmRun> runs;
  FakeEngine calib_engine;
  Result<Workload> w = BuildWorkload(c, calib_engine);
  ASSERT_TRUE(w.ok());
  Result<ArmRun> solo = RunArmVirtual(calib_engine, *w, c, Arm::kSolo);
  ASSERT_TRUE(solo.ok()) << solo.status().ToString();
  ExpectConsistent(*solo, c);
  const Calibration cal = CalibrationFrom(*solo);
  EXPECT_GT(cal.solo_tokens_per_s, 0);
  for (Arm arm : kArms) {
    FakeEngine engine;
    Result<ArmRun> run = RunArmVirtual(engine, *w, c, arm);
    ASSERT_TRUE(run.ok()) << ArmName(arm) << ": " << run.status().ToString();
    ExpectConsistent(*run, c);
    FakeEngine again_engine;
    Result<ArmRun> again = RunArmVirtual(again_engine, *w, c, arm);
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->tasks.size(), run->tasks.size());
    for (size_t i = 0; i < run->tasks.size(); ++i) {
      EXPECT_EQ(again->tasks[i].result.tokens, run->tasks[i].result.tokens);
      EXPECT_EQ(again->tasks[i].result.metrics.first_token_time, run->tasks[i].result.metrics.first_token_time);
    }
    runs.push_back(std::move(run).value());
  }
  ExpectReport(runs, c, cal, Timing::kVirtual);
  // The arms differ in policy only: same workload, same chat prompts.
  for (const ArmRun& r : runs) {
    int32_t turn = 0;
    for (const TaskRecord& t : r.tasks) {
      if (t.kind == TaskKind::kChat) {
    EXPECT_EQ(t.turn, turn++);
  }
    }
  }
}

class ContentionRealModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/valet_contention_test";
    std::filesystem::create_directories(dir_);
    model_ = std::string(VALET_SHARED_DIR) + "/models/synth-tiny-q8_0.gguf";
    if (!std::filesystem::exists(model_)) {
      model_ = dir_ + "/tiny-q8_0.gguf";
      SynthModelOptions o;
      o.preset = SynthPreset::kTiny;
      o.type = GgmlType::kQ8_0;
      ASSERT_TRUE(WriteSyntheticModel(o, model_).ok());
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, model_;
};

TEST_F(ContentionRealModelTest, EveryArmOnTheTinyModelIsConsistent) {
  RealEngineOptions o;
  o.engine.model_path = model_;
  o.engine.n_threads = 1;
  o.engine.kv_capacity_bytes = 2u << 20;
  o.store.disk_dir = dir_ + "/snapshots";
  o.calibrate = false;
  Result<std::unique_ptr<RealEngine>> engine = RealEngine::Open(o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ScenarioConfig c = ShortConfig();
  c.turns = 2;
  c.lifecycle_after_turn = 0;
  c.think_max_s = 0.005;
  c.background_s = 0.005;
  Result<Workload> w = BuildWorkload(c, **engine);
  ASSERT_TRUE(w.ok());
  EngineProbe probe;
  RealEngine* e = engine->get();
  probe.park_seconds = [e] { return e->accounting().park_seconds; };
  probe.resume_seconds = [e] { return e->accounting().resume_seconds; };
  Result<ArmRun> solo = RunArmRealTime(**engine, *w, c, Arm::kSolo, probe);
  ASSERT_TRUE(solo.ok()) << solo.status().ToString();
  std::vector<ArmRun> runs;
  for (Arm arm : kArms) {
    Result<ArmRun> run = RunArmRealTime(**engine, *w, c, arm, probe);
    ASSERT_TRUE(run.ok()) << ArmName(arm) << ": " << run.status().ToString();
    ExpectConsistent(*run, c);
    EXPECT_GE(run->park_seconds, 0.0);
    runs.push_back(std::move(run).value());
  }
  ExpectReport(runs, c, CalibrationFrom(*solo), Timing::kRealTime);
}

}  // namespace
}  // namespace valet
