#include "gguf/mapped_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace valet {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

}  // namespace

MappedBuffer::~MappedBuffer() { Release(); }

MappedBuffer::MappedBuffer(MappedBuffer&& other) noexcept { *this = std::move(other); }

MappedBuffer& MappedBuffer::operator=(MappedBuffer&& other) noexcept {
  if (this == &other) return *this;
  Release();
  // Moving a vector keeps its heap block, so data_ stays valid for owned bytes.
  owned_ = std::move(other.owned_);
  data_ = std::exchange(other.data_, nullptr);
  size_ = std::exchange(other.size_, 0);
  map_ = std::exchange(other.map_, nullptr);
  map_size_ = std::exchange(other.map_size_, 0);
  return *this;
}

void MappedBuffer::Release() {
  if (map_ != nullptr) munmap(map_, map_size_);
  data_ = nullptr;
  size_ = 0;
  map_ = nullptr;
  map_size_ = 0;
  owned_.clear();
}

Result<MappedBuffer> MappedBuffer::MapFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + ErrnoText());
  }
  Result<MappedBuffer> buf = MapRange(FileRange{fd, 0, 0}, path);
  close(fd);  // a mapping keeps its own reference to the file
  return buf;
}

Result<MappedBuffer> MappedBuffer::MapRange(const FileRange& range, const std::string& name) {
  if (range.fd < 0) return InvalidArgument(name + ": no file descriptor");
  struct stat st {};
  if (fstat(range.fd, &st) != 0) return IoError(name + ": cannot stat: " + ErrnoText());
  if (!S_ISREG(st.st_mode)) return IoError(name + ": not a regular file");
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (range.offset > file_size) {
    return OutOfRange(name + ": offset " + std::to_string(range.offset) + " is past the end of the " +
                      std::to_string(file_size) + "-byte file");
  }
  const uint64_t size = range.size == 0 ? file_size - range.offset : range.size;
  if (size > file_size - range.offset || size > SIZE_MAX) {
    return OutOfRange(name + ": " + std::to_string(size) + " bytes at offset " + std::to_string(range.offset) +
                      " run past the end of the " + std::to_string(file_size) + "-byte file");
  }
  MappedBuffer buf;
  if (size == 0) return buf;
  if (range.offset % kTensorDataAlignment != 0) return ReadRange(range.fd, range.offset, size, name);
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t lead = range.offset % page;  // mmap offsets are whole pages
  void* p = mmap(nullptr, size + lead, PROT_READ, MAP_PRIVATE, range.fd, static_cast<off_t>(range.offset - lead));
  if (p == MAP_FAILED) return IoError(name + ": cannot mmap: " + ErrnoText());
  buf.map_ = p;
  buf.map_size_ = size + lead;
  buf.data_ = static_cast<const uint8_t*>(p) + lead;
  buf.size_ = size;
  return buf;
}

Result<MappedBuffer> MappedBuffer::ReadRange(int fd, uint64_t offset, uint64_t size, const std::string& name) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return ResourceExhausted(name + ": cannot allocate " + std::to_string(size) + " bytes: " + ErrnoText());
  MappedBuffer buf;  // owns p from here, so every failure below unmaps it
  buf.map_ = p;
  buf.map_size_ = size;
  auto* dst = static_cast<uint8_t*>(p);
  for (uint64_t done = 0; done < size;) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - done, size_t{1} << 30));
    const ssize_t n = pread(fd, dst + done, chunk, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(name + ": cannot read: " + ErrnoText());
    if (n == 0) return IoError(name + ": the file ended after " + std::to_string(offset + done) + " bytes while reading");
    done += static_cast<uint64_t>(n);
  }
  mprotect(p, size, PROT_READ);  // as read-only as a mapping; a failure changes nothing else
  buf.data_ = dst;
  buf.size_ = size;
  return buf;
}

MappedBuffer MappedBuffer::FromBytes(std::vector<uint8_t> bytes) {
  MappedBuffer buf;
  buf.owned_ = std::move(bytes);
  buf.data_ = buf.owned_.data();
  buf.size_ = buf.owned_.size();
  return buf;
}

}  // namespace valet
