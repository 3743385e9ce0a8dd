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
void Q8_0SFromFloat(const float* src, void* dst, int64_t n);  // KernelTable::q8_0s_from_float

float DotQ8_0(int64_t n, const void* x, const void* y);
float DotQ4_0(int64_t n, const void* x, const void* y);
// The weight types whose vec_dot is the table's 1x1 tile (tiles_k.h), so
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

// attention_avx2.cpp: bit-exact with scalar::Attention (head_dim % 8 != 0 runs it).
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work);
// activation_avx2.cpp: bit-exact with scalar::SwiGlu.
void SwiGlu(int64_t n, float* gate, const float* up);

// Tile kernels (tiles_avx2.cpp); fn == nullptr for types without one.
TileKernel GemmTile(GgmlType type);
TileKernel GemvTile(GgmlType type);

}  // namespace valet::avx2
