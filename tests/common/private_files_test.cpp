// Files that hold conversations: private modes whatever the umask, planted
// links never followed, scratch directories with unpredictable names.
#include "common/private_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace valet {
namespace {

namespace fs = std::filesystem;

mode_t Mode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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

TEST_F(PrivateFilesTest, NewDirectoriesArePrivateAndExistingOnesKeepTheirMode) {
  const fs::path nested = dir_ / "a" / "snapshots";
  ASSERT_TRUE(MakePrivateDirectory(nested.string()).ok());
  EXPECT_EQ(Mode(nested), 0700u);
  EXPECT_EQ(Mode(dir_ / "a"), 0700u) << "a missing parent is private too";
  const fs::path shared = dir_ / "app-cache";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  ASSERT_TRUE(MakePrivateDirectory(shared.string()).ok());
  EXPECT_EQ(Mode(shared), 0750u) << "the app's own directory is left as it is";
  std::ofstream(dir_ / "file") << "x";
  EXPECT_FALSE(MakePrivateDirectory((dir_ / "file").string()).ok());
  EXPECT_FALSE(MakePrivateDirectory((dir_ / "file" / "below").string()).ok());
}

TEST_F(PrivateFilesTest, FilesArePrivateAndReplacedWhole) {
  const fs::path path = dir_ / "snap.bin";
  const std::vector<uint8_t> first = {1, 2, 3}, second(100000, 7);
  ASSERT_TRUE(WritePrivateFileAtomically(path.string(), first).ok());
  EXPECT_EQ(Mode(path), 0600u);
  EXPECT_EQ(Read(path), std::string(first.begin(), first.end()));
  ASSERT_TRUE(WritePrivateFileAtomically(path.string(), second).ok());
  EXPECT_EQ(Read(path), std::string(second.begin(), second.end()));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST_F(PrivateFilesTest, APlantedLinkIsRemovedNeverFollowed) {
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious";
  const fs::path path = dir_ / "snap.bin";
  fs::create_symlink(victim, path.string() + ".tmp");
  const std::vector<uint8_t> bytes = {'n', 'e', 'w'};
  ASSERT_TRUE(WritePrivateFileAtomically(path.string(), bytes).ok());
  EXPECT_EQ(Read(victim), "precious");
  EXPECT_EQ(Read(path), "new");
  EXPECT_FALSE(fs::is_symlink(path));

  fs::create_symlink(victim, dir_ / "link");
  EXPECT_LT(OpenNoFollow((dir_ / "link").string()), 0);
  EXPECT_EQ(errno, ELOOP);
  const int fd = OpenNoFollow(path.string());
  EXPECT_GE(fd, 0);
  ::close(fd);
}

TEST_F(PrivateFilesTest, SyncedWritesAndAppendsStayPrivate) {
  const fs::path path = dir_ / "journal";
  const std::vector<uint8_t> bytes = {'a', 'b'};
  ASSERT_TRUE(WritePrivateFileAtomically(path.string(), bytes, FileSync::kFsync).ok());
  EXPECT_EQ(Mode(path), 0600u);
  EXPECT_TRUE(SyncDirectoryOf((dir_ / "file").string()).ok());
  EXPECT_FALSE(SyncDirectoryOf((dir_ / "missing" / "file").string()).ok());
  const int fd = OpenForAppendNoFollow(path.string());
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::write(fd, "c", 1), 1);
  ::close(fd);
  EXPECT_EQ(Read(path), "abc");
  EXPECT_LT(OpenForAppendNoFollow((dir_ / "missing").string()), 0) << "never creates";
  fs::create_symlink(path, dir_ / "link");
  EXPECT_LT(OpenForAppendNoFollow((dir_ / "link").string()), 0);
  EXPECT_EQ(errno, ELOOP);
}

TEST_F(PrivateFilesTest, AnUnwritablePlaceIsAnError) {
  const std::vector<uint8_t> bytes = {1};
  EXPECT_FALSE(WritePrivateFileAtomically((dir_ / "missing" / "snap.bin").string(), bytes).ok());
}

}  // namespace
}  // namespace valet
