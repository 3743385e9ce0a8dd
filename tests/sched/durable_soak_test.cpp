// The kill soak of durable tasks: three seeded background tasks run in a
// child process that kills itself (SIGKILL, the fault switches) in the middle
// of a random journal append or between a KV checkpoint's write and its
// rename, again and again, each new child recovering
// what the last one journaled; at the end every task holds exactly the tokens
// of an uninterrupted run. Nothing is timed: the kills come from the switch.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/real_engine.h"
#include "sched/scheduler_core.h"
#include "durable/task_checkpoint.h"
#include "testing/sched/durable_faults.h"

namespace valet {
namespace {

namespace fs = std::filesystem;

constexpr int kTasks = 3;

std::unique_ptr<RealEngine> OpenEngine(const std::string& model) {
  RealEngineOptions o;
  o.engine.model_path = model;
  o.engine.n_threads = 1;
  o.engine.kv_capacity_bytes = 8u << 20;
  o.calibrate = false;
  Result<std::unique_ptr<RealEngine>> engine = RealEngine::Open(o);
  return engine.ok() ? std::move(*engine) : nullptr;
}

SchedulerOptions Options(const std::string& dir, DurableWriteHooks hooks = {}) {
  SchedulerOptions o;
  o.durable_write_hooks = std::move(hooks);
  o.durable_dir = dir;
  o.model_fingerprint = "soak-model";
  return o;
}

TaskRequest SoakRequest(int i) {
  TaskRequest r;
  r.tier = i == 0 ? Tier::kBackgroundSummary : Tier::kOfflineIndexing;
  r.prompt = i == 1 ? "The dog ran to the park and" : "Once upon a time, there was a little";
  r.max_tokens = 64 + 4 * i;
  r.sampling.temperature = 0.8f;
  r.sampling.repeat_penalty = 1.1f;
  r.sampling.seed = 100 + static_cast<uint64_t>(i);
  r.durable = true;
  r.durable_key = "soak-" + std::to_string(i);
  return r;
}

// Submits (first run) or recovers the tasks and runs them to the end, with a
// memory trim every few steps, which writes the tasks' KV checkpoints. The
// first life that restores KV from a checkpoint leaves a file `restored_mark`;
// `faults` kill it when they say.
void RunTasks(const std::string& model, const std::string& dir, bool first, const std::string& restored_mark = "",
              const testing::FaultPlan& faults = {}) {
  std::unique_ptr<RealEngine> engine = OpenEngine(model);
  if (!engine) _exit(3);
  SchedulerCore core(*engine, Options(dir, testing::KillHooks(faults)));
  if (first) {
    for (int i = 0; i < kTasks; ++i) {
      if (!core.Submit(SoakRequest(i)).ok()) _exit(4);
    }
  } else if (!core.journals().Recover().ok()) {
    _exit(5);
  }
  for (int step = 1; core.RunOneStep(); ++step) {
    if (step % 4 == 0 && !core.memory().OnTrimMemory(TrimLevel::kRunningModerate).ok()) _exit(6);
    if (!restored_mark.empty() && core.recorder().Stats().durable_restored_tokens > 0 && !fs::exists(restored_mark)) {
      std::FILE* f = std::fopen(restored_mark.c_str(), "w");
      if (f != nullptr) std::fclose(f);
    }
  }
}

// The journals as the scheduler over `model` reads them (its identity).
std::map<std::string, std::vector<int32_t>> Finished(const std::string& model, const std::string& dir) {
  std::map<std::string, std::vector<int32_t>> out;
  std::unique_ptr<RealEngine> engine = OpenEngine(model);
  EXPECT_TRUE(engine);
  Result<PrivateDir> journals = PrivateDir::Open(dir);
  EXPECT_TRUE(journals.ok()) << journals.status().ToString();
  if (!engine || !journals.ok()) return out;
  Result<JournalScan> scan = ListJournals(*journals, SchedulerJournalIdentity(*engine, "soak-model", false));
  EXPECT_TRUE(scan.ok()) << scan.status().ToString();
  if (!scan.ok()) return out;
  EXPECT_TRUE(scan->skipped.empty());
  for (const JournalContents& c : scan->journals) {
    EXPECT_TRUE(c.finished()) << c.task_key;
    out[c.task_key] = c.tokens;
  }
  return out;
}

TEST(DurableSoakTest, RandomKillsMidAppendAndMidCheckpointLoseAndChangeNothing) {
  const std::string model = std::string(VALET_SHARED_DIR) + "/models/synth-tiny-q8_0.gguf";
  if (!fs::exists(model)) GTEST_SKIP() << "needs " << model << " (../shared)";
  const std::string root = ::testing::TempDir() + "/valet_soak_" + std::to_string(::getpid());
  fs::remove_all(root);
  // The uninterrupted run, in this process (its engine is gone before any fork).
  RunTasks(model, root + "/reference", true);
  const std::map<std::string, std::vector<int32_t>> reference = Finished(model, root + "/reference");
  ASSERT_EQ(reference.size(), static_cast<size_t>(kTasks));

  std::mt19937 rng(2026);
  int kills = 0;
  for (int round = 0;; ++round) {
    ASSERT_LT(round, 500) << "no progress";
    // Every other life dies during the 2nd-5th journal append from here,
    // after 0-63 of its bytes, the others in their 1st-3rd checkpoint write
    // between the write and the rename; so every life journals something and
    // dies before the tasks can all end.
    const int64_t append = 2 + static_cast<int64_t>(rng() % 4);
    const uint32_t after_bytes = static_cast<uint32_t>(rng() % 64);
    const int64_t checkpoint_write = 1 + static_cast<int64_t>(rng() % 3);
    const testing::FaultPlan faults = round % 2 == 0
                                          ? testing::FaultPlan{.journal_append = append, .after_bytes = after_bytes}
                                          : testing::FaultPlan{.checkpoint_rename = checkpoint_write};
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      RunTasks(model, root + "/killed", round == 0, root + "/restored", faults);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status)) {
      ASSERT_EQ(WEXITSTATUS(status), 0);
      break;  // a life long enough to finish every task
    }
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    ++kills;
  }
  EXPECT_GE(kills, 20);
  std::printf("%d kills\n", kills);
  EXPECT_TRUE(fs::exists(root + "/restored")) << "no life restored KV from a checkpoint";
  const std::map<std::string, std::vector<int32_t>> survived = Finished(model, root + "/killed");
  EXPECT_EQ(survived.size(), reference.size()) << "lost tasks";
  for (const auto& [key, tokens] : reference) {
    EXPECT_EQ(survived.count(key) ? survived.at(key) : std::vector<int32_t>{}, tokens) << "mismatched " << key;
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace valet
