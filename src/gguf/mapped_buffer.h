// Read-only bytes of a whole file, either mmap'ed or owned in memory. The
// GGUF reader parses both the same way, so the fuzzer exercises the exact code
// that opens real files. Pointers into data() stay valid across moves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "valet/status.h"

namespace valet {

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
  static MappedBuffer FromBytes(std::vector<uint8_t> bytes);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;         // data_ is an mmap region to munmap
  std::vector<uint8_t> owned_;  // backing store when not mapped
};

}  // namespace valet
