#include "durable/task_checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "kv/checksum.h"

namespace valet {
namespace {

constexpr char kMagic[8] = {'V', 'A', 'L', 'E', 'T', 'C', 'K', 'P'};
constexpr std::string_view kSuffix = ".kv";
constexpr std::string_view kTmpSuffix = ".kv.tmp";

void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint64_t GetLE(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

Result<std::vector<uint8_t>> ReadWhole(const PrivateDir& dir, const std::string& name, size_t max_bytes) {
  const std::string path = dir.PathOf(name);
  const int fd = dir.OpenRead(name);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("no checkpoint " + path);
    return IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return Corrupt(path + " is not a checkpoint of at most " + std::to_string(max_bytes) + " bytes");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done != bytes.size()) return Corrupt(path + " changed size while it was read");
  return bytes;
}

}  // namespace

std::string CheckpointFileName(std::string_view task_key) { return std::string(task_key) + std::string(kSuffix); }

std::string CheckpointPath(const std::string& dir, const std::string& task_key) {
  return dir + "/" + CheckpointFileName(task_key);
}

Status WriteCheckpoint(const PrivateDir& dir, std::string_view task_key, const JournalIdentity& identity,
                       std::span<const uint8_t> payload, FileSync sync,
                       const std::function<void()>& before_rename) {
  const std::string id = IdentityBytes(identity);
  std::vector<uint8_t> out;
  out.reserve(sizeof(kMagic) + 8 + id.size() + 8 + payload.size() + 8);
  out.insert(out.end(), kMagic, kMagic + sizeof(kMagic));
  PutU32(out, kCheckpointFormatVersion);
  PutU32(out, static_cast<uint32_t>(id.size()));
  out.insert(out.end(), id.begin(), id.end());
  PutU64(out, payload.size());
  out.insert(out.end(), payload.begin(), payload.end());
  PutU64(out, Checksum64(out));
  return dir.WriteAtomically(CheckpointFileName(task_key), out, sync, before_rename);
}

Result<std::vector<uint8_t>> ReadCheckpoint(const PrivateDir& dir, std::string_view task_key,
                                            const JournalIdentity& identity, size_t max_payload_bytes) {
  const std::string id = IdentityBytes(identity);
  const size_t fixed = sizeof(kMagic) + 8 + id.size() + 8 + 8;
  const std::string path = dir.PathOf(CheckpointFileName(task_key));
  VALET_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                         ReadWhole(dir, CheckpointFileName(task_key), fixed + max_payload_bytes));
  if (bytes.size() < fixed || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return Corrupt(path + " is not a valet checkpoint");
  }
  const uint8_t* p = bytes.data() + sizeof(kMagic);
  if (GetLE(p, 4) != kCheckpointFormatVersion) return Corrupt(path + " has another checkpoint format");
  if (GetLE(p + 4, 4) != id.size() || std::memcmp(p + 8, id.data(), id.size()) != 0) {
    return Corrupt(path + " was written by another model, valet version or settings");
  }
  const size_t payload_at = sizeof(kMagic) + 8 + id.size() + 8;
  if (GetLE(bytes.data() + payload_at - 8, 8) != bytes.size() - fixed) return Corrupt(path + " is truncated");
  const size_t sum_at = bytes.size() - 8;
  if (GetLE(bytes.data() + sum_at, 8) != Checksum64(std::span<const uint8_t>(bytes).first(sum_at))) {
    return Corrupt(path + " fails its checksum");
  }
  bytes.resize(sum_at);
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(payload_at));
  return bytes;
}

Status RemoveCheckpoint(const PrivateDir& dir, std::string_view task_key) {
  const std::string name = CheckpointFileName(task_key);
  for (const std::string& file : {name, name + ".tmp"}) {
    if (Status removed = dir.Remove(file); !removed.ok() && removed.code() != StatusCode::kNotFound) return removed;
  }
  return Status::Ok();
}

bool IsCheckpointFileName(std::string_view file_name) {
  return file_name.ends_with(kSuffix) || file_name.ends_with(kTmpSuffix);
}

}  // namespace valet
