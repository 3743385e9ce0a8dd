// A durable task whose disk fills never reports what its journal cannot
// back: the failed write parks it (ParkCause::kJournalIo, no on_done), a
// retry once the disk takes writes again goes on, and a kill while it waits
// loses nothing: every way ends with the uninterrupted run's tokens. The
// disk fills through the journal's write seam (ENOSPC), and for real on a
// small tmpfs when the test runs as root. No sleeps: the core is stepped by
// hand on the fake engine.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/private_files.h"
#include "durable/journal_identity.h"
#include "durable/task_journal.h"
#include "sched_test_util.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;
namespace fs = std::filesystem;

constexpr char kPrompt[] = "index this document, please";
constexpr int32_t kMaxTokens = 30;
constexpr uint64_t kSeed = 11;

// What the disk does to the journal's writes.
struct Disk {
  std::atomic<bool> full{false};       // every write fails
  std::atomic<bool> ends_fail{false};  // Done records fail
  JournalWriteFn Write() {
    return [this](int fd, const void* data, size_t size) -> ssize_t {
      const bool done_record = size > 4 && static_cast<const uint8_t*>(data)[4] == 3;
      if (full || (ends_fail && done_record)) {
        errno = ENOSPC;
        return -1;
      }
      return ::write(fd, data, size);
    };
  }
};

struct Outcome {
  std::vector<int32_t> tokens;  // on_token, in order
  std::vector<TaskResult> done;
};

class DurableDiskFull : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> dir = MakeScratchDirectory("valet-disk-full-");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
  }
  void TearDown() override { fs::remove_all(dir_); }

  SchedulerOptions Options(const std::string& durable_dir) {
    SchedulerOptions o;
    o.clock = engine_.ClockFunction();
    o.durable_dir = durable_dir;
    o.model_fingerprint = "fake";
    return o;
  }
  std::unique_ptr<SchedulerCore> NewCore(Disk& disk, const std::string& durable_dir) {
    auto core = std::make_unique<SchedulerCore>(engine_, Options(durable_dir));
    core->set_journal_write_for_testing(disk.Write());
    return core;
  }
  static TaskRequest Request(Outcome& run, int32_t max_tokens = kMaxTokens) {
    TaskRequest r;
    r.tier = Tier::kOfflineIndexing;
    r.prompt = kPrompt;
    r.max_tokens = max_tokens;
    r.sampling.seed = kSeed;
    r.durable = true;
    r.durable_key = "doc-1";
    r.callbacks.on_token = [&run](TaskId, int32_t token, std::string_view) { run.tokens.push_back(token); };
    r.callbacks.on_done = [&run](TaskId, const TaskResult& result) { run.done.push_back(result); };
    return r;
  }
  std::vector<int32_t> Reference(int32_t max_tokens = kMaxTokens) const {
    return ExpectedAlone(engine_, kPrompt, kSeed, max_tokens);
  }
  // Steps until the task has `n` tokens.
  static void StepUntil(SchedulerCore& core, const Outcome& run, size_t n) {
    while (run.tokens.size() < n && core.RunOneStep()) {
    }
  }
  static void ExpectWaitsForItsJournal(const SchedulerCore& core, TaskId id, const Outcome& run) {
    const Result<TaskInfo> info = core.recorder().Info(id);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->state, TaskState::kParked);
    EXPECT_EQ(info->park_cause, ParkCause::kJournalIo);
    EXPECT_TRUE(run.done.empty()) << "no end before the journal holds it";
    EXPECT_FALSE(core.HasRunnableWork());
  }

  FakeEngine engine_;
  std::string dir_;
};

TEST_F(DurableDiskFull, AFailedTokenWriteParksTheTaskUntilARetryWritesIt) {
  Disk disk;
  std::unique_ptr<SchedulerCore> core = NewCore(disk, dir_ + "/tasks");
  Outcome run;
  const TaskId id = *core->Submit(Request(run));
  StepUntil(*core, run, 10);
  disk.full = true;
  core->RunUntilIdle();
  ExpectWaitsForItsJournal(*core, id, run);
  EXPECT_EQ(core->recorder().Stats().journal_waits, 1);
  core->journals().RetryJournals();  // still full: still waiting
  core->RunUntilIdle();
  ExpectWaitsForItsJournal(*core, id, run);
  disk.full = false;
  core->journals().RetryJournals();
  core->RunUntilIdle();
  ASSERT_EQ(run.done.size(), 1u);
  EXPECT_EQ(run.done[0].state, TaskState::kDone);
  EXPECT_EQ(run.done[0].tokens, Reference());
  EXPECT_EQ(run.tokens, Reference());
  Result<JournalContents> journal = ReadJournal(JournalPath(dir_ + "/tasks", "doc-1"), SchedulerJournalIdentity(engine_, "fake", false));
  ASSERT_TRUE(journal.ok()) << journal.status().ToString();
  EXPECT_TRUE(journal->finished());
  EXPECT_EQ(journal->tokens, Reference());
}

// The other ways back: a lifecycle event, and another durable task's write.
TEST_F(DurableDiskFull, ALifecycleEventOrAnotherDurableWriteRetries) {
  for (bool by_lifecycle : {true, false}) {
    SCOPED_TRACE(by_lifecycle ? "lifecycle event" : "another durable task");
    Disk disk;
    std::unique_ptr<SchedulerCore> core = NewCore(disk, dir_ + (by_lifecycle ? "/a" : "/b"));
    Outcome run;
    const TaskId id = *core->Submit(Request(run));
    StepUntil(*core, run, 5);
    disk.full = true;
    core->RunUntilIdle();
    ExpectWaitsForItsJournal(*core, id, run);
    disk.full = false;
    Outcome other;  // outlives the core's run of it
    if (by_lifecycle) {
      ASSERT_TRUE(core->OnLifecycleEvent(LifecycleEvent::kOnPause).ok());
    } else {
      TaskRequest r = Request(other);
      r.durable_key = "doc-2";
      ASSERT_TRUE(core->Submit(std::move(r)).ok());
    }
    core->RunUntilIdle();
    ASSERT_EQ(run.done.size(), 1u);
    EXPECT_EQ(run.done[0].tokens, Reference());
  }
}

// Its last token written, its end not: it does not end until the end is on
// the device, and its KV is given back meanwhile.
TEST_F(DurableDiskFull, AnEndTheJournalCannotTakeWaitsForIt) {
  Disk disk;
  disk.ends_fail = true;
  std::unique_ptr<SchedulerCore> core = NewCore(disk, dir_ + "/tasks");
  Outcome run;
  const TaskId id = *core->Submit(Request(run));
  core->RunUntilIdle();
  EXPECT_EQ(run.tokens, Reference());
  ExpectWaitsForItsJournal(*core, id, run);
  EXPECT_EQ(engine_.open_sequences(), 0u);
  disk.ends_fail = false;
  core->journals().RetryJournals();
  ASSERT_EQ(run.done.size(), 1u);
  EXPECT_EQ(run.done[0].state, TaskState::kDone);
  EXPECT_EQ(run.done[0].tokens, Reference());
}

// The app may still cancel a task that waits for its journal: it is forgotten.
TEST_F(DurableDiskFull, ATaskWaitingForItsJournalCanBeCancelled) {
  Disk disk;
  std::unique_ptr<SchedulerCore> core = NewCore(disk, dir_ + "/tasks");
  Outcome run;
  const TaskId id = *core->Submit(Request(run));
  StepUntil(*core, run, 3);
  disk.full = true;
  core->RunUntilIdle();
  ExpectWaitsForItsJournal(*core, id, run);
  ASSERT_TRUE(core->Cancel(id).ok());
  ASSERT_EQ(run.done.size(), 1u);
  EXPECT_EQ(run.done[0].state, TaskState::kCancelled);
  EXPECT_FALSE(fs::exists(JournalPath(dir_ + "/tasks", "doc-1")));
}

// Killed while it waits: the next life resumes from what the journal holds and
// finishes with the uninterrupted run's tokens.
TEST_F(DurableDiskFull, AKillWhileWaitingLosesNothing) {
  Disk disk;
  Outcome first;
  {
    std::unique_ptr<SchedulerCore> core = NewCore(disk, dir_ + "/tasks");
    const TaskId id = *core->Submit(Request(first));
    StepUntil(*core, first, 12);
    disk.full = true;
    core->RunUntilIdle();
    ExpectWaitsForItsJournal(*core, id, first);
    // The core goes without finishing anything, as a killed process does.
  }
  disk.full = false;
  std::unique_ptr<SchedulerCore> core = NewCore(disk, dir_ + "/tasks");
  Outcome second;
  Result<RecoveryReport> recovered = core->journals().Recover([&](const RecoveredTask&) {
    TaskCallbacks cb;
    cb.on_done = [&](TaskId, const TaskResult& r) { second.done.push_back(r); };
    return cb;
  });
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  ASSERT_EQ(recovered->tasks.size(), 1u);
  EXPECT_LT(recovered->tasks[0].tokens.size(), first.tokens.size() + 1);
  core->RunUntilIdle();
  ASSERT_EQ(second.done.size(), 1u);
  EXPECT_EQ(second.done[0].tokens, Reference());
}

// A real full disk: a 64 KiB tmpfs (root only). A task too large for what is
// free is refused before it starts; one that fits parks when a filler takes
// the rest and goes on, identically, once the filler is gone.
TEST_F(DurableDiskFull, ARealFullDiskParksAndARetryAfterItIsFreedFinishes) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const std::string mnt = dir_ + "/mnt";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  Disk real;  // passes every write through
  std::unique_ptr<SchedulerCore> core = NewCore(real, mnt + "/tasks");
  Outcome refused;
  TaskRequest whole_context = Request(refused);
  whole_context.durable_key = "too-big";
  whole_context.max_tokens = 0;  // until the context (4096) is full: ~250 KB of records
  const Result<TaskId> too_big = core->Submit(std::move(whole_context));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("not enough free space"), std::string::npos);
  EXPECT_FALSE(fs::exists(JournalPath(mnt + "/tasks", "too-big")));
  // Long enough that its records outgrow the page its journal ends in.
  constexpr int32_t kLong = 300;
  Outcome run;
  const TaskId id = *core->Submit(Request(run, kLong));
  StepUntil(*core, run, 8);
  {
    std::ofstream filler(mnt + "/filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), block.size())) {
    }
  }
  core->RunUntilIdle();
  ExpectWaitsForItsJournal(*core, id, run);
  fs::remove(mnt + "/filler");
  core->journals().RetryJournals();
  core->RunUntilIdle();
  ASSERT_EQ(run.done.size(), 1u);
  EXPECT_EQ(run.done[0].tokens, Reference(kLong));
  core.reset();
  ::umount(mnt.c_str());
}

}  // namespace
}  // namespace valet
