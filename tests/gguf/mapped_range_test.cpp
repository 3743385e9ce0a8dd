// MappedBuffer::MapRange: a range of an open file at any offset, mapped in
// place when its offset keeps tensor data aligned and read into aligned
// memory otherwise; bad ranges and descriptors are clear errors.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gguf/mapped_buffer.h"

namespace valet {
namespace {

// An unlinked temporary file holding `bytes`, open for reading.
class TempFile {
 public:
  explicit TempFile(const std::vector<uint8_t>& bytes) {
    std::string path = (std::filesystem::temp_directory_path() / "valet-range-XXXXXX").string();
    fd_ = mkstemp(path.data());
    EXPECT_GE(fd_, 0);
    unlink(path.c_str());
    EXPECT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  ~TempFile() { close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

std::vector<uint8_t> Bytes(size_t n) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 131 + i / 256);
  return b;
}

TEST(MappedRange, EveryOffsetGivesTheBytesAlignedInPlaceOrCopied) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::vector<uint8_t> bytes = Bytes(3 * page + 100);
  const TempFile file(bytes);
  for (uint64_t offset : {uint64_t{0}, uint64_t{4}, uint64_t{32}, uint64_t{page}, page + 4, page + 64, uint64_t{1},
                          uint64_t{3}, page + 2, 2 * page + 7}) {
    for (uint64_t size : {uint64_t{0}, uint64_t{10}, uint64_t{page}}) {
      SCOPED_TRACE("offset " + std::to_string(offset) + " size " + std::to_string(size));
      Result<MappedBuffer> buf = MappedBuffer::MapRange({file.fd(), offset, size}, "range");
      ASSERT_TRUE(buf.ok()) << buf.status().ToString();
      const size_t expected = size == 0 ? bytes.size() - offset : size;
      ASSERT_EQ(buf->size(), expected);
      EXPECT_EQ(std::vector<uint8_t>(buf->data(), buf->data() + expected),
                std::vector<uint8_t>(bytes.begin() + offset, bytes.begin() + offset + expected));
      const auto address = reinterpret_cast<uintptr_t>(buf->data());
      EXPECT_EQ(address % kTensorDataAlignment, 0u);
      // In place, the address keeps the offset's place in its page; a copy starts a page.
      EXPECT_EQ(address % page, offset % kTensorDataAlignment == 0 ? offset % page : 0u);
    }
  }
}

TEST(MappedRange, TheDescriptorMayBeClosedOnReturn) {
  const std::vector<uint8_t> bytes = Bytes(5000);
  for (uint64_t offset : {uint64_t{8}, uint64_t{9}}) {  // mapped, copied
    MappedBuffer buf;
    {
      const TempFile file(bytes);
      Result<MappedBuffer> mapped = MappedBuffer::MapRange({file.fd(), offset, 0}, "range");
      ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
      buf = std::move(mapped).value();
    }
    ASSERT_EQ(buf.size(), bytes.size() - offset);
    EXPECT_EQ(buf.data()[buf.size() - 1], bytes.back());
  }
}

TEST(MappedRange, BadRangesAndDescriptorsAreClearErrors) {
  const TempFile file(Bytes(100));
  const int fd = file.fd();
  Result<MappedBuffer> past = MappedBuffer::MapRange({fd, 101, 0}, "model.gguf");
  EXPECT_EQ(past.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(past.status().message().find("model.gguf: offset 101 is past the end of the 100-byte file"),
            std::string::npos)
      << past.status().ToString();
  EXPECT_EQ(MappedBuffer::MapRange({fd, 90, 11}, "m").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(MappedBuffer::MapRange({fd, 10, UINT64_MAX}, "m").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(MappedBuffer::MapRange({fd, UINT64_MAX, 1}, "m").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(MappedBuffer::MapRange({-1, 0, 0}, "m").status().code(), StatusCode::kInvalidArgument);
  Result<MappedBuffer> empty = MappedBuffer::MapRange({fd, 100, 0}, "m");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 0u);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  Result<MappedBuffer> from_pipe = MappedBuffer::MapRange({pipe_fds[0], 0, 0}, "m");
  EXPECT_EQ(from_pipe.status().code(), StatusCode::kIo);
  EXPECT_NE(from_pipe.status().message().find("not a regular file"), std::string::npos);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  EXPECT_EQ(MappedBuffer::MapRange({pipe_fds[0], 0, 0}, "m").status().code(), StatusCode::kIo);  // closed
}

}  // namespace
}  // namespace valet
