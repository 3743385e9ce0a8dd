// A small seeded RNG (xoshiro256**) whose whole state is four plain integers.
// Paused sequences are snapshotted and resumed later, so the state must be
// copyable and serializable and a restored generator must continue bit-exactly;
// std::mt19937's state is neither small nor convenient to serialize.
#pragma once

#include <array>
#include <cstdint>

namespace valet {

struct RngState {
  std::array<uint64_t, 4> words{};

  bool operator==(const RngState&) const = default;
};

class Rng {
 public:
  // The seed is expanded with splitmix64, so nearby seeds give unrelated streams
  // and no seed yields the all-zero state xoshiro cannot leave.
  explicit Rng(uint64_t seed);

  uint64_t NextU64();
  // Uniform in [0, 1) with 53 random bits (every value is a multiple of 2^-53).
  double NextDouble();

  RngState state() const { return state_; }
  // Precondition: `state` came from state() (it is not all zero).
  void set_state(const RngState& state);

 private:
  RngState state_;
};

}  // namespace valet
