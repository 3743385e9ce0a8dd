// Internal: AVX2 kernels whose int8 dot products use AVX-VNNI (vpdpbusd /
// vpdpwssd, VEX-encoded, as on Alder Lake and Sapphire Rapids). They compute
// the same integers as the AVX2 forms, so every result equals the AVX2
// table's bit for bit; they only need fewer instructions. Called only by the
// dispatch in kernel_table.cpp after checking CPUID.
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"

namespace valet::vnni {

// True when this build contains the AVX-VNNI variants.
bool Compiled();

float DotQ8_0(int64_t n, const void* x, const void* y);
float DotQ4_0(int64_t n, const void* x, const void* y);
// The weight types whose vec_dot is the table's 1x1 tile (tiles_x86_k.h).
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

TileKernel GemmTile(GgmlType type);
TileKernel GemvTile(GgmlType type);

}  // namespace valet::vnni
