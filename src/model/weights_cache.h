// Packed weights as a file (docs/engine.md, "Packed weights as a file").
//
// At load valet repacks each quantized matrix into row groups
// (kernels/weight_pack.h). Done in anonymous memory, that costs the whole
// repack at every start and leaves the weights where Android's low-memory
// killer weighs them. A weights cache is that packed layout written once to
// a file, then mapped read-only by every later load: clean file-backed pages
// the system may drop and read again, and nothing to repack.
//
// Layout (little-endian):
//   header:  char[8] "VALETPW\0", u32 file format, u32 pack format,
//            str valet version, str model fingerprint (str: u32 length, bytes),
//            u64 entry count, then per entry: u64 source offset (the matrix's
//            rows in the GGUF file), u32 type, u32 0, i64 n_in, i64 n_out,
//            u64 offset (from the data section), u64 bytes;
//            u64 data offset, u64 file size, u64 checksum (Checksum64 of
//            everything before it);
//   data:    from a multiple of kWeightsCacheAlignment, each matrix's row
//            groups on a cache line.
// A torn, truncated or foreign file fails the header's checks (its size is
// one of them); the data itself is not summed, which would read every byte
// at every start: the file is only ever published whole (written to a
// temporary name, flushed, renamed), so its bytes are the ones written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/private_dir.h"
#include "gguf/ggml_type.h"
#include "gguf/mapped_buffer.h"
#include "valet/status.h"

namespace valet {

// The data section starts at a multiple of the largest page size a mapping
// may use (arm64 kernels with 64 KiB pages), so it maps on its own pages.
inline constexpr uint64_t kWeightsCacheAlignment = 64 * 1024;

// What must match for a cache to be used: a file packed by another valet,
// for another model or in another row-group layout is rebuilt.
struct WeightsCacheKey {
  std::string valet_version;
  std::string model_fingerprint;
  uint32_t pack_format = 0;  // kernels/weight_pack.h kPackFormat
};

// One packed matrix: where its rows are in the model file, its shape, and
// where its row groups are in the cache's data section.
struct PackedMatrixEntry {
  uint64_t source_offset = 0;
  GgmlType type = GgmlType::kF32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;

  friend bool operator==(const PackedMatrixEntry&, const PackedMatrixEntry&) = default;
};

// A cache file's name in a directory of them: one per model and layout, so a
// new valet version replaces the file it cannot use instead of adding one.
std::string WeightsCacheFileName(const WeightsCacheKey& key);

// Where a path puts the cache of the model `key` names: a directory (one
// that exists, or a path ending in '/'; created 0700 when missing) holds it
// under WeightsCacheFileName; any other path is the file, in its parent.
// The directory is opened and checked (common/private_dir.h).
struct WeightsCacheLocation {
  PrivateDir dir;
  std::string name;
  bool shared_directory = false;  // a directory of caches, not a file the app named
};
[[nodiscard]] Result<WeightsCacheLocation> LocateWeightsCache(const std::string& path, const WeightsCacheKey& key);

// Whether a cache of `bytes` fits `budget_bytes` at `at`; in a directory of
// caches the other models' caches (*.weights) are removed, least recently
// written first, until it does.
bool MakeRoomForWeightsCache(const WeightsCacheLocation& at, uint64_t bytes, uint64_t budget_bytes);

// Removes the weights caches at `path`: the file, or every cache in the
// directory. Nothing there is not an error.
[[nodiscard]] Status RemoveWeightsCaches(const std::string& path);

// A validated cache, mapped read-only.
class WeightsCache {
 public:
  // Maps `name` in `dir` when it is a whole cache for `key` holding exactly
  // `expected` (the matrices this load packs, in order). NotFound when there
  // is no such file; Corrupt, saying why, for anything else found there.
  [[nodiscard]] static Result<WeightsCache> Map(const PrivateDir& dir, std::string_view name,
                                                const WeightsCacheKey& key,
                                                std::span<const PackedMatrixEntry> expected);
  // Publishes a cache of `entries`, whose row groups are at their offsets
  // from `data`: written to "<name>.tmp", flushed, renamed onto `name`.
  // `before_rename` runs once the temporary file is whole (the kill soak's
  // seam).
  [[nodiscard]] static Status Write(const PrivateDir& dir, std::string_view name, const WeightsCacheKey& key,
                                    std::span<const PackedMatrixEntry> entries, const uint8_t* data,
                                    const std::function<void()>& before_rename = {});
  // The bytes Write makes of `entries`.
  static uint64_t FileBytes(const WeightsCacheKey& key, std::span<const PackedMatrixEntry> entries);

  // Start of the data section: entry e's row groups are at data() + e.offset.
  const uint8_t* data() const { return map_.data() + data_offset_; }
  size_t file_bytes() const { return map_.size(); }
  size_t data_bytes() const { return map_.size() - data_offset_; }

 private:
  WeightsCache(MappedBuffer map, uint64_t data_offset) : map_(std::move(map)), data_offset_(data_offset) {}

  MappedBuffer map_;
  uint64_t data_offset_ = 0;
};

}  // namespace valet
