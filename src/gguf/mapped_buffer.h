// Read-only bytes of a file (or a range of an open one), either mmap'ed or
// owned in memory. The GGUF reader parses both the same way, so the fuzzer
// exercises the exact code that opens real files. Pointers into data() stay
// valid across moves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "valet/status.h"

namespace valet {

// A model stored inside another file, read through a descriptor the caller
// owns: Android's ParcelFileDescriptor, or an uncompressed APK asset
// (AssetFileDescriptor: the APK's fd, the asset's start offset and length).
struct FileRange {
  int fd = -1;
  uint64_t offset = 0;
  uint64_t size = 0;  // 0: to the end of the file
};

// The alignment the engine needs for tensor data in memory: alignof(float),
// for the F32 views of norms and biases (quant blocks need 2; the SIMD
// kernels load unaligned; the GGUF reader copies its scalars). GGUF aligns
// tensor data to general.alignment (32 by default) from the start of its
// file, so a range at an offset that is a multiple of this keeps that
// alignment when mapped in place.
inline constexpr uint64_t kTensorDataAlignment = alignof(float);

class MappedBuffer {
 public:
  MappedBuffer() = default;
  ~MappedBuffer();
  MappedBuffer(MappedBuffer&& other) noexcept;
  MappedBuffer& operator=(MappedBuffer&& other) noexcept;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;

  // Maps the file read-only. An empty file yields an empty buffer (nothing to map).
  static Result<MappedBuffer> MapFile(const std::string& path);
  // The range, mapped read-only like a file (from the page below its offset),
  // or, at an offset that is not a multiple of kTensorDataAlignment, read
  // into page-aligned anonymous memory: the model's size in RAM instead of
  // page cache. The descriptor is not kept (a mapping holds its own
  // reference), so the caller may close it on return. `name` stands for the
  // file in error messages.
  static Result<MappedBuffer> MapRange(const FileRange& range, const std::string& name);
  static MappedBuffer FromBytes(std::vector<uint8_t> bytes);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  static Result<MappedBuffer> ReadRange(int fd, uint64_t offset, uint64_t size, const std::string& name);
  void Release();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;         // the mmap region holding data_, to munmap
  size_t map_size_ = 0;
  std::vector<uint8_t> owned_;  // backing store when not mapped
};

}  // namespace valet
