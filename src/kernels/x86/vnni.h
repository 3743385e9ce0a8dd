// Internal: the x86 tile kernels with VNNI int8 dot products (vpdpbusd /
// vpdpwssd) in two encodings: AVX-VNNI (VEX, as on Alder Lake and Sapphire
// Rapids) and AVX-512 VNNI with VL (EVEX, as on Ice Lake, Sapphire Rapids and
// Zen 4), both on 256-bit vectors. They compute the same integers as the AVX2
// forms, so every result equals the AVX2 table's bit for bit; they only need
// fewer instructions. Called only by the dispatch in kernel_table.cpp after
// checking CPUID.
#pragma once

#include "kernels/kernel_table.h"

namespace valet::vnni {
// Replaces t's vec_dots and tiles (t starts as the AVX2 table) with the VNNI ones.
void Patch(KernelTable& t);
}  // namespace valet::vnni

namespace valet::avx512vnni {
void Patch(KernelTable& t);
// attention_avx512.cpp: bit-exact with scalar::Attention.
void Attention(const AttentionRows& rows, const AttentionKeys& keys, float* work);
}  // namespace valet::avx512vnni

// BF16 weights with AVX512_BF16 dot products (vec_dot_avx512_bf16.cpp).
namespace valet::avx512bf16 {
// Replaces t's BF16 vec_dot and tiles.
void Patch(KernelTable& t);
}  // namespace valet::avx512bf16
