// The tile loop of the SIMD fused attention variants (kernels/attention.h),
// written once over a variant's steps. Steps provides, as static members:
//   Vec, kScoreVecs   one row's scores for a tile are kScoreVecs Vecs
//   kPass             query rows per pass (2 or 4)
//   LoadTile, Scores<R>, Softmax, AllValues<R>, Scale
// Rows go kPass at a time sharing the key loads, the rest in a pair and alone;
// a row's result is the same either way.
//
// GCC compiles a template for the target of its definition, not of its
// caller (simd_target.h): these are forced inline so that they become part of
// the variant's entry point, compiled for its target, where its steps inline.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/attention.h"

namespace valet::attention_tiles {

template <class Steps, int R>
[[gnu::always_inline]] inline void Pass(const AttentionRows& rows, const int* r, int32_t t0, const float* kt,
                                        const float* v, int32_t hd, float* m, float* l, float* p) {
  constexpr int32_t kT = kAttnTileKeys;
  const float* q[R];
  float* out[R];
  const float* pr[R];
  int32_t valid[R];
  float alpha[R];
  typename Steps::Vec s[R][Steps::kScoreVecs];
  for (int i = 0; i < R; ++i) {
    q[i] = rows.q[r[i]];
    out[i] = rows.out[r[i]];
    pr[i] = p + i * kT;
    valid[i] = std::min(kT, rows.n_keys[r[i]] - t0);
  }
  Steps::template Scores<R>(q, kt, hd, s);
  for (int i = 0; i < R; ++i) {
    alpha[i] = Steps::Softmax(s[i], valid[i], rows.softcap, &m[r[i]], &l[r[i]], p + i * kT);
  }
  Steps::template AllValues<R>(pr, v, hd, valid, alpha, out);
}

template <class Steps>
[[gnu::always_inline]] inline void TileLoop(const AttentionRows& rows, const AttentionKeys& keys, float* work) {
  constexpr int kPass = Steps::kPass;
  static_assert(kPass == 2 || kPass == 4);
  constexpr int32_t kT = kAttnTileKeys;
  const int32_t hd = keys.head_dim;
  float* kt = work;                              // [head_dim][kAttnTileKeys]
  float* v = kt + static_cast<size_t>(hd) * kT;  // [kAttnTileKeys][head_dim]
  float* p = v + static_cast<size_t>(hd) * kT;   // [kPass][kAttnTileKeys]
  float m[kAttnMaxRows], l[kAttnMaxRows];
  const int32_t max_keys = BeginAttentionRows(rows, hd, m, l);
  for (int32_t t0 = 0; t0 < max_keys; t0 += kT) {
    Steps::LoadTile(keys, t0, std::min(kT, max_keys - t0), kt, v);
    int active[kAttnMaxRows], n_active = 0;
    for (int r = 0; r < rows.n_rows; ++r)
      if (rows.n_keys[r] > t0) active[n_active++] = r;
    int a = 0;
    for (; a + kPass <= n_active; a += kPass) Pass<Steps, kPass>(rows, active + a, t0, kt, v, hd, m, l, p);
    if (kPass > 2 && a + 2 <= n_active) {
      Pass<Steps, 2>(rows, active + a, t0, kt, v, hd, m, l, p);
      a += 2;
    }
    if (a < n_active) Pass<Steps, 1>(rows, active + a, t0, kt, v, hd, m, l, p);
  }
  for (int r = 0; r < rows.n_rows; ++r) Steps::Scale(rows.out[r], hd, 1.0f / l[r]);
}

}  // namespace valet::attention_tiles
