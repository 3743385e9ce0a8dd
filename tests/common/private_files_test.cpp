// Scratch directories with unpredictable names, private whatever the umask;
// reads that never follow a planted link. Private directories and the files
// in them: private_dir_test.cpp.
#include "common/private_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

namespace valet {
namespace {

namespace fs = std::filesystem;

mode_t Mode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Every test runs under umask 0, where anything not made private on purpose
// would come out world-readable and writable.
class PrivateFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_umask_ = ::umask(0);
    Result<std::string> dir = MakeScratchDirectory("valet-private-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = *dir;
  }
  void TearDown() override {
    fs::remove_all(dir_);
    ::umask(old_umask_);
  }
  fs::path dir_;
  mode_t old_umask_ = 0;
};

TEST_F(PrivateFilesTest, ScratchDirectoriesAreUniqueAndPrivate) {
  EXPECT_EQ(Mode(dir_), 0700u);
  EXPECT_EQ(dir_.parent_path(), fs::temp_directory_path());
  EXPECT_TRUE(dir_.filename().string().starts_with("valet-private-test-"));
  Result<std::string> other = MakeScratchDirectory("valet-private-test-");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, dir_.string());
  fs::remove_all(*other);
}

TEST_F(PrivateFilesTest, ReadingNeverFollowsAFinalLink) {
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, dir_ / "link");
  EXPECT_LT(OpenNoFollow((dir_ / "link").string()), 0);
  EXPECT_EQ(errno, ELOOP);
  const int fd = OpenNoFollow(victim.string());
  EXPECT_GE(fd, 0);
  ::close(fd);
}

}  // namespace
}  // namespace valet
