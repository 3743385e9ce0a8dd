#include "gguf/mapped_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
  mapped_ = std::exchange(other.mapped_, false);
  return *this;
}

void MappedBuffer::Release() {
  if (mapped_ && data_ != nullptr) {
    munmap(const_cast<uint8_t*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
  owned_.clear();
}

Result<MappedBuffer> MappedBuffer::MapFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + ErrnoText());
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    Status s = IoError(path + ": cannot stat: " + ErrnoText());
    close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return IoError(path + ": not a regular file");
  }
  MappedBuffer buf;
  if (st.st_size == 0) {
    close(fd);
    return buf;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) {
    return IoError(path + ": cannot mmap: " + std::strerror(map_errno));
  }
  buf.data_ = static_cast<const uint8_t*>(p);
  buf.size_ = size;
  buf.mapped_ = true;
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
