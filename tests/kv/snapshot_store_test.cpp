#include "kv/snapshot_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kv/checksum.h"

namespace valet {
namespace {

namespace fs = std::filesystem;

// Float-like data: smooth values plus noise, so the codecs have something to find.
std::vector<uint8_t> Blob(size_t n_floats, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  std::vector<float> f(n_floats);
  for (size_t i = 0; i < n_floats; ++i) f[i] = static_cast<float>(i % 64) * 0.25f + (i % 3 == 0 ? noise(rng) : 0.0f);
  std::vector<uint8_t> b(n_floats * sizeof(float));
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

class SnapshotStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("valet-snap-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SnapshotStoreOptions Options(size_t ram_budget, Compression c = Compression::kNone) {
    SnapshotStoreOptions o;
    o.ram_budget_bytes = ram_budget;
    o.disk_dir = dir_.string();
    o.compression = c;
    o.warn = [this](std::string_view w) { warnings_.emplace_back(w); };
    return o;
  }

  fs::path dir_;
  std::vector<std::string> warnings_;
};

TEST(ChecksumTest, EveryByteAndTheLengthMatter) {
  std::vector<uint8_t> data = Blob(100, 1);
  const uint64_t h = Checksum64(data);
  for (size_t i = 0; i < data.size(); i += 7) {
    data[i] ^= 1;
    EXPECT_NE(Checksum64(data), h) << "byte " << i;
    data[i] ^= 1;
  }
  EXPECT_EQ(Checksum64(data), h);
  EXPECT_NE(Checksum64(std::span(data).first(data.size() - 1)), h);
  std::vector<uint8_t> zeros_a(40, 0), zeros_b(41, 0);
  EXPECT_NE(Checksum64(zeros_a), Checksum64(zeros_b));
}

TEST_F(SnapshotStoreTest, RoundTripsThroughEveryCodecAndTier) {
  for (Compression c : {Compression::kNone, Compression::kZstd, Compression::kLz4}) {
    auto store = std::move(SnapshotStore::Create(Options(1 << 20, c)).value());
    const std::vector<uint8_t> a = Blob(10000, 2), b = Blob(5000, 3);
    ASSERT_EQ(*store->Put(1, a, SnapshotTier::kRam), SnapshotTier::kRam);
    ASSERT_EQ(*store->Put(2, b, SnapshotTier::kDisk), SnapshotTier::kDisk);
    EXPECT_TRUE(fs::exists(store->DiskPath(2)));
    EXPECT_EQ(*store->Get(1), a) << CompressionName(c);
    EXPECT_EQ(*store->Get(2), b) << CompressionName(c);
    if (c != Compression::kNone) {
      EXPECT_LT(store->stats().stored_bytes, store->stats().raw_bytes);
    }
    store->Erase(2);
    EXPECT_FALSE(fs::exists(store->DiskPath(2)));
    EXPECT_EQ(store->disk_bytes(), 0u);
  }
}

TEST_F(SnapshotStoreTest, SpillsToDiskWhenTheRamBudgetIsFull) {
  const std::vector<uint8_t> a = Blob(1000, 4);
  auto store = std::move(SnapshotStore::Create(Options(SnapshotStore::FrameBytes(a.size()) + 10)).value());
  EXPECT_EQ(*store->Put(1, a, SnapshotTier::kRam), SnapshotTier::kRam);
  EXPECT_EQ(*store->Put(2, a, SnapshotTier::kRam), SnapshotTier::kDisk);
  EXPECT_EQ(store->stats().spills, 1);
  EXPECT_EQ(store->ram_bytes(), SnapshotStore::FrameBytes(a.size()));
  EXPECT_EQ(store->disk_bytes(), SnapshotStore::FrameBytes(a.size()));
  EXPECT_EQ(*store->Get(2), a);
}

// Snapshots hold conversations: 0600 files in a 0700 directory even under
// umask 0, and a link planted where the store writes is not followed.
TEST_F(SnapshotStoreTest, DiskSnapshotsArePrivate) {
  const mode_t old_umask = ::umask(0);
  const std::vector<uint8_t> a = Blob(1000, 8);
  auto store = std::move(SnapshotStore::Create(Options(0)).value());
  ASSERT_EQ(*store->Put(1, a, SnapshotTier::kDisk), SnapshotTier::kDisk);
  ::umask(old_umask);
  auto mode = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode(dir_), 0700u);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir_)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(mode(files[0]), 0600u);

  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious";
  const std::string next = files[0].string();
  fs::remove(files[0]);
  fs::create_symlink(victim, next + ".tmp");  // where rewriting key 1 writes first
  store->Erase(1);
  ASSERT_EQ(*store->Put(1, a, SnapshotTier::kDisk), SnapshotTier::kDisk);
  std::ifstream in(victim);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "precious");
  EXPECT_EQ(*store->Get(1), a);
}

TEST_F(SnapshotStoreTest, DetectsCorruptTruncatedAndMissingSnapshots) {
  auto store = std::move(SnapshotStore::Create(Options(1 << 20, Compression::kZstd)).value());
  const std::vector<uint8_t> a = Blob(4000, 5);
  ASSERT_TRUE(store->Put(1, a, SnapshotTier::kRam).ok());
  std::span<uint8_t> frame = store->RamFrameForTesting(1);
  ASSERT_FALSE(frame.empty());
  frame[frame.size() / 2] ^= 0x10;
  EXPECT_EQ(store->Get(1).status().code(), StatusCode::kCorrupt);

  SnapshotStoreOptions plain = Options(1 << 20);
  auto raw_store = std::move(SnapshotStore::Create(plain).value());
  ASSERT_TRUE(raw_store->Put(1, a, SnapshotTier::kRam).ok());
  raw_store->RamFrameForTesting(1)[100] ^= 0x01;  // a flip inside uncompressed floats: only the checksum sees it
  EXPECT_EQ(raw_store->Get(1).status().code(), StatusCode::kCorrupt);

  ASSERT_TRUE(raw_store->Put(2, a, SnapshotTier::kDisk).ok());
  fs::resize_file(raw_store->DiskPath(2), fs::file_size(raw_store->DiskPath(2)) - 3);
  EXPECT_EQ(raw_store->Get(2).status().code(), StatusCode::kCorrupt);

  ASSERT_TRUE(raw_store->Put(3, a, SnapshotTier::kDisk).ok());
  fs::remove(raw_store->DiskPath(3));
  EXPECT_EQ(raw_store->Get(3).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(raw_store->Get(99).status().code(), StatusCode::kNotFound);
  EXPECT_GE(warnings_.size(), 4u);
}

TEST_F(SnapshotStoreTest, UnwritableDirectoryFallsBackToRamWithAWarning) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "not a directory";
  SnapshotStoreOptions o = Options(1 << 20);
  o.disk_dir = (dir_ / "file" / "snapshots").string();  // a path under a regular file can never be created
  auto store = std::move(SnapshotStore::Create(o).value());
  ASSERT_FALSE(warnings_.empty());
  const std::vector<uint8_t> a = Blob(1000, 6);
  EXPECT_EQ(*store->Put(1, a, SnapshotTier::kDisk), SnapshotTier::kRam);
  EXPECT_EQ(store->stats().disk_failures, 1);
  EXPECT_EQ(*store->Get(1), a);
}

// The disk tier's directory is checked when the store is made: a planted
// link (to a directory anyone may write), a directory others may write and
// one of another user are refused, naming the path and what is wrong, and
// nothing is written there.
TEST_F(SnapshotStoreTest, ADirectoryThatIsNotPrivateIsRefusedAtCreation) {
  fs::create_directories(dir_);
  const fs::path open_to_all = dir_ / "public";
  fs::create_directory(open_to_all);
  fs::permissions(open_to_all, fs::perms::all);
  SnapshotStoreOptions o = Options(0);
  const auto refusal = [&](const fs::path& disk_dir) {
    o.disk_dir = disk_dir.string();
    Result<std::unique_ptr<SnapshotStore>> store = SnapshotStore::Create(o);
    EXPECT_FALSE(store.ok()) << disk_dir;
    return store.ok() ? std::string() : store.status().message();
  };
  fs::create_directory_symlink(open_to_all, dir_ / "snapshots");
  EXPECT_EQ(refusal(dir_ / "snapshots"),
            "snapshot directory: " + (dir_ / "snapshots").string() + " is a symbolic link");
  EXPECT_EQ(refusal(open_to_all),
            "snapshot directory: " + open_to_all.string() + " is writable by its group and others (mode 0777)");
  EXPECT_TRUE(fs::is_empty(open_to_all));
  if (::geteuid() == 0) {  // only root can give a directory to another user
    fs::create_directory(dir_ / "theirs");
    ASSERT_EQ(::chown((dir_ / "theirs").c_str(), 65534, 65534), 0);
    EXPECT_NE(refusal(dir_ / "theirs").find("is owned by uid 65534, not 0"), std::string::npos);
  }
  EXPECT_TRUE(warnings_.empty()) << "refused, not degraded";

  // A private one is used as it is.
  fs::create_directory(dir_ / "private");
  fs::permissions(dir_ / "private", fs::perms::owner_all);
  o.disk_dir = (dir_ / "private").string();
  auto store = std::move(SnapshotStore::Create(o).value());
  const std::vector<uint8_t> a = Blob(1000, 9);
  EXPECT_EQ(*store->Put(1, a, SnapshotTier::kDisk), SnapshotTier::kDisk);
  EXPECT_EQ(*store->Get(1), a);
}

TEST_F(SnapshotStoreTest, FullDiskAndFullRamIsAnErrorNotACrash) {
  const std::vector<uint8_t> a = Blob(1000, 7);
  SnapshotStoreOptions o = Options(100);
  o.disk_budget_bytes = 100;  // the disk tier is "full" as well
  auto store = std::move(SnapshotStore::Create(o).value());
  Result<SnapshotTier> put = store->Put(1, a, SnapshotTier::kDisk);
  EXPECT_EQ(put.status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(store->tier_of(1).has_value());
  EXPECT_FALSE(warnings_.empty());
}

TEST_F(SnapshotStoreTest, TheDiskTiersRoomShrinksWithWhatItHolds) {
  const std::vector<uint8_t> a = Blob(1000, 1);
  const size_t frame = SnapshotStore::FrameBytes(a.size());
  SnapshotStoreOptions o = Options(0);
  o.disk_budget_bytes = 3 * frame;
  auto store = std::move(SnapshotStore::Create(o).value());
  EXPECT_EQ(store->disk_free_bytes(), 3 * frame);
  ASSERT_EQ(*store->Put(1, a, SnapshotTier::kDisk), SnapshotTier::kDisk);
  ASSERT_EQ(*store->Put(2, a, SnapshotTier::kDisk), SnapshotTier::kDisk);
  EXPECT_EQ(store->disk_free_bytes(), frame);
  store->Erase(1);
  EXPECT_EQ(store->disk_free_bytes(), 2 * frame);
  SnapshotStoreOptions no_disk;
  EXPECT_EQ(std::move(SnapshotStore::Create(no_disk).value())->disk_free_bytes(), 0u);
}

TEST_F(SnapshotStoreTest, DemotingMovesRamSnapshotsToDiskIntact) {
  auto store = std::move(SnapshotStore::Create(Options(1 << 20)).value());
  const std::vector<uint8_t> a = Blob(1000, 1), b = Blob(2000, 2);
  ASSERT_EQ(*store->Put(1, a, SnapshotTier::kRam), SnapshotTier::kRam);
  ASSERT_EQ(*store->Put(2, b, SnapshotTier::kRam), SnapshotTier::kRam);
  const size_t ram = store->ram_bytes();
  EXPECT_EQ(store->DemoteToDisk(), ram);
  EXPECT_EQ(store->ram_bytes(), 0u);
  EXPECT_EQ(store->disk_bytes(), ram);
  EXPECT_EQ(store->tier_of(1), SnapshotTier::kDisk);
  EXPECT_EQ(*store->Get(1), a);
  EXPECT_EQ(*store->Get(2), b);
}

TEST_F(SnapshotStoreTest, ALowerRamBudgetDemotesDownToItAndLaterPutsSpill) {
  auto store = std::move(SnapshotStore::Create(Options(1 << 20)).value());
  const std::vector<uint8_t> a = Blob(1000, 1), b = Blob(1000, 2);
  ASSERT_TRUE(store->Put(1, a, SnapshotTier::kRam).ok());
  ASSERT_TRUE(store->Put(2, b, SnapshotTier::kRam).ok());
  store->SetRamBudget(SnapshotStore::FrameBytes(b.size()));
  EXPECT_EQ(store->tier_of(1), SnapshotTier::kDisk);
  EXPECT_EQ(store->tier_of(2), SnapshotTier::kRam);
  EXPECT_EQ(*store->Put(3, a, SnapshotTier::kRam), SnapshotTier::kDisk);
  EXPECT_EQ(*store->Get(1), a);
}

TEST(SnapshotStoreNoDisk, DemotingWithoutADiskTierKeepsEverythingInRam) {
  SnapshotStoreOptions o;
  auto store = std::move(SnapshotStore::Create(o).value());
  const std::vector<uint8_t> a = Blob(100, 1);
  ASSERT_TRUE(store->Put(1, a, SnapshotTier::kRam).ok());
  EXPECT_EQ(store->DemoteToDisk(), 0u);
  EXPECT_EQ(store->tier_of(1), SnapshotTier::kRam);
  EXPECT_EQ(*store->Get(1), a);
}

}  // namespace
}  // namespace valet
