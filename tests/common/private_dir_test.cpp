// Private directories: made 0700 whatever the umask; refused (with the path
// and what is wrong) when they are a link, not a directory, another user's or
// writable by others; and every file inside created, renamed, read, removed
// and listed through the directory's descriptor, so neither a planted link nor
// a later swap of the path can redirect a write.
#include "common/private_dir.h"

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

constexpr uid_t kNobody = 65534;

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

// Under umask 0, where anything not made private on purpose would come out
// world-readable and writable.
class PrivateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_umask_ = ::umask(0);
    Result<std::string> dir = MakeScratchDirectory("valet-private-dir-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    root_ = *dir;
  }
  void TearDown() override {
    fs::remove_all(root_);
    ::umask(old_umask_);
  }

  // The refusal of opening `path`: its code and message.
  static Status Refusal(const fs::path& path) {
    Result<PrivateDir> dir = PrivateDir::Open(path.string());
    EXPECT_FALSE(dir.ok()) << path;
    return dir.ok() ? Status::Ok() : dir.status();
  }

  fs::path root_;
  mode_t old_umask_ = 0;
};

TEST_F(PrivateDirTest, MissingDirectoriesAreMadePrivate) {
  const fs::path nested = root_ / "a" / "snapshots";
  Result<PrivateDir> dir = PrivateDir::Open(nested.string());
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(dir->path(), nested.string());
  EXPECT_EQ(Mode(nested), 0700u);
  EXPECT_EQ(Mode(root_ / "a"), 0700u) << "a missing parent is private too";
  ::umask(0777);  // even a umask that takes everything leaves a directory valet makes usable
  Result<PrivateDir> masked = PrivateDir::Open((root_ / "masked").string());
  ::umask(0);
  ASSERT_TRUE(masked.ok()) << masked.status().ToString();
  EXPECT_EQ(Mode(root_ / "masked"), 0700u);
  EXPECT_TRUE(PrivateDir::Open(nested.string() + "/").ok())
      << "a trailing slash names the same directory";
}

TEST_F(PrivateDirTest, AnExistingDirectoryOthersCannotWriteIsUsedAsItIs) {
  const fs::path shared = root_ / "app-cache";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  EXPECT_TRUE(PrivateDir::Open(shared.string()).ok());
  EXPECT_EQ(Mode(shared), 0755u) << "the app's own directory is left as it is";
}

TEST_F(PrivateDirTest, ALinkIsRefusedWhereverItPoints) {
  const fs::path open_to_all = root_ / "public";
  fs::create_directory(open_to_all);
  fs::permissions(open_to_all, fs::perms::all);
  fs::create_directory_symlink(open_to_all, root_ / "snapshots");
  Status why = Refusal(root_ / "snapshots");
  EXPECT_EQ(why.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(why.message(), (root_ / "snapshots").string() + " is a symbolic link");
  EXPECT_EQ(Refusal((root_ / "snapshots").string() + "/").message(), why.message())
      << "not followed for a slash";
  EXPECT_TRUE(fs::is_empty(open_to_all));

  fs::create_directory(root_ / "mine");
  fs::create_directory_symlink(root_ / "mine", root_ / "alias");
  EXPECT_EQ(Refusal(root_ / "alias").code(), StatusCode::kInvalidArgument);
  fs::create_directory_symlink(root_ / "nowhere", root_ / "dangling");
  EXPECT_EQ(Refusal(root_ / "dangling").message(),
            (root_ / "dangling").string() + " is a symbolic link")
      << "never created through";
  EXPECT_FALSE(fs::exists(root_ / "nowhere"));
  // Links above the last component are the app's layout (Android's /data/user/0).
  EXPECT_TRUE(PrivateDir::Open((root_ / "alias" / "below").string()).ok());
}

TEST_F(PrivateDirTest, WritableByOthersIsRefusedWithTheMode) {
  const fs::path dir = root_ / "open";
  fs::create_directory(dir);
  fs::permissions(dir, fs::perms::all);
  EXPECT_EQ(Refusal(dir).message(),
            dir.string() + " is writable by its group and others (mode 0777)");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::others_write | fs::perms::others_exec);
  EXPECT_EQ(Refusal(dir).message(), dir.string() + " is writable by others (mode 0703)");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::others_write | fs::perms::others_exec |
                           fs::perms::sticky_bit);
  EXPECT_EQ(Refusal(dir).message(), dir.string() + " is writable by others (mode 1703)")
      << "as /tmp is";
}

TEST_F(PrivateDirTest, AnotherUsersDirectoryOrGroupIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a directory to another user";
  const fs::path dir = root_ / "theirs";
  fs::create_directory(dir);
  fs::permissions(dir, fs::perms::owner_all);
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(Refusal(dir).message(),
            dir.string() + " is owned by uid 65534, not 0 (this process's user)");
  ASSERT_EQ(::chown(dir.c_str(), 0, kNobody), 0);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_all);
  EXPECT_EQ(Refusal(dir).message(), dir.string() + " is writable by its group (mode 0770)");
  ASSERT_EQ(::chown(dir.c_str(), 0, 0), 0);
  EXPECT_TRUE(PrivateDir::Open(dir.string()).ok()) << "the user's own group (its id is the user's)";
}

TEST_F(PrivateDirTest, WhatIsNoDirectoryIsRefusedAndWhatCannotBeMadeIsAnError) {
  std::ofstream(root_ / "file") << "x";
  EXPECT_EQ(Refusal(root_ / "file").message(), (root_ / "file").string() + " is not a directory");
  EXPECT_EQ(Refusal(root_ / "file").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Refusal(root_ / "file" / "below").code(), StatusCode::kIo);
  EXPECT_EQ(Refusal(root_ / "file" / "a" / "b").code(), StatusCode::kIo);
  EXPECT_EQ(Refusal("").code(), StatusCode::kInvalidArgument);
}

TEST_F(PrivateDirTest, FilesArePrivateReplacedWholeAndNeverThroughALink) {
  Result<PrivateDir> dir = PrivateDir::Open((root_ / "d").string());
  ASSERT_TRUE(dir.ok());
  const std::vector<uint8_t> first = {1, 2, 3}, second(100000, 7);
  ASSERT_TRUE(dir->WriteAtomically("snap.bin", first).ok());
  EXPECT_EQ(Mode(root_ / "d" / "snap.bin"), 0600u);
  EXPECT_EQ(Read(root_ / "d" / "snap.bin"), std::string(first.begin(), first.end()));
  ASSERT_TRUE(dir->WriteAtomically("snap.bin", second, FileSync::kFsync).ok());
  EXPECT_EQ(Read(root_ / "d" / "snap.bin"), std::string(second.begin(), second.end()));
  EXPECT_FALSE(fs::exists(root_ / "d" / "snap.bin.tmp"));

  const fs::path victim = root_ / "victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, root_ / "d" / "next.bin.tmp");
  ASSERT_TRUE(dir->WriteAtomically("next.bin", first).ok());
  EXPECT_EQ(Read(victim), "precious") << "the planted link is removed, not followed";
  EXPECT_FALSE(fs::is_symlink(root_ / "d" / "next.bin"));

  fs::create_symlink(victim, root_ / "d" / "link");
  EXPECT_LT(dir->OpenRead("link"), 0);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_LT(dir->OpenAppend("link"), 0);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_LT(dir->OpenAppend("missing"), 0) << "never creates";
  const int fd = dir->OpenAppend("snap.bin");
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::write(fd, "c", 1), 1);
  ::close(fd);
  EXPECT_EQ(Read(root_ / "d" / "snap.bin").size(), second.size() + 1);

  ASSERT_TRUE(dir->Remove("link").ok());
  EXPECT_EQ(Read(victim), "precious") << "a link is removed, never its target";
  EXPECT_EQ(dir->Remove("link").code(), StatusCode::kNotFound);
  for (const char* bad : {"", ".", "..", "../victim", "a/b"}) {
    EXPECT_EQ(dir->Remove(bad).code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(dir->WriteAtomically(bad, first).code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_LT(dir->OpenRead(bad), 0) << bad;
  }
  EXPECT_TRUE(fs::exists(victim));
}

TEST_F(PrivateDirTest, ListingIsSortedAndBounded) {
  Result<PrivateDir> dir = PrivateDir::Open((root_ / "d").string());
  ASSERT_TRUE(dir.ok());
  for (const char* name : {"b", "a", "c"}) {
    ASSERT_TRUE(dir->WriteAtomically(name, std::vector<uint8_t>{1}).ok());
  }
  Result<std::vector<std::string>> names = dir->List(3);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(dir->List(2).status().code(), StatusCode::kResourceExhausted);
  Result<struct stat> st = dir->Stat("a");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_size, 1);
  EXPECT_EQ(dir->Stat("z").status().code(), StatusCode::kNotFound);
}

// Once open, the directory is the one checked: a path renamed away and
// replaced by a link to an open directory redirects nothing.
TEST_F(PrivateDirTest, ASwappedPathRedirectsNothing) {
  Result<PrivateDir> dir = PrivateDir::Open((root_ / "tasks").string());
  ASSERT_TRUE(dir.ok());
  const fs::path open_to_all = root_ / "public";
  fs::create_directory(open_to_all);
  fs::permissions(open_to_all, fs::perms::all);
  fs::rename(root_ / "tasks", root_ / "moved");
  fs::create_directory_symlink(open_to_all, root_ / "tasks");
  ASSERT_TRUE(dir->WriteAtomically("t.journal", std::vector<uint8_t>{'j'}, FileSync::kFsync).ok());
  EXPECT_TRUE(fs::is_empty(open_to_all));
  EXPECT_EQ(Read(root_ / "moved" / "t.journal"), "j");
  Result<std::vector<std::string>> names = dir->List(10);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"t.journal"});
}

}  // namespace
}  // namespace valet
