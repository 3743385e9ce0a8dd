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
#include "kernels/activation.h"
#include "kernels/attention.h"

namespace valet {

// Dequantizes n elements (a whole number of blocks) of `src` into `dst`.
using to_float_fn = void (*)(const void* src, float* dst, int64_t n);
// Quantizes/converts n floats (a whole number of blocks) into `dst`.
using from_float_fn = void (*)(const float* src, void* dst, int64_t n);
// Dot product of n elements: x is a row of the weight type, y a row of its vec_dot_type.
using vec_dot_fn = float (*)(int64_t n, const void* x, const void* y);
// A tile of dot products, `rows` weight rows (x, stride ldx bytes) by `cols`
// activation rows (y, stride ldy bytes): out[j * ldo + i] = dot(x row i, y row j).
// Each weight block is loaded once per tile instead of once per pair. For the
// integer types a tile's results equal the same table's vec_dot bit for bit
// (same integers, same per-block float operations in the same order); for the
// float types they may differ from vec_dot by summation order.
using gemm_fn = void (*)(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy,
                         float* out, int64_t ldo);

// A tile kernel and its fixed shape; fn == nullptr when a table has none.
struct TileKernel {
  gemm_fn fn = nullptr;
  int rows = 0;  // weight rows per call
  int cols = 0;  // activation rows (tokens) per call
};

struct TypeKernels {
  GgmlType vec_dot_type = GgmlType::kF32;
  to_float_fn to_float = nullptr;
  from_float_fn from_float = nullptr;
  vec_dot_fn vec_dot = nullptr;  // nullptr for activation-only types (Q8_K)
  TileKernel gemm = {};          // prefill: cols >= 2
  TileKernel gemv = {};          // decode: cols == 1, several rows share the activation loads
  // Row-group kernels for WeightLayout::kRowGroups matrices (kernels/packed_blocks.h):
  // x is a row group, y rows of BlockQ8_0S; rows is kPackRows times the
  // groups per call, consecutive ones ldx bytes apart (unused for one group).
  // Every output is the same per-block float sequence whatever cols is, and
  // the scalar table's equal the SIMD tables' bit for bit.
  TileKernel packed_gemm = {};         // cols > 1 tokens
  TileKernel packed_gemm_tail = {};    // one group, for a range's last groups short of packed_gemm's (or none)
  TileKernel packed_gemm_narrow = {};  // fewer tokens than packed_gemm, rows dividing its, for a chunk's last
                                       // tokens short of a packed_gemm tile (or none: they take the GEMV)
  TileKernel packed_gemv = {};         // cols == 1
};

// Indexed by the numeric GgmlType id; ids without kernels hold null functions.
struct KernelTable {
  static constexpr int kMaxTypeId = 40;
  const char* name = "";
  TypeKernels types[kMaxTypeId] = {};
  attention_fn attention = nullptr;  // fused softmax·V over a sequence's K/V rows (kernels/attention.h)
  swiglu_fn swiglu = nullptr;        // kernels/activation.h
  // n floats (whole blocks) into the row groups' BlockQ8_0S activations
  // (kernels/packed_blocks.h): the table's Q8_0 quantization, d widened and
  // the quants summed, in one pass; nullptr: built from kQ8_0's from_float.
  from_float_fn q8_0s_from_float = nullptr;

  const TypeKernels& operator[](GgmlType t) const { return types[static_cast<uint32_t>(t)]; }
  // True when rows of `t` can be dequantized and multiplied.
  bool SupportsWeight(GgmlType t) const {
    return static_cast<uint32_t>(t) < kMaxTypeId && (*this)[t].vec_dot != nullptr;
  }
};

// The table chosen once, at first use. On x86-64, from CPUID: AVX-512 BF16,
// else AVX-512 VNNI, else AVX-VNNI, else AVX2, else scalar; on AArch64, from
// HWCAP: NEON with i8mm, else with dotprod, else plain NEON.
// VALET_KERNELS=scalar|avx2|vnni|avx512vnni|avx512bf16|neon|neon_dotprod|
// neon_i8mm in the environment forces one (an unavailable choice falls back to
// the best table this CPU has).
const KernelTable& ActiveKernels();
const char* ActiveKernelsName();

// The portable reference implementation, always available.
const KernelTable& ScalarKernels();
// The AVX2+FMA+F16C variants, or nullptr when the CPU (or build) lacks them.
const KernelTable* Avx2Kernels();
// AVX2 plus AVX-VNNI int8 dot products, or nullptr when the CPU (or build) lacks them.
const KernelTable* AvxVnniKernels();
// AVX2 plus AVX-512 VNNI int8 dot products (EVEX, 256-bit vectors) and
// 512-bit row-group GEMMs, or nullptr when the CPU (or build) lacks AVX-512
// F/BW/VL/VNNI.
const KernelTable* Avx512VnniKernels();
// The AVX-512 VNNI table plus AVX512_BF16 dot products for BF16 weights, or
// nullptr when the CPU (or build) lacks AVX512_BF16.
const KernelTable* Avx512Bf16Kernels();
// The AArch64 NEON variants, or nullptr on builds for other architectures.
const KernelTable* NeonKernels();
// NEON plus SDOT (FEAT_DotProd) for Q8_0/Q4_0, or nullptr when the CPU lacks it.
const KernelTable* NeonDotprodKernels();
// NEON dotprod plus SMMLA (FEAT_I8MM) gemm tiles and row-group GEMMs, or
// nullptr when the CPU lacks it.
const KernelTable* NeonI8mmKernels();
// For tests and benchmarks: scalar first, then this CPU's base SIMD table and
// its extension tables (AVX2 then AVX-VNNI, AVX-512 VNNI and AVX-512 BF16, or
// NEON then the best of i8mm and dotprod).
inline constexpr int kMaxKernelTables = 5;
int AvailableKernelTables(const KernelTable* out[kMaxKernelTables]);

}  // namespace valet
