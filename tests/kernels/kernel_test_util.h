// Shared helpers for the kernel tests: seeded random rows and typed buffers.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gguf/ggml_type.h"
#include "kernels/kernel_table.h"

namespace valet::testing {

// Gaussian values with occasional outliers (quantizers must cope with both).
inline std::vector<float> RandomRow(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::uniform_int_distribution<int> pick(0, 63);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    x = normal(rng);
    if (pick(rng) == 0) x *= 8.0f;
  }
  return v;
}

inline std::vector<uint8_t> Encode(const KernelTable& table, GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> out(GgmlRowSize(type, static_cast<int64_t>(x.size())));
  table[type].from_float(x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

inline std::vector<float> Decode(const KernelTable& table, GgmlType type, const std::vector<uint8_t>& data,
                                 int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  table[type].to_float(data.data(), out.data(), n);
  return out;
}

inline int64_t BlockSize(GgmlType type) { return GetGgmlTypeTraits(type).block_size; }

inline const GgmlType kWeightTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
                                        GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K};

}  // namespace valet::testing
