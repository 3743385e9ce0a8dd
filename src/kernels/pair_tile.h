// Tile kernels built from a per-pair vec_dot: every (weight row, token) pair
// of the tile goes through Dot, so a tile's results equal vec_dot's by
// construction. The scalar reference tiles and SIMD tables without dedicated
// tile code (NEON) use them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace valet {

template <vec_dot_fn Dot, int R, int C>
void PairTileLoop(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out, int64_t ldo) {
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  for (int j = 0; j < C; ++j) {
    for (int i = 0; i < R; ++i) out[j * ldo + i] = Dot(n, xb + i * ldx, yb + j * ldy);
  }
}

// The gemv tile (cols == 1) takes GemvRows rows; the gemm tile is 2 x 2.
template <vec_dot_fn Dot, int GemvRows>
TileKernel PairTile(int cols) {
  if (cols == 1) return {PairTileLoop<Dot, GemvRows, 1>, GemvRows, 1};
  return {PairTileLoop<Dot, 2, 2>, 2, 2};
}

}  // namespace valet
