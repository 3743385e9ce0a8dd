#include "sampling/rng.h"

#include <cassert>

namespace valet {
namespace {

uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& w : state_.words) w = SplitMix64(x);
}

uint64_t Rng::NextU64() {
  auto& s = state_.words;
  const uint64_t result = RotateLeft(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = RotateLeft(s[3], 45);
  return result;
}

double Rng::NextDouble() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

void Rng::set_state(const RngState& state) {
  assert((state.words[0] | state.words[1] | state.words[2] | state.words[3]) != 0 &&
         "xoshiro cannot leave the all-zero state");
  state_ = state;
}

}  // namespace valet
