// Buffers that start on a cache line, left uninitialised by resize().
//
// A large std::vector's storage comes from mmap through malloc, 16 bytes past
// a page boundary, so a row range that two threads write side by side (a
// GEMM's output columns, a thread's slice of work floats) shares a line at
// each edge, and every 64-byte vector load or store crosses two lines.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace valet {

inline constexpr std::size_t kCacheLineBytes = 64;

template <typename T>
struct CacheAlignedAllocator {
  using value_type = T;

  CacheAlignedAllocator() = default;
  template <typename U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) noexcept {}  // NOLINT: allocator rebinding

  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kCacheLineBytes}); }

  // resize(n) default-initialises (a float stays unwritten): scratch sized for
  // the largest batch costs no time at start-up and its pages only as steps
  // reach them (the 3b-shape model: 64 MiB zeroed before, 36 ms of its 42 ms load).
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <typename U>
  bool operator==(const CacheAlignedAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using CacheAlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

// Uninitialised bytes on a cache line (a buffer about to be written whole).
struct CacheAlignedDelete {
  void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{kCacheLineBytes}); }
};
using CacheAlignedBytes = std::unique_ptr<std::byte[], CacheAlignedDelete>;

inline CacheAlignedBytes MakeCacheAlignedBytes(std::size_t n) {
  return CacheAlignedBytes(new (std::align_val_t{kCacheLineBytes}) std::byte[n]);
}

// n rounded up to a whole number of cache lines.
constexpr std::size_t RoundUpToCacheLine(std::size_t n) {
  return (n + kCacheLineBytes - 1) / kCacheLineBytes * kCacheLineBytes;
}

}  // namespace valet
