#include "kernels/quant_fit.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/rounding.h"

namespace valet::fit {
namespace {

// One group's x ~= scale * q - min with q in [0, nmax] and min >= 0.
struct AffineFit {
  float scale;
  float min;
};

int AffineQuant(float v, AffineFit f, int nmax) {
  return f.scale > 0.0f ? std::clamp(NearestInt((v + f.min) / f.scale), 0, nmax) : 0;
}

float AffineError(const float* x, int n, int nmax, AffineFit f) {
  float err = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float e = f.scale * static_cast<float>(AffineQuant(x[j], f, nmax)) - f.min - x[j];
    err += e * e;
  }
  return err;
}

// One least-squares step: with the quants fixed, the best (scale, min) solve
// 2x2 normal equations; min is clamped to >= 0 as the formats require.
AffineFit RefitAffine(const float* x, int n, int nmax, AffineFit f) {
  double sq = 0, sqq = 0, sx = 0, sxq = 0;
  for (int j = 0; j < n; ++j) {
    const int q = AffineQuant(x[j], f, nmax);
    sq += q;
    sqq += static_cast<double>(q) * q;
    sx += x[j];
    sxq += static_cast<double>(x[j]) * q;
  }
  const double det = n * sqq - sq * sq;
  if (det <= 0) return f;
  double scale = (n * sxq - sq * sx) / det;
  double offset = (sqq * sx - sq * sxq) / det;  // x ~= scale*q + offset
  if (offset > 0) {
    offset = 0;
    scale = sqq > 0 ? sxq / sqq : 0;
  }
  if (scale <= 0) return f;
  return {static_cast<float>(scale), static_cast<float>(-offset)};
}

AffineFit FitAffine(const float* x, int n, int nmax) {
  float lo = 0.0f, hi = 0.0f;
  for (int j = 0; j < n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  AffineFit best{(hi - lo) / static_cast<float>(nmax), -lo};
  if (best.scale == 0.0f) return best;
  float best_err = AffineError(x, n, nmax, best);
  // Few levels (Q2_K has 4) make the first grid matter: refit from a range of
  // grids slightly finer and coarser than the extremes call for.
  for (int k = -4; k <= 8; ++k) {
    const AffineFit start{(hi - lo) / (static_cast<float>(nmax) + 0.1f * static_cast<float>(k)), -lo};
    const AffineFit cand = RefitAffine(x, n, nmax, start);
    const float err = AffineError(x, n, nmax, cand);
    if (err < best_err) {
      best_err = err;
      best = cand;
    }
  }
  AffineFit cur = best;
  for (int iter = 0; iter < 4; ++iter) {
    cur = RefitAffine(x, n, nmax, cur);
    const float err = AffineError(x, n, nmax, cur);
    if (err < best_err) {
      best_err = err;
      best = cur;
    }
  }
  return best;
}

// Best symmetric scale for q in [-nmax, nmax - 1]: try a few divisors around
// the extremes and keep the least squared error.
float FitSymmetricScale(const float* x, int n, int nmax) {
  const float max = SignedAbsMax(x, n);
  if (max == 0.0f) return 0.0f;
  const float fn = static_cast<float>(nmax);
  float best_scale = 0.0f, best_err = INFINITY;
  for (int k = 0; k < 9; ++k) {
    const float divisor = k < 5 ? -fn + 0.5f * k : (fn - 1.0f) - 0.5f * (k - 5);
    const float scale = max / divisor;
    float err = 0.0f;
    for (int j = 0; j < n; ++j) {
      const int q = std::clamp(NearestInt(x[j] / scale), -nmax, nmax - 1);
      const float e = scale * static_cast<float>(q) - x[j];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_scale = scale;
    }
  }
  return best_scale;
}

float IQ4Error(const float* x, int n, float scale) {
  float err = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float e = scale * kIQ4NLValues[NearestIQ4Index(x[j] / scale)] - x[j];
    err += e * e;
  }
  return err;
}

}  // namespace

void QuantizeAffine(const float* x, int groups, int len, int nmax, int scale_max,
                    AffineBlock* out) {
  AffineFit fits[16];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int g = 0; g < groups; ++g) {
    fits[g] = FitAffine(x + g * len, len, nmax);
    max_scale = std::max(max_scale, fits[g].scale);
    max_min = std::max(max_min, fits[g].min);
  }
  const float fmax = static_cast<float>(scale_max);
  out->d = max_scale / fmax;
  out->dmin = max_min / fmax;
  for (int g = 0; g < groups; ++g) {
    out->ls[g] = static_cast<uint8_t>(
        out->d > 0 ? std::clamp(NearestInt(fits[g].scale / out->d), 0, scale_max) : 0);
    out->lm[g] = static_cast<uint8_t>(
        out->dmin > 0 ? std::clamp(NearestInt(fits[g].min / out->dmin), 0, scale_max) : 0);
  }
  out->d16 = Fp32ToFp16(out->d);
  out->dmin16 = Fp32ToFp16(out->dmin);
  const float d16 = Fp16ToFp32(out->d16), dmin16 = Fp16ToFp32(out->dmin16);
  for (int g = 0; g < groups; ++g) {
    const AffineFit stored{d16 * out->ls[g], dmin16 * out->lm[g]};
    for (int k = 0; k < len; ++k) {
      out->q[g * len + k] = static_cast<uint8_t>(AffineQuant(x[g * len + k], stored, nmax));
    }
  }
}

void QuantizeSymmetric(const float* x, int groups, int len, int nmax, int scale_nmax,
                       SymmetricBlock* out) {
  float scales[16];
  for (int g = 0; g < groups; ++g) scales[g] = FitSymmetricScale(x + g * len, len, nmax);
  const float d = SignedAbsMax(scales, groups) / -static_cast<float>(scale_nmax);
  out->d16 = Fp32ToFp16(d);
  const float d16 = Fp16ToFp32(out->d16);
  for (int g = 0; g < groups; ++g) {
    const int ls =
        d != 0.0f ? std::clamp(NearestInt(scales[g] / d), -scale_nmax, scale_nmax - 1) : 0;
    out->ls[g] = static_cast<int8_t>(ls);
    const float sc = d16 * static_cast<float>(ls);
    for (int j = 0; j < len; ++j) {
      const int v = sc != 0.0f ? std::clamp(NearestInt(x[g * len + j] / sc), -nmax, nmax - 1) : 0;
      out->q[g * len + j] = static_cast<int8_t>(v);
    }
  }
}

int NearestIQ4Index(float v) {
  const int8_t* end = kIQ4NLValues + 16;
  const int8_t* hi =
      std::lower_bound(kIQ4NLValues, end, v, [](int8_t a, float b) { return a < b; });
  if (hi == kIQ4NLValues) return 0;
  if (hi == end) return 15;
  const int i = static_cast<int>(hi - kIQ4NLValues);
  return v - kIQ4NLValues[i - 1] <= kIQ4NLValues[i] - v ? i - 1 : i;
}

// Candidates: the extreme on either end of the level table, stretched a little,
// then one least-squares refit of the best.
float FitIQ4Scale(const float* x, int n) {
  const float max = SignedAbsMax(x, n);
  if (max == 0.0f) return 0.0f;
  float best = max / kIQ4NLValues[0];
  float best_err = IQ4Error(x, n, best);
  for (int k = -4; k <= 4; ++k) {
    for (float level :
         {static_cast<float>(kIQ4NLValues[0]), static_cast<float>(kIQ4NLValues[15])}) {
      const float scale = max / (level + 2.0f * static_cast<float>(k) * (level < 0 ? -1.0f : 1.0f));
      const float err = IQ4Error(x, n, scale);
      if (err < best_err) {
        best_err = err;
        best = scale;
      }
    }
  }
  double sxv = 0, svv = 0;
  for (int j = 0; j < n; ++j) {
    const double v = kIQ4NLValues[NearestIQ4Index(x[j] / best)];
    sxv += x[j] * v;
    svv += v * v;
  }
  if (svv > 0) {
    const auto refit = static_cast<float>(sxv / svv);
    if (refit != 0.0f && IQ4Error(x, n, refit) < best_err) best = refit;
  }
  return best;
}

}  // namespace valet::fit
