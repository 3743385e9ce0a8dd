// Internal: AArch64 NEON variants. Compiled only where the compiler targets
// AArch64 with NEON (mandatory there, so the base table needs no run-time
// check; the dotprod and i8mm ones do); other builds see only the
// VALET_NEON_COMPILED macro being 0 and must not call them.
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#define VALET_NEON_COMPILED 1
#else
#define VALET_NEON_COMPILED 0
#endif

#if VALET_NEON_COMPILED

namespace valet::neon {

// Bit-exact with the scalar reference.
void Q8_0FromFloat(const float* src, void* dst, int64_t n);

float DotF32(int64_t n, const void* x, const void* y);
float DotF16(int64_t n, const void* x, const void* y);
float DotBf16(int64_t n, const void* x, const void* y);
// The integer types apply the float scales once per block in the reference's
// order, so they equal the scalar reference bit for bit.
float DotQ8_0(int64_t n, const void* x, const void* y);
float DotQ4_0(int64_t n, const void* x, const void* y);

// Fused attention (kernels/attention.h), bit-exact with the reference.
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work);
// activation_neon.cpp: bit-exact with scalar::SwiGlu.
void SwiGlu(int64_t n, float* gate, const float* up);

// Tiles looping this table's vec_dot per pair (scalar dots for the types
// without a NEON dot); fn == nullptr for types without one.
TileKernel GemmTile(GgmlType type);
TileKernel GemvTile(GgmlType type);

// What the running CPU reports (Linux HWCAP bits; false elsewhere).
bool CpuHasDotprod();
bool CpuHasI8mm();

// SDOT variants (tiles_dotprod_i8mm.cpp), bit-exact with the scalar reference;
// nullptr / fn == nullptr for types without one (all but Q8_0 and Q4_0). Only
// callable when CpuHasDotprod().
vec_dot_fn DotprodVecDot(GgmlType type);
TileKernel DotprodTile(GgmlType type, int cols);
// The SMMLA gemm tile (4 x 4), bit-exact too; only callable when CpuHasI8mm().
TileKernel I8mmGemmTile(GgmlType type);

}  // namespace valet::neon

#endif  // VALET_NEON_COMPILED
