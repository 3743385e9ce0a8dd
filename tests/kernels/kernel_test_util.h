// Shared helpers for the kernel tests: seeded random rows and typed buffers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gguf/ggml_type.h"
#include "kernels/kernel_table.h"

namespace valet::testing {

// Gaussian values with occasional outliers (quantizers must cope with both).
// Box-Muller on the generator's bits in float: std::normal_distribution goes
// through libstdc++'s generate_canonical, whose long double logl clang (not
// GCC) evaluates at run time, in software on aarch64, which made these
// tests several times slower under qemu.
inline std::vector<float> RandomRow(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  const auto uniform = [&rng] { return static_cast<float>((rng() >> 8) + 1) * 0x1p-24f; };  // (0, 1]
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    x = scale * std::sqrt(-2.0f * std::log(uniform())) * std::cos(6.2831853f * uniform());
    if ((rng() & 63) == 0) x *= 8.0f;
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

// Q8_1 activations carry s = d * sum(q) rounded to fp16 from the unrounded d,
// and the dots of the weights paired with them (Q4_1, Q5_1) use s for the
// weights' offset m: they differ from the dot of the dequantized rows by up to
// |m| |s| 2^-10 per block, with |m| <= max |w| (the block minimum is stored
// exactly as q = 0). Zero for every other activation type.
inline double Q8_1OffsetBound(GgmlType act_type, const float* w, const float* a, int64_t n) {
  if (act_type != GgmlType::kQ8_1) return 0.0;
  double bound = 0;
  for (int64_t b = 0; b + 32 <= n; b += 32) {
    double wmax = 0, asum = 0;
    for (int64_t j = b; j < b + 32; ++j) {
      wmax = std::max(wmax, std::fabs(static_cast<double>(w[j])));
      asum += a[j];
    }
    bound += wmax * std::fabs(asum);
  }
  return bound * 0x1p-10 * 1.01;
}

// Every kernel table this CPU can run, the scalar reference first.
inline std::vector<const KernelTable*> Tables() {
  const KernelTable* t[kMaxKernelTables];
  const int n = AvailableKernelTables(t);
  return {t, t + n};
}

inline const GgmlType kWeightTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,   GgmlType::kQ4_0,
    GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kQ2_K,
    GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,   GgmlType::kIQ4_XS};

// The quantized weight types: integer products inside a block.
inline const GgmlType kQuantWeightTypes[] = {
    GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
    GgmlType::kIQ4_NL, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
    GgmlType::kQ6_K, GgmlType::kIQ4_XS};

}  // namespace valet::testing
