// Durable tasks on the real engine: a task whose scheduler and engine are
// dropped mid-generation (as a killed process drops them) is found again by
// a new scheduler on a new engine and finishes with exactly the tokens of an
// uninterrupted run, seeded sampling and penalties included; also from a
// journal whose last record was torn. Finished tasks wait for their Ack.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/real_engine.h"
#include "sched/scheduler_core.h"
#include "durable/task_checkpoint.h"

namespace valet {
namespace {

namespace fs = std::filesystem;

class DurableTaskTest : public ::testing::TestWithParam<const char*> {
 public:
  void SetUp() override {
    model_ = std::string(VALET_SHARED_DIR) + "/models/" + GetParam();
    if (!fs::exists(model_)) GTEST_SKIP() << "needs " << model_ << " (../shared)";
    dir_ = ::testing::TempDir() + "/valet_durable_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // A new engine, as a restarted process has.
  std::unique_ptr<RealEngine> OpenEngine(KvType kv_type = KvType::kF16, int32_t n_ctx = 0) {
    RealEngineOptions o;
    o.engine.model_path = model_;
    o.engine.kv_type = kv_type;
    o.engine.n_ctx = n_ctx;
    o.engine.n_threads = 1;
    o.engine.kv_capacity_bytes = 8u << 20;
    o.store.disk_dir = dir_ + "/snapshots";
    o.calibrate = false;
    Result<std::unique_ptr<RealEngine>> engine = RealEngine::Open(o);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? std::move(*engine) : nullptr;
  }

  SchedulerOptions Options(const std::string& fingerprint = "model-a") const {
    SchedulerOptions o;
    o.durable_dir = dir_ + "/tasks";
    o.model_fingerprint = fingerprint;
    for (LifecycleState state : {LifecycleState::kCreated, LifecycleState::kStarted, LifecycleState::kResumed}) {
      o.budgets.at(state, Tier::kOfflineIndexing).prefill_chunk = 7;  // odd chunks: recovery re-prefills differently
    }
    return o;
  }

  static TaskRequest Request() {
    TaskRequest r;
    r.tier = Tier::kOfflineIndexing;
    r.prompt = "Once upon a time, in a small village by the sea, there lived";
    r.max_tokens = 48;
    r.sampling.temperature = 0.9f;
    r.sampling.top_k = 40;
    r.sampling.repeat_penalty = 1.1f;
    r.sampling.presence_penalty = 0.3f;
    r.sampling.seed = 4242;
    r.durable = true;
    r.durable_key = "story-1";
    return r;
  }

  std::string model_, dir_;
};

// Steps until the task has generated `n` tokens (or is done).
std::vector<int32_t> RunUntilTokens(SchedulerCore& core, TaskRequest request, size_t n) {
  std::vector<int32_t> tokens;
  request.callbacks.on_token = [&](TaskId, int32_t token, std::string_view) { tokens.push_back(token); };
  EXPECT_TRUE(core.Submit(std::move(request)).ok());
  while (tokens.size() < n && core.RunOneStep()) {
  }
  return tokens;
}

// Runs `request` alone, then killed after 1, 9 and all but one of its tokens
// and recovered: each recovery must finish with the uninterrupted tokens.
void ExpectKillsResumeExactly(DurableTaskTest& t, const TaskRequest& request) {
  std::vector<int32_t> reference;
  {
    std::unique_ptr<RealEngine> engine = t.OpenEngine();
    ASSERT_TRUE(engine);
    SchedulerCore core(*engine, t.Options());
    reference = RunUntilTokens(core, request, 1000);
    ASSERT_FALSE(core.HasRunnableWork());
    ASSERT_GT(reference.size(), 20u);
    // Ended, it waits for the app: found as DONE, then acknowledged.
    Result<RecoveryReport> found = core.journals().Recover();
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    ASSERT_EQ(found->tasks.size(), 1u);
    EXPECT_EQ(found->tasks[0].state, TaskState::kDone);
    EXPECT_EQ(found->tasks[0].tokens, reference);
    EXPECT_EQ(found->tasks[0].id, 0);
    EXPECT_EQ(core.journals().Ack("story-1").code(), StatusCode::kOk);
    EXPECT_EQ(core.journals().Ack("story-1").code(), StatusCode::kNotFound);
    EXPECT_EQ(core.journals().Ack("../story-1").code(), StatusCode::kInvalidArgument);
  }
  for (size_t kill_after : {size_t{1}, size_t{9}, reference.size() - 1}) {
    SCOPED_TRACE("killed after " + std::to_string(kill_after) + " tokens");
    std::vector<int32_t> before;
    {
      std::unique_ptr<RealEngine> engine = t.OpenEngine();
      SchedulerCore core(*engine, t.Options());
      before = RunUntilTokens(core, request, kill_after);
      ASSERT_EQ(before.size(), kill_after);
      // Scheduler and engine go without finishing anything, as a killed process does.
    }
    std::unique_ptr<RealEngine> engine = t.OpenEngine();
    SchedulerCore core(*engine, t.Options());
    std::vector<int32_t> after;
    TaskResult result;
    Result<RecoveryReport> recovered = core.journals().Recover([&](const RecoveredTask& t) {
      EXPECT_EQ(t.durable_key, "story-1");
      EXPECT_NE(t.id, 0) << "callbacks are made for the id the task runs under";
      TaskCallbacks callbacks;
      callbacks.on_token = [&](TaskId, int32_t token, std::string_view) { after.push_back(token); };
      callbacks.on_done = [&](TaskId, const TaskResult& r) { result = r; };
      return callbacks;
    });
    ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
    ASSERT_EQ(recovered->tasks.size(), 1u);
    EXPECT_EQ(recovered->tasks[0].tokens, before);
    EXPECT_NE(recovered->tasks[0].id, 0);
    core.RunUntilIdle();
    std::vector<int32_t> whole = before;
    whole.insert(whole.end(), after.begin(), after.end());
    EXPECT_EQ(whole, reference);
    EXPECT_EQ(result.tokens, reference) << "the result holds the tokens from before the restart too";
    EXPECT_EQ(result.durable_key, "story-1");
    EXPECT_EQ(core.journals().Ack("story-1").code(), StatusCode::kOk);
  }
}

TEST_P(DurableTaskTest, AKilledTaskFinishesWithTheTokensOfAnUninterruptedRun) {
  ExpectKillsResumeExactly(*this, Request());
}

// The constraint is journaled with the task and its matcher replayed from the
// journaled tokens: the recovered task goes on under it, token for token.
TEST_P(DurableTaskTest, AKilledConstrainedTaskResumesUnderItsConstraint) {
  TaskRequest r = Request();
  r.constraint = {ConstraintKind::kRegex, R"(\{"note":"[a-z ]{30,60}","n":[0-9]{1,4}\})"};
  r.max_tokens = 200;
  ExpectKillsResumeExactly(*this, r);
}

// Restarted on a low battery, a recovered durable indexing task waits (the
// power column) and, once the phone charges, finishes with the tokens of an
// uninterrupted run.
TEST_P(DurableTaskTest, ARecoveredTaskWaitsForTheBatteryAcrossARestart) {
  std::vector<int32_t> reference;
  {
    std::unique_ptr<RealEngine> engine = OpenEngine();
    ASSERT_TRUE(engine);
    SchedulerCore core(*engine, Options());
    reference = RunUntilTokens(core, Request(), 1000);
    ASSERT_TRUE(core.journals().Ack("story-1").ok());
  }
  std::vector<int32_t> before;
  {
    std::unique_ptr<RealEngine> engine = OpenEngine();
    SchedulerCore core(*engine, Options());
    before = RunUntilTokens(core, Request(), 5);
  }
  std::unique_ptr<RealEngine> engine = OpenEngine();
  SchedulerOptions options = Options();
  options.initial_power.charging = false;
  options.initial_power.battery_low = true;
  SchedulerCore core(*engine, options);
  std::vector<int32_t> after;
  Result<RecoveryReport> recovered = core.journals().Recover([&](const RecoveredTask&) {
    TaskCallbacks callbacks;
    callbacks.on_token = [&](TaskId, int32_t token, std::string_view) { after.push_back(token); };
    return callbacks;
  });
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  ASSERT_EQ(recovered->tasks.size(), 1u);
  EXPECT_FALSE(core.RunOneStep());
  EXPECT_TRUE(after.empty());
  PowerState charging = options.initial_power;
  charging.charging = true;
  ASSERT_TRUE(core.OnPowerState(charging).ok());
  core.RunUntilIdle();
  std::vector<int32_t> whole = before;
  whole.insert(whole.end(), after.begin(), after.end());
  EXPECT_EQ(whole, reference);
}

TEST_P(DurableTaskTest, ATornLastRecordResumesFromTheOneBefore) {
  std::vector<int32_t> reference;
  {
    std::unique_ptr<RealEngine> engine = OpenEngine();
    SchedulerCore core(*engine, Options());
    reference = RunUntilTokens(core, Request(), 1000);
    ASSERT_TRUE(core.journals().Ack("story-1").ok());
  }
  {
    std::unique_ptr<RealEngine> engine = OpenEngine();
    SchedulerCore core(*engine, Options());
    ASSERT_EQ(RunUntilTokens(core, Request(), 12).size(), 12u);
  }
  const std::string path = JournalPath(dir_ + "/tasks", "story-1");
  fs::resize_file(path, fs::file_size(path) - 5);  // the 12th token's record, torn
  std::unique_ptr<RealEngine> engine = OpenEngine();
  SchedulerCore core(*engine, Options());
  TaskResult result;
  Result<RecoveryReport> recovered = core.journals().Recover([&](const RecoveredTask&) {
    TaskCallbacks callbacks;
    callbacks.on_done = [&](TaskId, const TaskResult& r) { result = r; };
    return callbacks;
  });
  ASSERT_TRUE(recovered.ok());
  ASSERT_EQ(recovered->tasks.size(), 1u);
  EXPECT_EQ(recovered->tasks[0].tokens.size(), 11u);
  core.RunUntilIdle();
  EXPECT_EQ(result.tokens, reference);
}

TEST_P(DurableTaskTest, AnotherModelsJournalsAreLeftAloneAndCancelForgets) {
  {
    std::unique_ptr<RealEngine> engine = OpenEngine();
    SchedulerCore core(*engine, Options());
    ASSERT_EQ(RunUntilTokens(core, Request(), 3).size(), 3u);
  }
  std::unique_ptr<RealEngine> engine = OpenEngine();
  {
    SchedulerCore core(*engine, Options("model-b"));
    Result<RecoveryReport> other = core.journals().Recover();
    ASSERT_TRUE(other.ok());
    EXPECT_TRUE(other->tasks.empty());
    ASSERT_EQ(other->skipped.size(), 1u);
    EXPECT_EQ(other->skipped[0].second.code(), StatusCode::kUnsupported) << other->skipped[0].second.ToString();
    EXPECT_TRUE(fs::exists(JournalPath(dir_ + "/tasks", "story-1"))) << "never deleted for being foreign";
  }
  SchedulerCore core(*engine, Options());
  Result<RecoveryReport> mine = core.journals().Recover();
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->tasks.size(), 1u);
  EXPECT_EQ(core.journals().Ack("story-1").code(), StatusCode::kInvalidArgument) << "still running";
  EXPECT_TRUE(core.journals().Recover()->tasks.empty()) << "a running task is not recovered twice";
  ASSERT_TRUE(core.Cancel(mine->tasks[0].id).ok());
  EXPECT_FALSE(fs::exists(JournalPath(dir_ + "/tasks", "story-1")));

  SchedulerOptions no_dir;
  SchedulerCore plain(*engine, no_dir);
  EXPECT_EQ(plain.Submit(Request()).status().code(), StatusCode::kInvalidArgument);
}

// On the real engine the KV type and the context decide tokens too (F16 and
// F32 keys round differently; the context picks RoPE factors and bounds
// max_tokens 0): a journal written under one is skipped under another, naming
// the setting and both values, and resumes under its own with the tokens of
// an uninterrupted run.
TEST_P(DurableTaskTest, AJournalOfAnotherKvTypeOrContextIsSkippedAndResumesUnderItsOwn) {
  std::vector<int32_t> reference;
  int32_t context = 0;
  {
    std::unique_ptr<RealEngine> engine = OpenEngine();
    ASSERT_TRUE(engine);
    context = engine->context_length();
    SchedulerCore core(*engine, Options());
    reference = RunUntilTokens(core, Request(), 1000);
    ASSERT_TRUE(core.journals().Ack("story-1").ok());
  }
  {
    std::unique_ptr<RealEngine> engine = OpenEngine();
    SchedulerCore core(*engine, Options());
    ASSERT_EQ(RunUntilTokens(core, Request(), 9).size(), 9u);
  }
  const std::string journal = JournalPath(dir_ + "/tasks", "story-1");
  const uintmax_t size = fs::file_size(journal);
  struct Other {
    KvType kv_type;
    int32_t n_ctx;
    std::string reason;
  };
  for (const Other& other : {Other{KvType::kF32, 0, "kv_type differs: journal f16, now f32"},
                             Other{KvType::kF16, 64, "context_length differs: journal " + std::to_string(context) +
                                                         ", now 64"}}) {
    SCOPED_TRACE(other.reason);
    std::unique_ptr<RealEngine> engine = OpenEngine(other.kv_type, other.n_ctx);
    ASSERT_TRUE(engine);
    SchedulerCore core(*engine, Options());
    Result<RecoveryReport> found = core.journals().Recover();
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_TRUE(found->tasks.empty());
    ASSERT_EQ(found->skipped.size(), 1u);
    EXPECT_EQ(found->skipped[0].second.code(), StatusCode::kUnsupported);
    EXPECT_NE(found->skipped[0].second.message().find(other.reason), std::string::npos)
        << found->skipped[0].second.message();
    EXPECT_EQ(fs::file_size(journal), size) << "left as it was";
  }
  std::unique_ptr<RealEngine> engine = OpenEngine();
  SchedulerCore core(*engine, Options());
  TaskResult result;
  Result<RecoveryReport> recovered = core.journals().Recover([&](const RecoveredTask&) {
    TaskCallbacks callbacks;
    callbacks.on_done = [&](TaskId, const TaskResult& r) { result = r; };
    return callbacks;
  });
  ASSERT_TRUE(recovered.ok());
  ASSERT_EQ(recovered->tasks.size(), 1u);
  EXPECT_EQ(recovered->tasks[0].tokens.size(), 9u);
  core.RunUntilIdle();
  EXPECT_EQ(result.tokens, reference);
}

// The threaded Scheduler: Stop keeps durable tasks in their journals (their
// run here ends CANCELLED), and a new Scheduler's Recover finishes them. The
// app's callbacks_for runs on Recover's own thread, never the inference
// thread, and the resumed task's tokens all reach the callbacks it gives.
TEST_P(DurableTaskTest, StoppingTheThreadedSchedulerKeepsDurableTasksForTheNext) {
  std::unique_ptr<RealEngine> engine = OpenEngine();
  std::vector<int32_t> reference;
  {
    SchedulerCore core(*engine, Options());
    reference = RunUntilTokens(core, Request(), 1000);
    ASSERT_TRUE(core.journals().Ack("story-1").ok());
  }
  std::vector<int32_t> before;
  {
    std::unique_ptr<Scheduler> scheduler = std::move(Scheduler::Create(*engine, Options()).value());
    std::promise<void> some;
    TaskRequest request = Request();
    request.callbacks.on_token = [&](TaskId, int32_t token, std::string_view) {
      before.push_back(token);
      if (before.size() == 5) some.set_value();
    };
    TaskResult stopped;
    request.callbacks.on_done = [&](TaskId, const TaskResult& r) { stopped = r; };
    ASSERT_TRUE(scheduler->Submit(std::move(request)).ok());
    some.get_future().wait();
    ASSERT_TRUE(scheduler->Stop().ok());
    EXPECT_EQ(stopped.durable_key, "story-1");
    // Almost always stopped mid-way; on a starved test thread it may have ended first.
    EXPECT_EQ(stopped.state, before.size() < reference.size() ? TaskState::kCancelled : TaskState::kDone);
  }
  std::unique_ptr<Scheduler> scheduler = std::move(Scheduler::Create(*engine, Options()).value());
  TaskResult result;
  if (before.size() == reference.size()) {
    Result<RecoveryReport> ended = scheduler->Recover();
    ASSERT_TRUE(ended.ok());
    ASSERT_EQ(ended->tasks.size(), 1u);
    EXPECT_EQ(ended->tasks[0].state, TaskState::kDone);
    EXPECT_EQ(ended->tasks[0].tokens, reference);
    return;
  }
  std::thread::id asked_on;
  std::vector<int32_t> after;
  Result<RecoveryReport> recovered = scheduler->Recover([&](const RecoveredTask&) {
    asked_on = std::this_thread::get_id();
    TaskCallbacks callbacks;
    callbacks.on_token = [&](TaskId, int32_t token, std::string_view) { after.push_back(token); };
    callbacks.on_done = [&](TaskId, const TaskResult& r) { result = r; };
    return callbacks;
  });
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  EXPECT_EQ(asked_on, std::this_thread::get_id());
  ASSERT_EQ(recovered->tasks.size(), 1u);
  EXPECT_EQ(recovered->tasks[0].tokens, before);
  scheduler->WaitIdle();
  EXPECT_EQ(result.tokens, reference);
  before.insert(before.end(), after.begin(), after.end());
  EXPECT_EQ(before, reference);  // none of its new tokens was delivered before its callbacks were known
  EXPECT_EQ(scheduler->Stats().tasks_by_tier[static_cast<size_t>(Tier::kOfflineIndexing)].done, 1);
  EXPECT_TRUE(scheduler->Ack("story-1").ok());
  EXPECT_EQ(scheduler->Ack("story-1").code(), StatusCode::kNotFound);
}

// ON_STOP writes the task's KV beside its journal; after the kill the new
// engine takes it back instead of recomputing, and the output is the same.
// A damaged checkpoint, or one of another task, is passed over: recomputed.
TEST_P(DurableTaskTest, AKvCheckpointFromOnStopIsRestoredInsteadOfRecomputed) {
  std::vector<int32_t> reference;
  {
    std::unique_ptr<RealEngine> engine = OpenEngine();
    SchedulerCore core(*engine, Options());
    reference = RunUntilTokens(core, Request(), 1000);
    ASSERT_TRUE(core.journals().Ack("story-1").ok());
  }
  const std::string checkpoint = CheckpointPath(dir_ + "/tasks", "story-1");
  enum class Damage { kNone, kFlippedByte, kOtherTask };
  for (Damage damage : {Damage::kNone, Damage::kFlippedByte, Damage::kOtherTask}) {
    SCOPED_TRACE("damage " + std::to_string(static_cast<int>(damage)));
    {
      std::unique_ptr<RealEngine> engine = OpenEngine();
      SchedulerCore core(*engine, Options());
      std::vector<int32_t> tokens;
      TaskRequest request = Request();
      request.callbacks.on_token = [&](TaskId, int32_t token, std::string_view) { tokens.push_back(token); };
      ASSERT_TRUE(core.Submit(std::move(request)).ok());
      while (tokens.size() < 9) ASSERT_TRUE(core.RunOneStep());
      ASSERT_TRUE(core.OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
      ASSERT_TRUE(core.OnLifecycleEvent(LifecycleEvent::kOnStop).ok());
      EXPECT_EQ(core.recorder().Stats().durable_checkpoints, 1);
      ASSERT_TRUE(fs::exists(checkpoint));
      // Three more tokens: the journal goes further than the checkpoint.
      while (tokens.size() < 12) ASSERT_TRUE(core.RunOneStep());
    }
    if (damage == Damage::kFlippedByte) {
      std::fstream f(checkpoint, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(fs::file_size(checkpoint) / 2));
      f.put('\x5a');
    } else if (damage == Damage::kOtherTask) {
      // A checkpoint whose history is not this task's: another prompt's.
      std::unique_ptr<RealEngine> engine = OpenEngine();
      SchedulerCore core(*engine, Options());
      TaskRequest other = Request();
      other.durable_key = "story-2";
      other.prompt = "The dog ran to the park and then it";
      ASSERT_EQ(RunUntilTokens(core, other, 4).size(), 4u);
      ASSERT_TRUE(core.OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
      ASSERT_TRUE(core.OnLifecycleEvent(LifecycleEvent::kOnStop).ok());
      fs::copy_file(CheckpointPath(dir_ + "/tasks", "story-2"), checkpoint, fs::copy_options::overwrite_existing);
    }
    fs::remove(CheckpointPath(dir_ + "/tasks", "story-2"));
    fs::remove(JournalPath(dir_ + "/tasks", "story-2"));
    std::unique_ptr<RealEngine> engine = OpenEngine();
    SchedulerCore core(*engine, Options());
    TaskResult result;
    ASSERT_TRUE(core.journals().Recover([&](const RecoveredTask&) {
                      TaskCallbacks callbacks;
                      callbacks.on_done = [&](TaskId, const TaskResult& r) { result = r; };
                      return callbacks;
                    }).ok());
    core.RunUntilIdle();
    EXPECT_EQ(result.tokens, reference);
    const int64_t restored = core.recorder().Stats().durable_restored_tokens;
    if (damage == Damage::kNone) {
      // The prompt and the 8 tokens fed before ON_STOP (the 9th was pending).
      EXPECT_GT(restored, 8);
    } else {
      EXPECT_EQ(restored, 0);
    }
    EXPECT_FALSE(fs::exists(checkpoint)) << "an ended task's checkpoint is removed";
    ASSERT_TRUE(core.journals().Ack("story-1").ok());
  }
}

// Unacknowledged results fill the directory's budget: further durable tasks
// are refused until the app acknowledges one; nothing written is dropped.
TEST_P(DurableTaskTest, TheDiskBudgetRefusesNewDurableTasksUntilResultsAreAcknowledged) {
  std::unique_ptr<RealEngine> engine = OpenEngine();
  SchedulerOptions options = Options();
  options.durable_disk_budget_bytes = 1;
  SchedulerCore core(*engine, options);
  TaskRequest first = Request();
  first.max_tokens = 3;
  ASSERT_EQ(RunUntilTokens(core, first, 1000).size(), 3u);
  TaskRequest second = Request();
  second.durable_key = "story-2";
  Result<TaskId> refused = core.Submit(second);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_TRUE(fs::exists(JournalPath(dir_ + "/tasks", "story-1")));
  ASSERT_TRUE(core.journals().Ack("story-1").ok());
  EXPECT_TRUE(core.Submit(second).ok());
}

INSTANTIATE_TEST_SUITE_P(SharedModels, DurableTaskTest, ::testing::Values("synth-tiny-q8_0.gguf"),
                         [](const auto&) { return std::string("synth_tiny_q8_0"); });

}  // namespace
}  // namespace valet
