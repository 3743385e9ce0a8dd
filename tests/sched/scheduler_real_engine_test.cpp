// The scheduler on the real engine (stories260K): a task's output with forced
// preemptions of every park kind is identical to its output run alone.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/real_engine.h"
#include "sched/scheduler_core.h"

namespace valet {
namespace {

const std::string kModel = std::string(VALET_SHARED_DIR) + "/models/stories260K.gguf";

struct Output {
  std::vector<int32_t> tokens;
  TaskMetrics metrics;
  bool done = false;
};

Result<std::unique_ptr<RealEngine>> OpenEngine(const std::string& disk_dir) {
  RealEngineOptions o;
  o.engine.model_path = kModel;
  o.engine.n_threads = 1;
  o.engine.kv_capacity_bytes = 4u << 20;
  o.store.disk_dir = disk_dir;
  o.calibrate = false;
  return RealEngine::Open(o);
}

TaskRequest Request(Tier tier, const std::string& prompt, int32_t max_tokens, std::map<TaskId, Output>& out) {
  TaskRequest r;
  r.tier = tier;
  r.system_prompt = "Once upon a time there was a little girl named Lily.";
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.8f;  // seeded sampling: the sampler state must survive parking too
  r.sampling.seed = 42;
  r.callbacks.on_token = [&out](TaskId id, int32_t token, std::string_view) { out[id].tokens.push_back(token); };
  r.callbacks.on_done = [&out](TaskId id, const TaskResult& res) {
    out[id].done = res.state == TaskState::kDone;
    out[id].metrics = res.metrics;
  };
  return r;
}

class RealEngineParkTest : public ::testing::TestWithParam<ParkPolicy> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "needs " << kModel << " (../shared)";
    dir_ = ::testing::TempDir() + "/valet_sched_real_" + std::to_string(static_cast<int>(GetParam()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

TEST_P(RealEngineParkTest, OutputWithPreemptionsEqualsOutputAlone) {
  const std::string story = " She liked to play in the park with her dog.";
  std::vector<int32_t> alone;
  {
    Result<std::unique_ptr<RealEngine>> engine = OpenEngine(dir_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    SchedulerCore core(**engine, {});
    std::map<TaskId, Output> out;
    const TaskId id = *core.Submit(Request(Tier::kOfflineIndexing, story, 32, out));
    core.RunUntilIdle();
    ASSERT_TRUE(out[id].done);
    alone = out[id].tokens;
  }
  Result<std::unique_ptr<RealEngine>> engine = OpenEngine(dir_);
  ASSERT_TRUE(engine.ok());
  SchedulerOptions o;
  o.park_policy = GetParam();
  o.budgets.at(LifecycleState::kResumed, Tier::kOfflineIndexing).prefill_chunk = 4;  // park mid-prompt too
  SchedulerCore core(**engine, o);
  std::map<TaskId, Output> out;
  const TaskId bg = *core.Submit(Request(Tier::kOfflineIndexing, story, 32, out));
  for (int round = 0; round < 6; ++round) {
    // The previous foreground task takes two steps (prompt, one decode), then
    // the background runs three before the next arrival.
    for (int i = 0; i < 5; ++i) core.RunOneStep();
    ASSERT_TRUE(core.Submit(Request(Tier::kForegroundChat, " The sun", 2, out)).ok());
  }
  core.RunUntilIdle();
  ASSERT_TRUE(out[bg].done);
  EXPECT_EQ(out[bg].tokens, alone);
  EXPECT_EQ(out[bg].metrics.parks, 6);
  const size_t kind = static_cast<size_t>(GetParam()) - 1;
  const size_t partial = static_cast<size_t>(ParkKind::kPartial);
  // The engine may fall back to recompute (partial) when a snapshot cannot be kept.
  const int32_t parks = out[bg].metrics.parks_by_kind[kind] + (kind == partial ? 0 : out[bg].metrics.parks_by_kind[partial]);
  EXPECT_EQ(parks, 6);
  EXPECT_EQ(out[bg].metrics.parks_by_kind[kind], 6) << "the engine fell back";
  EXPECT_EQ(core.recorder().Stats().failed, 0);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, RealEngineParkTest,
                         ::testing::Values(ParkPolicy::kForceResident, ParkPolicy::kForceSnapshotRam,
                                           ParkPolicy::kForceSnapshotDisk, ParkPolicy::kForcePartial,
                                           ParkPolicy::kForceFull));

}  // namespace
}  // namespace valet
