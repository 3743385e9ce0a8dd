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
// The same float operations as the reference, 8 rows in the lanes of a vector.
TileKernel PackedTile(GgmlType type, int cols);
}  // namespace avx2

}  // namespace valet
