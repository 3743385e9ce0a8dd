// Internal: the row-group kernels (packed_blocks.h) of each table, looked up
// by weight type and token count; fn == nullptr for types without a row-group
// layout. Only kernel_table.cpp installs them.
#pragma once

#include "kernels/kernel_table.h"

namespace valet {

namespace scalar {
// The reference: per output, per block, isum exact and acc = fma(dw * dx, isum, acc).
TileKernel PackedTile(GgmlType type, int cols);
}  // namespace scalar

namespace avx2 {
// The same float operations as the reference, 8 rows in the lanes of a
// vector; cols 1, 4 or 8 (Q4_0 and Q8_0 take 4 tokens by two groups for both).
TileKernel PackedTile(GgmlType type, int cols);
// For the types whose prefill tile takes two groups: the one-group tile.
TileKernel PackedTileOneGroup(GgmlType type);
}  // namespace avx2

namespace avx512vnni {
// Two row groups per 512-bit vector by 8 tokens per call, for every row-group
// type, and the same for one group; only callable when the CPU has AVX-512
// F/BW/VL/VNNI. Decode keeps the AVX2 kernels.
TileKernel PackedGemm(GgmlType type);
TileKernel PackedGemmOneGroup(GgmlType type);
}  // namespace avx512vnni

namespace neon {
// The same float operations as the reference, rows 0..3 and 4..7 of a group
// in two vectors (packed_neon.cpp); fn == nullptr off AArch64.
TileKernel PackedTile(GgmlType type, int cols);  // plain NEON (SMULL)
// SDOT; only callable when neon::CpuHasDotprod().
TileKernel DotprodPackedTile(GgmlType type, int cols);
// SMMLA prefill (2 rows x 2 tokens per instruction, 4 tokens per call) for the
// 32-element types, fn == nullptr for the others; only callable when
// neon::CpuHasI8mm().
TileKernel I8mmPackedGemm(GgmlType type);
}  // namespace neon

}  // namespace valet
