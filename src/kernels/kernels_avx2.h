// Internal: AVX2+FMA+F16C variants. Each function is compiled with a per-function
// target attribute, so calling one on a CPU without AVX2 is undefined: only the
// dispatch in kernel_table.cpp calls them, after checking CPUID.
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"

namespace valet::avx2 {

// True when this build contains the AVX2 variants (x86-64 with GCC/Clang).
bool Compiled();

void F16ToFloat(const void* src, float* dst, int64_t n);
void F16FromFloat(const float* src, void* dst, int64_t n);
void Q8_0FromFloat(const float* src, void* dst, int64_t n);
void Q8_1FromFloat(const float* src, void* dst, int64_t n);
void Q8_KFromFloat(const float* src, void* dst, int64_t n);

float DotQ8_0(int64_t n, const void* x, const void* y);
float DotQ4_0(int64_t n, const void* x, const void* y);
// The weight types whose vec_dot is the table's 1x1 tile (tiles_x86_k.h), so
// that MatMul's edge pairs and its tiles compute each output alike.
float DotF32(int64_t n, const void* x, const void* y);
float DotF16(int64_t n, const void* x, const void* y);
float DotBf16(int64_t n, const void* x, const void* y);
float DotQ4_1(int64_t n, const void* x, const void* y);
float DotQ5_0(int64_t n, const void* x, const void* y);
float DotQ5_1(int64_t n, const void* x, const void* y);
float DotIQ4_NL(int64_t n, const void* x, const void* y);
float DotQ2_K(int64_t n, const void* x, const void* y);
float DotQ3_K(int64_t n, const void* x, const void* y);
float DotQ4_K(int64_t n, const void* x, const void* y);
float DotQ5_K(int64_t n, const void* x, const void* y);
float DotQ6_K(int64_t n, const void* x, const void* y);
float DotIQ4_XS(int64_t n, const void* x, const void* y);

float DotF32Rows(int64_t n, const float* x, const float* y);
// Fused multiply-add per element, so it differs from the scalar reference by rounding.
void VecMadF32(int64_t n, float a, const float* x, float* y);
// The same operations on f16 rows, widened as they are loaded: equal to the
// f32 functions on the widened row, bit for bit.
float DotF16F32Rows(int64_t n, const uint16_t* x, const float* y);
void VecMadF16(int64_t n, float a, const uint16_t* x, float* y);

// Tile kernels (tiles_avx2.cpp); fn == nullptr for types without one.
TileKernel GemmTile(GgmlType type);
TileKernel GemvTile(GgmlType type);

}  // namespace valet::avx2
