#include "kv/snapshot_store.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/log.h"
#include "kv/checksum.h"

namespace valet {
namespace {

constexpr uint32_t kMagic = 0x504e5356;  // "VSNP"
constexpr uint16_t kVersion = 1;

struct FrameHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t codec;
  uint64_t raw_size;
  uint64_t payload_size;
  uint64_t checksum;  // of the uncompressed bytes
};
static_assert(sizeof(FrameHeader) == 32);

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

SnapshotStore::SnapshotStore(const SnapshotStoreOptions& options) : options_(options) {}

Result<std::unique_ptr<SnapshotStore>> SnapshotStore::Create(const SnapshotStoreOptions& options) {
  VALET_RETURN_IF_ERROR(CheckCompressionAvailable(options.compression));
  if (options.compression == Compression::kZstd && (options.zstd_level < 1 || options.zstd_level > ZstdMaxLevel())) {
    return InvalidArgument("zstd level must be between 1 and " + std::to_string(ZstdMaxLevel()));
  }
  std::unique_ptr<SnapshotStore> store(new SnapshotStore(options));
  if (store->has_disk()) {
    Result<PrivateDir> dir = PrivateDir::Open(options.disk_dir);
    if (dir.ok()) {
      store->dir_.emplace(std::move(dir).value());
    } else if (dir.status().code() == StatusCode::kInvalidArgument) {
      // Followed or shared, it would hand conversations to whoever controls it.
      return Status(dir.status().code(), "snapshot directory: " + dir.status().message());
    } else {
      // One that cannot be made is not fatal: writes will fail and fall back, with warnings.
      store->Warn("snapshot directory " + options.disk_dir + " is unusable: " + dir.status().message());
    }
  }
  return store;
}

SnapshotStore::~SnapshotStore() {
  for (const auto& [key, slot] : slots_) {
    if (slot.tier == SnapshotTier::kDisk && dir_) (void)dir_->Remove(DiskName(key));
  }
}

void SnapshotStore::Warn(const std::string& message) const {
  if (options_.warn) {
    options_.warn(message);
  } else {
    LogWarn(message);
  }
}

size_t SnapshotStore::FrameBytes(size_t raw) { return sizeof(FrameHeader) + raw; }

std::string SnapshotStore::DiskName(uint64_t key) const {
  char name[64];
  std::snprintf(name, sizeof(name), "valet-snap-%d-%016llx.bin", static_cast<int>(getpid()),
                static_cast<unsigned long long>(key));
  return name;
}

std::string SnapshotStore::DiskPath(uint64_t key) const {
  return (std::filesystem::path(options_.disk_dir) / DiskName(key)).string();
}

std::vector<uint8_t> SnapshotStore::Encode(std::span<const uint8_t> blob) {
  const auto t0 = Clock::now();
  FrameHeader h{kMagic, kVersion, static_cast<uint16_t>(options_.compression), blob.size(), 0, Checksum64(blob)};
  std::vector<uint8_t> frame(sizeof(h) + CompressBound(options_.compression, blob.size()));
  const size_t payload =
      Compress(options_.compression, options_.zstd_level, blob, std::span<uint8_t>(frame).subspan(sizeof(h)));
  h.payload_size = payload;
  std::memcpy(frame.data(), &h, sizeof(h));
  frame.resize(sizeof(h) + payload);
  frame.shrink_to_fit();
  stats_.compress_seconds += Since(t0);
  return frame;
}

Result<std::vector<uint8_t>> SnapshotStore::Decode(std::span<const uint8_t> frame) {
  const auto t0 = Clock::now();
  FrameHeader h;
  if (frame.size() < sizeof(h)) return Corrupt("snapshot frame is truncated (no header)");
  std::memcpy(&h, frame.data(), sizeof(h));
  if (h.magic != kMagic || h.version != kVersion) return Corrupt("snapshot frame has a bad magic or version");
  if (h.payload_size != frame.size() - sizeof(h)) {
    return Corrupt("snapshot frame is truncated: " + std::to_string(frame.size() - sizeof(h)) + " of " +
                   std::to_string(h.payload_size) + " payload bytes");
  }
  if (h.raw_size > (size_t{1} << 40)) return Corrupt("snapshot frame claims an absurd size");
  if (h.codec > static_cast<uint16_t>(Compression::kLz4)) {
    return Corrupt("snapshot frame has an unknown codec " + std::to_string(h.codec));
  }
  std::span<const uint8_t> payload = frame.subspan(sizeof(h));
  std::vector<uint8_t> raw(h.raw_size);
  VALET_RETURN_IF_ERROR(Decompress(static_cast<Compression>(h.codec), payload, raw));
  if (Checksum64(raw) != h.checksum) return Corrupt("snapshot checksum mismatch");
  stats_.decompress_seconds += Since(t0);
  return raw;
}

Status SnapshotStore::WriteDisk(uint64_t key, std::span<const uint8_t> frame) {
  if (!has_disk()) return Unsupported("no disk tier");
  if (disk_bytes_ + frame.size() > options_.disk_budget_bytes) return ResourceExhausted("disk tier budget is full");
  if (!dir_) return IoError("the disk tier has no directory (it could not be made)");
  const auto t0 = Clock::now();
  VALET_RETURN_IF_ERROR(dir_->WriteAtomically(DiskName(key), frame));
  stats_.disk_bytes_written += frame.size();
  stats_.disk_write_seconds += Since(t0);
  return Status::Ok();
}

Result<std::vector<uint8_t>> SnapshotStore::ReadDisk(uint64_t key) {
  const auto t0 = Clock::now();
  const std::string path = DiskPath(key);
  const int fd = dir_ ? dir_->OpenRead(DiskName(key)) : -1;
  if (fd < 0) return NotFound("snapshot file " + path + " is missing: " + std::strerror(errno));
  std::vector<uint8_t> frame;
  uint8_t buf[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) frame.insert(frame.end(), buf, buf + n);
  }
  ::close(fd);
  if (n < 0) return IoError("cannot read " + path);
  stats_.disk_bytes_read += frame.size();
  stats_.disk_read_seconds += Since(t0);
  return frame;
}

Result<SnapshotTier> SnapshotStore::Put(uint64_t key, std::span<const uint8_t> blob, SnapshotTier preferred) {
  Erase(key);
  ++stats_.puts;
  std::vector<uint8_t> frame = Encode(blob);
  stats_.raw_bytes += blob.size();
  stats_.stored_bytes += frame.size();
  const bool ram_fits = ram_bytes_ + frame.size() <= options_.ram_budget_bytes;
  bool try_disk = preferred == SnapshotTier::kDisk || !ram_fits;
  if (try_disk && has_disk()) {
    Status s = WriteDisk(key, frame);
    if (s.ok()) {
      if (preferred == SnapshotTier::kRam) ++stats_.spills;
      disk_bytes_ += frame.size();
      slots_[key] = Slot{SnapshotTier::kDisk, {}, frame.size()};
      return SnapshotTier::kDisk;
    }
    ++stats_.disk_failures;
    Warn("snapshot to disk failed (" + s.message() + "); " +
         (ram_fits ? "keeping it in RAM" : "the RAM tier is full too"));
  }
  if (!ram_fits) {
    return ResourceExhausted("snapshot of " + std::to_string(frame.size()) + " bytes fits neither tier (RAM " +
                             std::to_string(ram_bytes_) + " of " + std::to_string(options_.ram_budget_bytes) +
                             " bytes used)");
  }
  ram_bytes_ += frame.size();
  const size_t bytes = frame.size();
  slots_[key] = Slot{SnapshotTier::kRam, std::move(frame), bytes};
  return SnapshotTier::kRam;
}

Result<std::vector<uint8_t>> SnapshotStore::Get(uint64_t key) {
  ++stats_.gets;
  auto it = slots_.find(key);
  if (it == slots_.end()) return NotFound("no snapshot " + std::to_string(key));
  Result<std::vector<uint8_t>> raw = it->second.tier == SnapshotTier::kRam ? Decode(it->second.frame) : [&] {
    Result<std::vector<uint8_t>> frame = ReadDisk(key);
    return frame.ok() ? Decode(*frame) : Result<std::vector<uint8_t>>(frame.status());
  }();
  if (!raw.ok()) {
    ++stats_.corrupt_detected;
    Warn("snapshot " + std::to_string(key) + " is unusable: " + raw.status().message());
  }
  return raw;
}

void SnapshotStore::Erase(uint64_t key) {
  auto it = slots_.find(key);
  if (it == slots_.end()) return;
  if (it->second.tier == SnapshotTier::kRam) {
    ram_bytes_ -= it->second.bytes;
  } else {
    disk_bytes_ -= it->second.bytes;
    if (dir_) (void)dir_->Remove(DiskName(key));
  }
  slots_.erase(it);
}

size_t SnapshotStore::DemoteToDisk(size_t ram_bytes) {
  size_t moved = 0;
  for (auto& [key, slot] : slots_) {
    if (ram_bytes_ <= ram_bytes || !has_disk()) break;
    if (slot.tier != SnapshotTier::kRam) continue;
    if (Status s = WriteDisk(key, slot.frame); !s.ok()) {
      ++stats_.disk_failures;
      Warn("cannot move snapshot " + std::to_string(key) + " to disk (" + s.message() + "); it stays in RAM");
      continue;
    }
    ram_bytes_ -= slot.bytes;
    disk_bytes_ += slot.bytes;
    moved += slot.bytes;
    slot.tier = SnapshotTier::kDisk;
    std::vector<uint8_t>().swap(slot.frame);
  }
  return moved;
}

void SnapshotStore::SetRamBudget(size_t bytes) {
  options_.ram_budget_bytes = bytes;
  DemoteToDisk(bytes);
}

std::optional<SnapshotTier> SnapshotStore::tier_of(uint64_t key) const {
  auto it = slots_.find(key);
  if (it == slots_.end()) return std::nullopt;
  return it->second.tier;
}

std::span<uint8_t> SnapshotStore::RamFrameForTesting(uint64_t key) {
  auto it = slots_.find(key);
  if (it == slots_.end() || it->second.tier != SnapshotTier::kRam) return {};
  return it->second.frame;
}

}  // namespace valet
