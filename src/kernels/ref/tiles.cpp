// Reference tile kernels: every pair of a tile through the scalar vec_dot, so a
// tile result is by construction the reference result for that pair. They
// exist to give the SIMD tiles something to be tested against through the
// same interface, and to exercise MatMul's tiling with the scalar table.
#include "kernels/pair_tile.h"
#include "kernels/ref/scalar.h"

namespace valet::scalar {
namespace {

TileKernel TileFor(GgmlType type, int cols) {
  switch (type) {
    case GgmlType::kF32:
      return PairTile<DotF32, 2>(cols);
    case GgmlType::kF16:
      return PairTile<DotF16, 2>(cols);
    case GgmlType::kBF16:
      return PairTile<DotBf16, 2>(cols);
    case GgmlType::kQ8_0:
      return PairTile<DotQ8_0, 2>(cols);
    case GgmlType::kQ4_0:
      return PairTile<DotQ4_0, 2>(cols);
    case GgmlType::kQ4_K:
      return PairTile<DotQ4_K, 2>(cols);
    case GgmlType::kQ6_K:
      return PairTile<DotQ6_K, 2>(cols);
    case GgmlType::kQ4_1:
      return PairTile<DotQ4_1, 2>(cols);
    case GgmlType::kQ5_0:
      return PairTile<DotQ5_0, 2>(cols);
    case GgmlType::kQ5_1:
      return PairTile<DotQ5_1, 2>(cols);
    case GgmlType::kIQ4_NL:
      return PairTile<DotIQ4_NL, 2>(cols);
    case GgmlType::kQ2_K:
      return PairTile<DotQ2_K, 2>(cols);
    case GgmlType::kQ3_K:
      return PairTile<DotQ3_K, 2>(cols);
    case GgmlType::kQ5_K:
      return PairTile<DotQ5_K, 2>(cols);
    case GgmlType::kIQ4_XS:
      return PairTile<DotIQ4_XS, 2>(cols);
    default:
      return {};
  }
}

}  // namespace

TileKernel GemmTile(GgmlType type) { return TileFor(type, 2); }
TileKernel GemvTile(GgmlType type) { return TileFor(type, 1); }

}  // namespace valet::scalar
