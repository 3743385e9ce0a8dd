// The scheduler on the real engine: a task's output with forced preemptions
// of every park kind is identical to its output run alone. On stories260K
// (a raw prompt), and as a chat on a synthesized Gemma 3 with its real
// vocabulary and template (windowed layers: the chat runs past the window),
// free and under a JSON Schema (the matcher parks with the sequence).
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>

#include "engine/real_engine.h"
#include "sched/scheduler_core.h"
#include "testing/model/synthetic_model.h"

namespace valet {
using namespace valet::testing;
namespace {

enum class Model { kStories, kGemma3Chat, kGemma3Json };

struct Output {
  std::vector<int32_t> tokens;
  TaskMetrics metrics;
  bool done = false;
};

Result<std::unique_ptr<RealEngine>> OpenEngine(const std::string& model, const std::string& disk_dir) {
  RealEngineOptions o;
  o.engine.model_path = model;
  o.engine.n_threads = 1;
  o.engine.kv_capacity_bytes = 4u << 20;
  o.store.disk_dir = disk_dir;
  o.calibrate = false;
  return RealEngine::Open(o);
}

TaskRequest Request(Model model, Tier tier, const std::string& prompt, int32_t max_tokens,
                    std::map<TaskId, Output>& out) {
  TaskRequest r;
  r.tier = tier;
  r.system_prompt = "Once upon a time there was a little girl named Lily.";
  if (model != Model::kStories) {
    r.messages = {{"user", prompt}};
  } else {
    r.prompt = prompt;
  }
  r.max_tokens = max_tokens;
  if (model == Model::kGemma3Json && tier != Tier::kForegroundChat) {
    r.constraint = {ConstraintKind::kJsonSchema, R"({"type":"object","properties":{
        "title":{"type":"string","minLength":40,"maxLength":80},"year":{"type":"integer"}},
        "required":["title","year"],"additionalProperties":false})"};
  }
  r.sampling.temperature = 0.8f;  // seeded sampling: the sampler state must survive parking too
  r.sampling.seed = 42;
  r.callbacks.on_token = [&out](TaskId id, int32_t token, std::string_view) { out[id].tokens.push_back(token); };
  r.callbacks.on_done = [&out](TaskId id, const TaskResult& res) {
    out[id].done = res.state == TaskState::kDone;
    out[id].metrics = res.metrics;
  };
  return r;
}

class RealEngineParkTest : public ::testing::TestWithParam<std::tuple<Model, ParkPolicy>> {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/valet_sched_real_" + std::to_string(static_cast<int>(model())) + "_" +
           std::to_string(static_cast<int>(policy()));
    std::filesystem::create_directories(dir_);
    if (model() != Model::kStories) {
      model_path_ = dir_ + "/gemma3.gguf";
      SynthModelOptions o;
      o.arch = "gemma3";
      o.type = GgmlType::kQ8_0;
      o.vocab_path = VALET_GEMMA3_VOCAB;
      ASSERT_TRUE(WriteSyntheticModel(o, model_path_).ok());
    } else {
      model_path_ = std::string(VALET_SHARED_DIR) + "/models/stories260K.gguf";
      if (!std::filesystem::exists(model_path_)) GTEST_SKIP() << "needs " << model_path_ << " (../shared)";
    }
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  Model model() const { return std::get<0>(GetParam()); }
  ParkPolicy policy() const { return std::get<1>(GetParam()); }
  std::string dir_;
  std::string model_path_;
};

TEST_P(RealEngineParkTest, OutputWithPreemptionsEqualsOutputAlone) {
  const std::string story = " She liked to play in the park with her dog.";
  std::vector<int32_t> alone;
  {
    Result<std::unique_ptr<RealEngine>> engine = OpenEngine(model_path_, dir_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    SchedulerCore core(**engine, {});
    std::map<TaskId, Output> out;
    const TaskId id = *core.Submit(Request(model(), Tier::kOfflineIndexing, story, 32, out));
    core.RunUntilIdle();
    ASSERT_TRUE(out[id].done);
    alone = out[id].tokens;
  }
  Result<std::unique_ptr<RealEngine>> engine = OpenEngine(model_path_, dir_);
  ASSERT_TRUE(engine.ok());
  SchedulerOptions o;
  o.park_policy = policy();
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).prefill_chunk = 4;  // park mid-prompt too
  SchedulerCore core(**engine, o);
  std::map<TaskId, Output> out;
  const TaskId bg = *core.Submit(Request(model(), Tier::kOfflineIndexing, story, 32, out));
  for (int round = 0; round < 6; ++round) {
    // The previous foreground task takes two steps (prompt, one decode), then
    // the background runs three before the next arrival.
    for (int i = 0; i < 5; ++i) core.RunOneStep();
    ASSERT_TRUE(core.Submit(Request(model(), Tier::kForegroundChat, " The sun", 2, out)).ok());
  }
  core.RunUntilIdle();
  ASSERT_TRUE(out[bg].done);
  EXPECT_EQ(out[bg].tokens, alone);
  EXPECT_EQ(out[bg].metrics.parks, 6);
  const size_t kind = static_cast<size_t>(policy()) - 1;
  const size_t partial = static_cast<size_t>(ParkKind::kPartial);
  // The engine may fall back to recompute (partial) when a snapshot cannot be kept.
  const int32_t parks = out[bg].metrics.parks_by_kind[kind] + (kind == partial ? 0 : out[bg].metrics.parks_by_kind[partial]);
  EXPECT_EQ(parks, 6);
  EXPECT_EQ(out[bg].metrics.parks_by_kind[kind], 6) << "the engine fell back";
  EXPECT_EQ(core.recorder().Stats().failed, 0);
}

// A constraint is compiled at submission: one that does not compile is
// refused there, naming what is wrong, and nothing is queued.
TEST(RealEngineConstraintTest, ABadConstraintIsRefusedAtSubmission) {
  const std::string model = std::string(VALET_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "needs " << model << " (../shared)";
  const std::string dir = ::testing::TempDir() + "/valet_sched_constraint";
  Result<std::unique_ptr<RealEngine>> engine = OpenEngine(model, dir);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  SchedulerCore core(**engine, {});
  struct Bad {
    Constraint constraint;
    const char* error;
  };
  for (const Bad& b : {Bad{{ConstraintKind::kJsonSchema, R"({"type":"integer","multipleOf":2})"}, "'multipleOf'"},
                       Bad{{ConstraintKind::kJsonSchema, "{\"type\":"}, "json schema:"},
                       Bad{{ConstraintKind::kGrammar, "root ::= nope"}, "undefined rule 'nope'"},
                       Bad{{ConstraintKind::kRegex, "(?=a)"}, "lookaround"},
                       Bad{{ConstraintKind::kJsonObject, "", 99}, "max_whitespace"}}) {
    TaskRequest r;
    r.prompt = "Once";
    r.constraint = b.constraint;
    Result<TaskId> id = core.Submit(std::move(r));
    ASSERT_FALSE(id.ok()) << b.error;
    EXPECT_NE(id.status().message().find(b.error), std::string::npos) << id.status().message();
  }
  EXPECT_FALSE(core.HasRunnableWork());
  std::filesystem::remove_all(dir);
}

// onTrimMemory asks for RAM back: with the UI gone, a parked task's KV goes
// to a disk snapshot while the disk tier has room, so nothing is recomputed;
// without a disk tier, or while the user may be waiting on the next step
// (RUNNING_LOW), it is dropped down to its shared prefix. The output is the same.
TEST(RealEngineTrimTest, TrimmedParkedWorkGoesToDiskWhenItCan) {
  const std::string model = std::string(VALET_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "needs " << model << " (../shared)";
  const std::string dir = ::testing::TempDir() + "/valet_sched_trim";
  std::filesystem::create_directories(dir);
  const std::string story = " She liked to play in the park with her dog.";
  std::vector<int32_t> alone;
  struct Case {
    TrimLevel level;
    bool disk_tier;
    ParkKind expected;
  };
  for (const Case c : {Case{TrimLevel::kUiHidden, true, ParkKind::kSnapshotDisk},
                       Case{TrimLevel::kUiHidden, false, ParkKind::kPartial},
                       Case{TrimLevel::kRunningLow, true, ParkKind::kPartial}}) {
    Result<std::unique_ptr<RealEngine>> engine = OpenEngine(model, c.disk_tier ? dir : "");
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    SchedulerCore core(**engine, {});
    std::map<TaskId, Output> out;
    const TaskId bg = *core.Submit(Request(Model::kStories, Tier::kOfflineIndexing, story, 24, out));
    for (int i = 0; i < 4; ++i) core.RunOneStep();
    ASSERT_TRUE(core.Submit(Request(Model::kStories, Tier::kForegroundChat, " The sun", 2, out)).ok());
    core.RunOneStep();  // the indexer is parked resident: the pool has room
    ASSERT_TRUE(core.memory().OnTrimMemory(c.level).ok());
    core.RunUntilIdle();
    ASSERT_TRUE(out[bg].done);
    if (alone.empty()) alone = out[bg].tokens;
    EXPECT_EQ(out[bg].tokens, alone);
    const SchedulerStats s = core.recorder().Stats();
    EXPECT_EQ(s.parks_by_kind[static_cast<size_t>(c.expected)], 1) << TrimLevelName(c.level) << " " << c.disk_tier;
    EXPECT_EQ(s.tokens_recomputed == 0, c.expected == ParkKind::kSnapshotDisk);
  }
  std::filesystem::remove_all(dir);
}

std::string ParamName(const ::testing::TestParamInfo<std::tuple<Model, ParkPolicy>>& info) {
  constexpr const char* kPolicies[] = {"auto", "resident", "ram", "disk", "partial", "full"};
  constexpr const char* kModels[] = {"stories", "gemma3_chat", "gemma3_json"};
  const char* model = kModels[static_cast<int>(std::get<0>(info.param))];
  return std::string(model) + "_" + kPolicies[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(AllKinds, RealEngineParkTest,
                         ::testing::Combine(::testing::Values(Model::kStories, Model::kGemma3Chat),
                                            ::testing::Values(ParkPolicy::kForceResident, ParkPolicy::kForceSnapshotRam,
                                                              ParkPolicy::kForceSnapshotDisk,
                                                              ParkPolicy::kForcePartial, ParkPolicy::kForceFull)),
                         ParamName);

// Masks over Gemma 3's 262k vocabulary cost milliseconds in a new string
// context, so the constrained chat runs under the two parks that differ most
// (everything kept on disk, everything dropped and recomputed).
INSTANTIATE_TEST_SUITE_P(Constrained, RealEngineParkTest,
                         ::testing::Combine(::testing::Values(Model::kGemma3Json),
                                            ::testing::Values(ParkPolicy::kForceSnapshotDisk, ParkPolicy::kForceFull)),
                         ParamName);

}  // namespace
}  // namespace valet
