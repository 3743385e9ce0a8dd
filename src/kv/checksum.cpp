#include "kv/checksum.h"

#include <cstring>

namespace valet {
namespace {

constexpr uint64_t kMul1 = 0x9fb21c651e98df25ULL;
constexpr uint64_t kMul2 = 0xd6e8feb86659fd93ULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// One multiply-rotate-multiply step: every input bit reaches every output bit
// after the final avalanche.
inline uint64_t Absorb(uint64_t lane, uint64_t word) { return Rotl(lane ^ (word * kMul1), 27) * kMul2; }

inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 32;
  h *= kMul1;
  h ^= h >> 29;
  h *= kMul2;
  h ^= h >> 32;
  return h;
}

}  // namespace

uint64_t Checksum64(std::span<const uint8_t> data) {
  const uint8_t* p = data.data();
  size_t n = data.size();
  // Four independent lanes keep the multipliers' pipelines busy.
  uint64_t lane[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
  while (n >= 32) {
    for (int i = 0; i < 4; ++i) {
      uint64_t w;
      std::memcpy(&w, p + 8 * i, 8);
      lane[i] = Absorb(lane[i], w);
    }
    p += 32;
    n -= 32;
  }
  uint64_t h = Rotl(lane[0], 1) + Rotl(lane[1], 7) + Rotl(lane[2], 12) + Rotl(lane[3], 18);
  h = Absorb(h, data.size());
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = Absorb(h, w);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = Absorb(h, w ^ (static_cast<uint64_t>(n) << 56));
  }
  return Avalanche(h);
}

}  // namespace valet
