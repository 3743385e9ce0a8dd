// Where parked sequences' snapshots live: a RAM tier with a byte budget that
// spills to a disk tier (a directory) when over budget.
//
// Every snapshot is stored as a frame: a header with the codec, both sizes
// and a checksum of the uncompressed bytes, then the (optionally zstd- or
// lz4-compressed) payload. Get verifies all of it, so a corrupt, truncated or
// missing snapshot is reported (Corrupt / NotFound) and never returned; the
// engine then recomputes the sequence from its token history. A disk that is
// full or unwritable degrades to the RAM tier, or to an error the caller
// answers by recomputing, always with a warning. The disk tier's directory is
// opened once and checked (common/private_dir.h): one that is not private (a
// symbolic link, another user's, writable by others) fails Create.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/private_dir.h"
#include "kv/compression.h"
#include "valet/status.h"

namespace valet {

enum class SnapshotTier { kRam, kDisk };

struct SnapshotStoreOptions {
  size_t ram_budget_bytes = 128u << 20;  // a phone-sized default
  // Empty: no disk tier. Created 0700 if missing; refused by Create unless it
  // is a directory (not a link) of this user that no one else may write.
  std::string disk_dir;
  size_t disk_budget_bytes = SIZE_MAX;   // beyond it the disk tier counts as full
  Compression compression = Compression::kNone;
  int zstd_level = 1;  // with kZstd: 1..ZstdMaxLevel()
  // Receives warnings (disk trouble, corrupt snapshots); default: valet's
  // log (common/log.h), the app's sink or else logcat/stderr.
  std::function<void(std::string_view)> warn;
};

struct SnapshotStoreStats {
  int64_t puts = 0;
  int64_t gets = 0;
  int64_t spills = 0;            // RAM-tier puts that went to disk because the RAM tier was full
  int64_t disk_failures = 0;     // disk writes that failed (then RAM or an error)
  int64_t corrupt_detected = 0;  // Get found a bad frame
  size_t raw_bytes = 0;          // uncompressed bytes put
  size_t stored_bytes = 0;       // frame bytes those became
  double compress_seconds = 0.0;
  double decompress_seconds = 0.0;
  size_t disk_bytes_written = 0;
  double disk_write_seconds = 0.0;
  size_t disk_bytes_read = 0;
  double disk_read_seconds = 0.0;
};

class SnapshotStore {
 public:
  // InvalidArgument, naming the path and what is wrong, for a disk_dir that
  // is not private; one that cannot be created is a warning (disk writes then
  // fail over to RAM).
  static Result<std::unique_ptr<SnapshotStore>> Create(const SnapshotStoreOptions& options);
  ~SnapshotStore();  // removes the files it wrote
  SnapshotStore(const SnapshotStore&) = delete;
  SnapshotStore& operator=(const SnapshotStore&) = delete;

  // Stores `blob` under `key` (replacing an older one) in the preferred tier
  // if it can, else the other; returns the tier used, or ResourceExhausted
  // when neither can take it.
  Result<SnapshotTier> Put(uint64_t key, std::span<const uint8_t> blob, SnapshotTier preferred);
  // The verified blob; NotFound when absent, Corrupt when the frame is damaged.
  Result<std::vector<uint8_t>> Get(uint64_t key);
  void Erase(uint64_t key);
  // Moves RAM-tier snapshots to the disk tier (lowest keys first) until the
  // RAM tier holds at most `ram_bytes`; returns the frame bytes moved. A
  // snapshot the disk refuses stays in RAM (with a warning), so the result
  // may fall short; nothing is ever lost.
  size_t DemoteToDisk(size_t ram_bytes = 0);
  // A new RAM budget; snapshots over it are demoted (as DemoteToDisk), and
  // later puts over it spill to disk.
  void SetRamBudget(size_t bytes);

  std::optional<SnapshotTier> tier_of(uint64_t key) const;
  bool has_disk() const { return !options_.disk_dir.empty(); }
  size_t ram_bytes() const { return ram_bytes_; }
  size_t disk_bytes() const { return disk_bytes_; }
  size_t ram_free_bytes() const { return ram_bytes_ >= options_.ram_budget_bytes ? 0 : options_.ram_budget_bytes - ram_bytes_; }
  // Room left in the disk tier's budget; 0 without a disk tier.
  size_t disk_free_bytes() const {
    return !has_disk() || disk_bytes_ >= options_.disk_budget_bytes ? 0 : options_.disk_budget_bytes - disk_bytes_;
  }
  const SnapshotStoreOptions& options() const { return options_; }
  const SnapshotStoreStats& stats() const { return stats_; }
  // The frame bytes a blob of `raw` bytes would take uncompressed.
  static size_t FrameBytes(size_t raw);

  // Where the disk tier keeps `key` (tests damage or remove it).
  std::string DiskPath(uint64_t key) const;
  // The stored frame of a RAM-tier snapshot, for tests that damage it.
  std::span<uint8_t> RamFrameForTesting(uint64_t key);

 private:
  explicit SnapshotStore(const SnapshotStoreOptions& options);
  std::vector<uint8_t> Encode(std::span<const uint8_t> blob);
  Result<std::vector<uint8_t>> Decode(std::span<const uint8_t> frame);
  std::string DiskName(uint64_t key) const;
  Status WriteDisk(uint64_t key, std::span<const uint8_t> frame);
  Result<std::vector<uint8_t>> ReadDisk(uint64_t key);
  void Warn(const std::string& message) const;

  struct Slot {
    SnapshotTier tier = SnapshotTier::kRam;
    std::vector<uint8_t> frame;  // RAM tier only
    size_t bytes = 0;            // frame bytes, either tier
  };

  SnapshotStoreOptions options_;
  std::optional<PrivateDir> dir_;  // the disk tier's, when it could be opened
  std::map<uint64_t, Slot> slots_;
  size_t ram_bytes_ = 0;
  size_t disk_bytes_ = 0;
  SnapshotStoreStats stats_;
};

}  // namespace valet
