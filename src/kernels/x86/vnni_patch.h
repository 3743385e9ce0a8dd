// Internal: the part of a VNNI table that differs from the AVX2 one, written
// once for both encodings. Included by tiles_avxvnni.cpp and
// tiles_avx512vnni.cpp after tiles_k.h, under the same macros.
#pragma once

#include "kernels/x86/tiles_k.h"

VALET_TARGET_BEGIN(VALET_TILE_TARGET)
namespace valet::VALET_TILE_NS {

float DotQ8_0(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmQ0<tiles::Q8_0Weights, 1, 1>>(n, x, y);
}
float DotQ4_0(int64_t n, const void* x, const void* y) {
  return tiles::DotVia1x1<tiles::GemmQ0<tiles::Q4_0Weights, 1, 1>>(n, x, y);
}

void Patch(KernelTable& t) {
  const struct {
    GgmlType type;
    vec_dot_fn dot;
  } dots[] = {
      {GgmlType::kF32, DotF32},     {GgmlType::kF16, DotF16},       {GgmlType::kBF16, DotBf16},
      {GgmlType::kQ8_0, DotQ8_0},   {GgmlType::kQ4_0, DotQ4_0},     {GgmlType::kQ4_1, DotQ4_1},
      {GgmlType::kQ5_0, DotQ5_0},   {GgmlType::kQ5_1, DotQ5_1},     {GgmlType::kIQ4_NL, DotIQ4_NL},
      {GgmlType::kQ2_K, DotQ2_K},   {GgmlType::kQ3_K, DotQ3_K},     {GgmlType::kQ4_K, DotQ4_K},
      {GgmlType::kQ5_K, DotQ5_K},   {GgmlType::kQ6_K, DotQ6_K},     {GgmlType::kIQ4_XS, DotIQ4_XS},
  };
  for (const auto& d : dots) {
    TypeKernels& k = t.types[static_cast<uint32_t>(d.type)];
    k.vec_dot = d.dot;
    k.gemm = GemmTile(d.type);
    k.gemv = GemvTile(d.type);
  }
}

}  // namespace valet::VALET_TILE_NS
VALET_TARGET_END()
