// Internal: the portable reference kernels, one function per type and role.
// Exposed to the SIMD variants (which fall back to some of them) and to tests
// through the kernel table; the engine goes through ActiveKernels().
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"

namespace valet::scalar {

void F32ToFloat(const void* src, float* dst, int64_t n);
void F32FromFloat(const float* src, void* dst, int64_t n);
void F16ToFloat(const void* src, float* dst, int64_t n);
void F16FromFloat(const float* src, void* dst, int64_t n);
void Bf16ToFloat(const void* src, float* dst, int64_t n);
void Bf16FromFloat(const float* src, void* dst, int64_t n);
void Q8_0ToFloat(const void* src, float* dst, int64_t n);
void Q8_0FromFloat(const float* src, void* dst, int64_t n);
void Q4_0ToFloat(const void* src, float* dst, int64_t n);
void Q4_0FromFloat(const float* src, void* dst, int64_t n);
void Q8_KToFloat(const void* src, float* dst, int64_t n);
void Q8_KFromFloat(const float* src, void* dst, int64_t n);
void Q4_KToFloat(const void* src, float* dst, int64_t n);
void Q4_KFromFloat(const float* src, void* dst, int64_t n);
void Q6_KToFloat(const void* src, float* dst, int64_t n);
void Q6_KFromFloat(const float* src, void* dst, int64_t n);

float DotF32(int64_t n, const void* x, const void* y);
float DotF16(int64_t n, const void* x, const void* y);
float DotBf16(int64_t n, const void* x, const void* y);
float DotQ8_0(int64_t n, const void* x, const void* y);
float DotQ4_0(int64_t n, const void* x, const void* y);
float DotQ4_K(int64_t n, const void* x, const void* y);
float DotQ6_K(int64_t n, const void* x, const void* y);

float DotF32Rows(int64_t n, const float* x, const float* y);
void VecMadF32(int64_t n, float a, const float* x, float* y);

// Reference tiles for the weight types: each pair through this table's vec_dot.
TileKernel GemmTile(GgmlType type);
TileKernel GemvTile(GgmlType type);

}  // namespace valet::scalar
