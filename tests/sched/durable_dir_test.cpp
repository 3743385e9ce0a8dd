// The durable tasks' directory is checked, not assumed (common/private_dir.h):
// a symbolic link planted in its place, a directory others may write, or one
// of another user refuses the scheduler at start-up with the path and what is
// wrong, and nothing lands in a link's target; one valet makes is 0700.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/private_files.h"
#include "sched/scheduler_core.h"
#include "testing/sched/fake_engine.h"

namespace valet {
using namespace valet::testing;
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

mode_t Mode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

class DurableDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> scratch = MakeScratchDirectory("valet-durable-dir-test-");
    ASSERT_TRUE(scratch.ok()) << scratch.status().ToString();
    scratch_ = *scratch;
    tasks_ = scratch_ / "tasks";
  }
  void TearDown() override { fs::remove_all(scratch_); }

  SchedulerOptions Options() const {
    SchedulerOptions o;
    o.durable_dir = tasks_.string();
    o.model_fingerprint = "fake-model";
    return o;
  }

  static TaskRequest Durable() {
    TaskRequest r;
    r.prompt = "hello";
    r.max_tokens = 3;
    r.durable = true;
    r.durable_key = "k";
    return r;
  }

  // A directory anyone may write, as /tmp is.
  fs::path WorldWritable() const {
    const fs::path dir = scratch_ / "public";
    fs::create_directory(dir);
    fs::permissions(dir, fs::perms::all);
    return dir;
  }

  // Expects the scheduler refused over tasks_, saying `what`, at every level.
  void ExpectRefused(const std::string& what) {
    FakeEngine engine;
    SchedulerCore core(engine, Options());
    EXPECT_EQ(core.durable_dir_status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(core.durable_dir_status().message(),
              "durable tasks' directory: " + tasks_.string() + " " + what);
    EXPECT_EQ(core.Submit(Durable()).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(core.journals().Recover().status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(core.journals().Ack("k").code(), StatusCode::kInvalidArgument);
    Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(engine, Options());
    ASSERT_FALSE(scheduler.ok());
    EXPECT_NE(scheduler.status().message().find(tasks_.string() + " " + what), std::string::npos)
        << scheduler.status().message();
  }

  fs::path scratch_, tasks_;
};

TEST_F(DurableDirTest, APlantedLinkIsRefusedAndItsTargetGetsNothing) {
  const fs::path target = WorldWritable();
  fs::create_directory_symlink(target, tasks_);
  ExpectRefused("is a symbolic link");
  EXPECT_TRUE(fs::is_empty(target));
  // A trailing slash would make the link a parent, followed: it is taken off.
  FakeEngine engine;
  SchedulerOptions slash = Options();
  slash.durable_dir += "/";
  SchedulerCore core(engine, slash);
  EXPECT_NE(core.durable_dir_status().message().find("is a symbolic link"), std::string::npos)
      << core.durable_dir_status().message();
  // Even a link to a private directory: the path must be the directory.
  fs::remove(tasks_);
  fs::create_directory(scratch_ / "private");
  fs::permissions(scratch_ / "private", fs::perms::owner_all);
  fs::create_directory_symlink(scratch_ / "private", tasks_);
  ExpectRefused("is a symbolic link");
}

TEST_F(DurableDirTest, ADirectoryOthersMayWriteIsRefused) {
  fs::create_directory(tasks_);
  fs::permissions(tasks_, fs::perms::all);
  ExpectRefused("is writable by its group and others (mode 0777)");
  fs::permissions(tasks_, fs::perms::owner_all | fs::perms::others_write | fs::perms::others_exec);
  ExpectRefused("is writable by others (mode 0703)");
  EXPECT_TRUE(fs::is_empty(tasks_));
}

TEST_F(DurableDirTest, ADirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a directory to another user";
  fs::create_directory(tasks_);
  fs::permissions(tasks_, fs::perms::owner_all);
  ASSERT_EQ(::chown(tasks_.c_str(), kNobody, kNobody), 0);
  ExpectRefused("is owned by uid 65534, not 0 (this process's user)");
}

TEST_F(DurableDirTest, OnlyTheUsersOwnGroupMayWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a directory to another group";
  fs::create_directory(tasks_);
  fs::permissions(tasks_, fs::perms::owner_all | fs::perms::group_all);
  ASSERT_EQ(::chown(tasks_.c_str(), 0, kNobody), 0);
  ExpectRefused("is writable by its group (mode 0770)");
  // Group 0 is root's own (its id is the user's): as Android's 0771 app directories.
  ASSERT_EQ(::chown(tasks_.c_str(), 0, 0), 0);
  FakeEngine engine;
  SchedulerCore core(engine, Options());
  EXPECT_TRUE(core.durable_dir_status().ok()) << core.durable_dir_status().ToString();
  EXPECT_TRUE(core.Submit(Durable()).ok());
}

TEST_F(DurableDirTest, ValetMakesItPrivateAtStartAndUsesAPrivateOneAsItIs) {
  const mode_t old_umask = ::umask(0);
  {
    FakeEngine engine;
    Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(engine, Options());
    ASSERT_TRUE(scheduler.ok()) << scheduler.status().ToString();
    EXPECT_EQ(Mode(tasks_), 0700u) << "made at start, before any durable task";
    ASSERT_TRUE((*scheduler)->Submit(Durable()).ok());
    (*scheduler)->WaitIdle();
    EXPECT_EQ(Mode(tasks_ / "k.journal"), 0600u);
  }
  ::umask(old_umask);
  fs::permissions(tasks_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  FakeEngine engine;
  SchedulerCore core(engine, Options());
  EXPECT_TRUE(core.durable_dir_status().ok()) << "0755: readable, but nobody else may write";
  EXPECT_EQ(Mode(tasks_), 0755u) << "an existing directory keeps its mode";
  Result<RecoveryReport> found = core.journals().Recover();
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->tasks.size(), 1u);
  EXPECT_EQ(found->tasks[0].state, TaskState::kDone);
}

// Not a refusal but an error of the place: the scheduler starts, and durable
// calls answer why they cannot work (as a snapshot directory that cannot be
// made leaves the disk tier off).
TEST_F(DurableDirTest, ADirectoryThatCannotBeMadeLeavesDurableTasksUnavailable) {
  std::ofstream(scratch_ / "file") << "x";
  FakeEngine engine;
  SchedulerOptions o = Options();
  o.durable_dir = (scratch_ / "file" / "tasks").string();
  Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(engine, o);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status().ToString();
  Result<TaskId> refused = (*scheduler)->Submit(Durable());
  EXPECT_EQ(refused.status().code(), StatusCode::kIo) << refused.status().ToString();
  EXPECT_EQ((*scheduler)->Recover().status().code(), StatusCode::kIo);
  TaskRequest plain = Durable();
  plain.durable = false;
  EXPECT_TRUE((*scheduler)->Submit(plain).ok());
  (*scheduler).reset();
  // A regular file where the directory should be is refused, though.
  o.durable_dir = (scratch_ / "file").string();
  Result<std::unique_ptr<Scheduler>> on_file = Scheduler::Create(engine, o);
  ASSERT_FALSE(on_file.ok());
  EXPECT_NE(on_file.status().message().find("is not a directory"), std::string::npos)
      << on_file.status().message();
}

}  // namespace
}  // namespace valet
