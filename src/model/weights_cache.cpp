#include "model/weights_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/cache_aligned.h"
#include "kv/checksum.h"

namespace valet {
namespace {

constexpr char kMagic[8] = {'V', 'A', 'L', 'E', 'T', 'P', 'W', '\0'};
constexpr uint32_t kFileFormat = 1;
// Bounds on what a header may claim before anything is sized by it: a model
// has a few hundred packed matrices, and its strings are short.
constexpr uint64_t kMaxEntries = 1u << 16;
constexpr uint32_t kMaxString = 4096;
constexpr std::string_view kSuffix = ".weights";
constexpr size_t kMaxDirEntries = 4096;

void Put(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void PutString(std::vector<uint8_t>& out, std::string_view s) {
  Put(out, s.size(), 4);
  out.insert(out.end(), s.begin(), s.end());
}

// Reads the header from the front of a file's bytes, bounds-checked.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool Get(uint64_t& v, int n) {
    if (bytes_.size() - pos_ < static_cast<size_t>(n)) return false;
    v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(bytes_[pos_ + i]) << (8 * i);
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool GetString(std::string& s) {
    uint64_t n = 0;
    if (!Get(n, 4) || n > kMaxString || bytes_.size() - pos_ < n) return false;
    s.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

uint64_t DataOffset(uint64_t header_bytes) {
  return (header_bytes + kWeightsCacheAlignment - 1) / kWeightsCacheAlignment * kWeightsCacheAlignment;
}

uint64_t DataBytes(std::span<const PackedMatrixEntry> entries) {
  uint64_t end = 0;
  for (const PackedMatrixEntry& e : entries) end = std::max(end, e.offset + e.bytes);
  return end;
}

// Everything before the checksum; the header's size does not depend on the
// offsets it holds, so the data offset and file size are filled in place.
std::vector<uint8_t> HeaderBody(const WeightsCacheKey& key, std::span<const PackedMatrixEntry> entries,
                                uint64_t data_offset, uint64_t file_bytes) {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof(kMagic));
  Put(out, kFileFormat, 4);
  Put(out, key.pack_format, 4);
  PutString(out, key.valet_version);
  PutString(out, key.model_fingerprint);
  Put(out, entries.size(), 8);
  for (const PackedMatrixEntry& e : entries) {
    Put(out, e.source_offset, 8);
    Put(out, static_cast<uint32_t>(e.type), 4);
    Put(out, 0, 4);
    Put(out, static_cast<uint64_t>(e.n_in), 8);
    Put(out, static_cast<uint64_t>(e.n_out), 8);
    Put(out, e.offset, 8);
    Put(out, e.bytes, 8);
  }
  Put(out, data_offset, 8);
  Put(out, file_bytes, 8);
  return out;
}

std::string Hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof(text), "%llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

std::string WeightsCacheFileName(const WeightsCacheKey& key) {
  std::string name;
  // Fingerprints are "gguf-<hex>-<size>"; anything else is reduced to what a file name may hold.
  for (char c : key.model_fingerprint.substr(0, 128)) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    name += plain ? c : '_';
  }
  return name + "-p" + std::to_string(key.pack_format) + std::string(kSuffix);
}

namespace {

bool IsDirectoryPath(const std::string& path) {
  std::error_code ignored;
  return path.ends_with('/') || std::filesystem::is_directory(path, ignored);
}

}  // namespace

Result<WeightsCacheLocation> LocateWeightsCache(const std::string& path, const WeightsCacheKey& key) {
  if (path.empty()) return InvalidArgument("no weights cache path");
  if (IsDirectoryPath(path)) {
    VALET_ASSIGN_OR_RETURN(PrivateDir dir, PrivateDir::Open(path));
    return WeightsCacheLocation{std::move(dir), WeightsCacheFileName(key), true};
  }
  const std::filesystem::path file(path);
  const std::string parent = file.has_parent_path() ? file.parent_path().string() : ".";
  VALET_ASSIGN_OR_RETURN(PrivateDir dir, PrivateDir::Open(parent));
  return WeightsCacheLocation{std::move(dir), file.filename().string(), false};
}

bool MakeRoomForWeightsCache(const WeightsCacheLocation& at, uint64_t bytes, uint64_t budget_bytes) {
  if (bytes > budget_bytes) return false;
  if (!at.shared_directory) return true;
  Result<std::vector<std::string>> names = at.dir.List(kMaxDirEntries);
  if (!names.ok()) return false;
  struct Cache {
    std::string name;
    uint64_t bytes;
    int64_t written_ns;
  };
  std::vector<Cache> others;
  uint64_t used = 0;
  for (const std::string& name : *names) {
    Result<struct stat> st = at.dir.Stat(name);
    if (name == at.name || !name.ends_with(kSuffix) || !st.ok() || !S_ISREG(st->st_mode)) continue;
    others.push_back({name, static_cast<uint64_t>(st->st_size),
                      int64_t{st->st_mtim.tv_sec} * 1'000'000'000 + st->st_mtim.tv_nsec});
    used += others.back().bytes;
  }
  std::sort(others.begin(), others.end(), [](const Cache& a, const Cache& b) { return a.written_ns < b.written_ns; });
  for (const Cache& c : others) {
    if (used + bytes <= budget_bytes) break;
    if (at.dir.Remove(c.name).ok()) used -= c.bytes;
  }
  return used + bytes <= budget_bytes;
}

Status RemoveWeightsCaches(const std::string& path) {
  std::error_code ignored;
  if (!IsDirectoryPath(path)) {
    if (!std::filesystem::exists(std::filesystem::symlink_status(path, ignored))) return Status::Ok();
    VALET_ASSIGN_OR_RETURN(WeightsCacheLocation at, LocateWeightsCache(path, {}));  // a file: no key needed
    Status removed = at.dir.Remove(at.name);
    return removed.code() == StatusCode::kNotFound ? Status::Ok() : removed;
  }
  if (!std::filesystem::exists(path, ignored)) return Status::Ok();
  VALET_ASSIGN_OR_RETURN(PrivateDir dir, PrivateDir::Open(path));
  VALET_ASSIGN_OR_RETURN(std::vector<std::string> names, dir.List(kMaxDirEntries));
  for (const std::string& name : names) {
    if (!name.ends_with(kSuffix) && !name.ends_with(std::string(kSuffix) + ".tmp")) continue;
    Status removed = dir.Remove(name);
    if (!removed.ok() && removed.code() != StatusCode::kNotFound) return removed;
  }
  return Status::Ok();
}

uint64_t WeightsCache::FileBytes(const WeightsCacheKey& key, std::span<const PackedMatrixEntry> entries) {
  const uint64_t header = HeaderBody(key, entries, 0, 0).size() + 8;
  return DataOffset(header) + DataBytes(entries);
}

Status WeightsCache::Write(const PrivateDir& dir, std::string_view name, const WeightsCacheKey& key,
                           std::span<const PackedMatrixEntry> entries, const uint8_t* data,
                           const std::function<void()>& before_rename) {
  const uint64_t file_bytes = FileBytes(key, entries);
  const uint64_t data_bytes = DataBytes(entries);
  std::vector<uint8_t> header = HeaderBody(key, entries, file_bytes - data_bytes, file_bytes);
  Put(header, Checksum64(header), 8);
  header.resize(file_bytes - data_bytes, 0);  // padding up to the data section
  const std::span<const uint8_t> parts[] = {header, {data, data_bytes}};
  return dir.WriteAtomically(name, parts, FileSync::kFsync, before_rename);
}

Result<WeightsCache> WeightsCache::Map(const PrivateDir& dir, std::string_view name, const WeightsCacheKey& key,
                                       std::span<const PackedMatrixEntry> expected) {
  const std::string path = dir.PathOf(name);
  const int fd = dir.OpenRead(name);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("no weights cache " + path);
    return IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  Result<MappedBuffer> map = MappedBuffer::MapRange(FileRange{fd, 0, 0}, path);
  ::close(fd);
  if (!map.ok()) return map.status();
  const std::span<const uint8_t> bytes(map->data(), map->size());
  const auto refuse = [&](const std::string& why) { return Corrupt(path + ": " + why + "; it is rebuilt"); };
  Reader r(bytes);
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return refuse("not a valet weights cache");
  }
  uint64_t skip = 0, format = 0, pack_format = 0, count = 0;
  std::string version, fingerprint;
  if (!r.Get(skip, 8) || !r.Get(format, 4) || format != kFileFormat) return refuse("another file format");
  if (!r.Get(pack_format, 4) || !r.GetString(version) || !r.GetString(fingerprint) || !r.Get(count, 8)) {
    return refuse("a torn header");
  }
  if (count > kMaxEntries) return refuse("a torn header (" + std::to_string(count) + " matrices)");
  std::vector<PackedMatrixEntry> entries(static_cast<size_t>(count));
  for (PackedMatrixEntry& e : entries) {
    uint64_t type = 0, pad = 0, n_in = 0, n_out = 0;
    if (!r.Get(e.source_offset, 8) || !r.Get(type, 4) || !r.Get(pad, 4) || !r.Get(n_in, 8) || !r.Get(n_out, 8) ||
        !r.Get(e.offset, 8) || !r.Get(e.bytes, 8)) {
      return refuse("a torn header");
    }
    e.type = static_cast<GgmlType>(type);
    e.n_in = static_cast<int64_t>(n_in);
    e.n_out = static_cast<int64_t>(n_out);
  }
  uint64_t data_offset = 0, file_bytes = 0, checksum = 0;
  const bool whole = r.Get(data_offset, 8) && r.Get(file_bytes, 8);
  const size_t body = r.pos();
  if (!whole || !r.Get(checksum, 8)) return refuse("a torn header");
  if (checksum != Checksum64(bytes.first(body))) return refuse("its header's checksum does not match");
  if (file_bytes != bytes.size()) {
    return refuse(std::to_string(bytes.size()) + " bytes where its header says " + std::to_string(file_bytes));
  }
  if (version != key.valet_version) return refuse("written by valet " + version + ", this is " + key.valet_version);
  if (fingerprint != key.model_fingerprint) return refuse("made for another model (" + fingerprint + ")");
  if (pack_format != key.pack_format) {
    return refuse("row-group layout " + std::to_string(pack_format) + ", this valet packs " +
                  std::to_string(key.pack_format));
  }
  if (entries.size() != expected.size() || !std::equal(entries.begin(), entries.end(), expected.begin())) {
    return refuse("its matrices are not the ones this load packs");
  }
  if (data_offset != DataOffset(body + 8) || data_offset + DataBytes(entries) != file_bytes) {
    return refuse("a data section at " + Hex(data_offset) + " that does not fit its file");
  }
  return WeightsCache(std::move(map).value(), data_offset);
}

}  // namespace valet
