// Internal: the scale fitting shared by valet's weight quantizers (the K-quants
// and IQ4). A super-block is `groups` groups of `len` elements; each group gets
// its own scale (and, for the affine formats, min), and those are quantized
// against one super-block scale as the formats store them. The quants are then
// re-chosen against the scales as actually stored (fp16 super-block scales).
#pragma once

#include <cstdint>

namespace valet::fit {

// x ~= d * ls[g] * q - dmin * lm[g], q in [0, nmax], ls/lm in [0, scale_max].
struct AffineBlock {
  float d = 0.0f;
  float dmin = 0.0f;
  uint16_t d16 = 0;  // d and dmin as stored
  uint16_t dmin16 = 0;
  uint8_t ls[16] = {};
  uint8_t lm[16] = {};
  uint8_t q[256] = {};
};
void QuantizeAffine(const float* x, int groups, int len, int nmax, int scale_max, AffineBlock* out);

// x ~= d * ls[g] * q, q in [-nmax, nmax - 1], ls in [-scale_nmax, scale_nmax - 1].
struct SymmetricBlock {
  uint16_t d16 = 0;
  int8_t ls[16] = {};
  int8_t q[256] = {};
};
void QuantizeSymmetric(const float* x, int groups, int len, int nmax, int scale_nmax,
                       SymmetricBlock* out);

// The best scale for `n` values on the IQ4_NL levels (least squared error over
// a few candidates), and the level index nearest to v / scale.
float FitIQ4Scale(const float* x, int n);
int NearestIQ4Index(float v);

}  // namespace valet::fit
