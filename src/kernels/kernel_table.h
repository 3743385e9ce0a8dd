// Per-type kernels and the table the engine dispatches through.
//
// A matrix product of a weight row (type T) with an activation row first
// converts the activation to T's `vec_dot_type` (llama.cpp does the same:
// Q8_0 for Q8_0/Q4_0, Q8_K for the K-quants, F16/BF16 for the half types), then
// calls `vec_dot` on the two raw rows. Row lengths must be multiples of the
// block size of both types.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"

namespace valet {

// Dequantizes n elements (a whole number of blocks) of `src` into `dst`.
using to_float_fn = void (*)(const void* src, float* dst, int64_t n);
// Quantizes/converts n floats (a whole number of blocks) into `dst`.
using from_float_fn = void (*)(const float* src, void* dst, int64_t n);
// Dot product of n elements: x is a row of the weight type, y a row of its vec_dot_type.
using vec_dot_fn = float (*)(int64_t n, const void* x, const void* y);

struct TypeKernels {
  GgmlType vec_dot_type = GgmlType::kF32;
  to_float_fn to_float = nullptr;
  from_float_fn from_float = nullptr;
  vec_dot_fn vec_dot = nullptr;  // nullptr for activation-only types (Q8_K)
};

// Indexed by the numeric GgmlType id; ids without kernels hold null functions.
struct KernelTable {
  static constexpr int kMaxTypeId = 32;
  const char* name = "";
  TypeKernels types[kMaxTypeId] = {};

  const TypeKernels& operator[](GgmlType t) const { return types[static_cast<uint32_t>(t)]; }
  // True when rows of `t` can be dequantized and multiplied.
  bool SupportsWeight(GgmlType t) const {
    return static_cast<uint32_t>(t) < kMaxTypeId && (*this)[t].vec_dot != nullptr;
  }
};

// The table chosen once, at first use, from CPUID. VALET_KERNELS=scalar in the
// environment forces the scalar reference (for debugging numerics).
const KernelTable& ActiveKernels();
const char* ActiveKernelsName();

// The portable reference implementation, always available.
const KernelTable& ScalarKernels();
// The AVX2+FMA+F16C variants, or nullptr when the CPU (or build) lacks them.
const KernelTable* Avx2Kernels();

}  // namespace valet
