// Reference tile kernels: every pair of a tile through the scalar vec_dot, so a
// tile result is by construction the reference result for that pair. They
// exist to give the SIMD tiles something to be tested against through the
// same interface, and to exercise MatMul's tiling with the scalar table.
#include "kernels/kernels_scalar.h"

namespace valet::scalar {
namespace {

template <vec_dot_fn Dot, int R, int C>
void TileLoop(int64_t n, const void* x, size_t ldx, const void* y, size_t ldy, float* out,
              int64_t ldo) {
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  for (int j = 0; j < C; ++j) {
    for (int i = 0; i < R; ++i) out[j * ldo + i] = Dot(n, xb + i * ldx, yb + j * ldy);
  }
}

template <vec_dot_fn Dot>
TileKernel Tile(int cols) {
  if (cols == 1) return {TileLoop<Dot, 2, 1>, 2, 1};
  return {TileLoop<Dot, 2, 2>, 2, 2};
}

TileKernel TileFor(GgmlType type, int cols) {
  switch (type) {
    case GgmlType::kF32:
      return Tile<DotF32>(cols);
    case GgmlType::kF16:
      return Tile<DotF16>(cols);
    case GgmlType::kBF16:
      return Tile<DotBf16>(cols);
    case GgmlType::kQ8_0:
      return Tile<DotQ8_0>(cols);
    case GgmlType::kQ4_0:
      return Tile<DotQ4_0>(cols);
    case GgmlType::kQ4_K:
      return Tile<DotQ4_K>(cols);
    case GgmlType::kQ6_K:
      return Tile<DotQ6_K>(cols);
    default:
      return {};
  }
}

}  // namespace

TileKernel GemmTile(GgmlType type) { return TileFor(type, 2); }
TileKernel GemvTile(GgmlType type) { return TileFor(type, 1); }

float DotF32Rows(int64_t n, const float* x, const float* y) { return DotF32(n, x, y); }

void VecMadF32(int64_t n, float a, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace valet::scalar
