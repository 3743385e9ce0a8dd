// Software prefetch for decode's weight streams, shared by the x86 and NEON
// kernels.
#pragma once

#include <cstddef>

#include "common/cache_aligned.h"

namespace valet {

// The cache a prefetch fills (the values are __builtin_prefetch's locality).
enum class PrefetchLevel { kL2 = 2, kL1 = 3 };

// Every cache line of the Bytes-byte block that starts Distance bytes past
// `block`. Blocks are contiguous, so calling this for each block in turn
// covers the whole stream ahead; prefetching only a block's first line lets
// the hardware prefetcher trail the software one, which was slower than no
// prefetch at all (BM_DecodeStream).
template <size_t Bytes, size_t Distance, PrefetchLevel Level = PrefetchLevel::kL1>
inline void PrefetchBlockAhead(const void* block) {
  const char* p = static_cast<const char*>(block) + Distance;
#pragma GCC unroll 32
  for (size_t o = 0; o < Bytes; o += kCacheLineBytes) __builtin_prefetch(p + o, 0, static_cast<int>(Level));
}

}  // namespace valet
