// Internal: the portable reference kernels, one function per type and role.
// Exposed to the SIMD variants (which fall back to some of them) and to tests
// through the kernel table; the engine goes through ActiveKernels().
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"

namespace valet::scalar {

// quantize.cpp
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
// quantize_legacy.cpp
void Q4_1ToFloat(const void* src, float* dst, int64_t n);
void Q4_1FromFloat(const float* src, void* dst, int64_t n);
void Q5_0ToFloat(const void* src, float* dst, int64_t n);
void Q5_0FromFloat(const float* src, void* dst, int64_t n);
void Q5_1ToFloat(const void* src, float* dst, int64_t n);
void Q5_1FromFloat(const float* src, void* dst, int64_t n);
void Q8_1ToFloat(const void* src, float* dst, int64_t n);
void Q8_1FromFloat(const float* src, void* dst, int64_t n);
void IQ4_NLToFloat(const void* src, float* dst, int64_t n);
void IQ4_NLFromFloat(const float* src, void* dst, int64_t n);
// quantize_k.cpp
void Q4_KToFloat(const void* src, float* dst, int64_t n);
void Q4_KFromFloat(const float* src, void* dst, int64_t n);
void Q6_KToFloat(const void* src, float* dst, int64_t n);
void Q6_KFromFloat(const float* src, void* dst, int64_t n);
void Q2_KToFloat(const void* src, float* dst, int64_t n);
void Q2_KFromFloat(const float* src, void* dst, int64_t n);
void Q3_KToFloat(const void* src, float* dst, int64_t n);
void Q3_KFromFloat(const float* src, void* dst, int64_t n);
void Q5_KToFloat(const void* src, float* dst, int64_t n);
void Q5_KFromFloat(const float* src, void* dst, int64_t n);
void IQ4_XSToFloat(const void* src, float* dst, int64_t n);
void IQ4_XSFromFloat(const float* src, void* dst, int64_t n);

// vec_dot.cpp
float DotF32(int64_t n, const void* x, const void* y);
float DotF16(int64_t n, const void* x, const void* y);
float DotBf16(int64_t n, const void* x, const void* y);
float DotQ8_0(int64_t n, const void* x, const void* y);
float DotQ4_0(int64_t n, const void* x, const void* y);
float DotQ4_K(int64_t n, const void* x, const void* y);
float DotQ6_K(int64_t n, const void* x, const void* y);
float DotQ4_1(int64_t n, const void* x, const void* y);
float DotQ5_0(int64_t n, const void* x, const void* y);
float DotQ5_1(int64_t n, const void* x, const void* y);
float DotIQ4_NL(int64_t n, const void* x, const void* y);
float DotQ2_K(int64_t n, const void* x, const void* y);
float DotQ3_K(int64_t n, const void* x, const void* y);
float DotQ5_K(int64_t n, const void* x, const void* y);
float DotIQ4_XS(int64_t n, const void* x, const void* y);

// attention.cpp: the reference of kernels/attention.h.
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work);
// activation.cpp
void SwiGlu(int64_t n, float* gate, const float* up);

// Reference tiles for the weight types: each pair through this table's vec_dot.
TileKernel GemmTile(GgmlType type);
TileKernel GemvTile(GgmlType type);

}  // namespace valet::scalar
