// Quantizers: block layouts, agreement with independently written formulas
// (Q8_0, Q4_0, Q8_K), error bounds of dequantize(quantize(x)) for every
// weight type, and bit-exact agreement of the SIMD activation quantizers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernel_test_util.h"
#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_blocks.h"
#include "kernels/quant_blocks_k.h"

namespace valet {
namespace {

using testing::Decode;
using testing::Encode;
using testing::RandomRow;

TEST(QuantBlocks, SizesMatchGguf) {
  EXPECT_EQ(sizeof(BlockQ8_0), GetGgmlTypeTraits(GgmlType::kQ8_0).type_size);
  EXPECT_EQ(sizeof(BlockQ4_0), GetGgmlTypeTraits(GgmlType::kQ4_0).type_size);
  EXPECT_EQ(sizeof(BlockQ4_K), GetGgmlTypeTraits(GgmlType::kQ4_K).type_size);
  EXPECT_EQ(sizeof(BlockQ6_K), GetGgmlTypeTraits(GgmlType::kQ6_K).type_size);
  EXPECT_EQ(sizeof(BlockQ8_K), GetGgmlTypeTraits(GgmlType::kQ8_K).type_size);
  EXPECT_EQ(sizeof(BlockQ4_1), GetGgmlTypeTraits(GgmlType::kQ4_1).type_size);
  EXPECT_EQ(sizeof(BlockQ5_0), GetGgmlTypeTraits(GgmlType::kQ5_0).type_size);
  EXPECT_EQ(sizeof(BlockQ5_1), GetGgmlTypeTraits(GgmlType::kQ5_1).type_size);
  EXPECT_EQ(sizeof(BlockQ8_1), GetGgmlTypeTraits(GgmlType::kQ8_1).type_size);
  EXPECT_EQ(sizeof(BlockIQ4_NL), GetGgmlTypeTraits(GgmlType::kIQ4_NL).type_size);
  EXPECT_EQ(sizeof(BlockQ2_K), GetGgmlTypeTraits(GgmlType::kQ2_K).type_size);
  EXPECT_EQ(sizeof(BlockQ3_K), GetGgmlTypeTraits(GgmlType::kQ3_K).type_size);
  EXPECT_EQ(sizeof(BlockQ5_K), GetGgmlTypeTraits(GgmlType::kQ5_K).type_size);
  EXPECT_EQ(sizeof(BlockIQ4_XS), GetGgmlTypeTraits(GgmlType::kIQ4_XS).type_size);
  EXPECT_EQ(offsetof(BlockQ3_K, d), 108u);
  EXPECT_EQ(offsetof(BlockQ5_K, qs), 48u);
  EXPECT_EQ(offsetof(BlockIQ4_XS, qs), 8u);
  EXPECT_EQ(offsetof(BlockQ6_K, d), 208u);
  EXPECT_EQ(offsetof(BlockQ4_K, qs), 16u);
}

float FirstLargestMagnitude(const float* x, int n) {
  int best = 0;
  for (int j = 1; j < n; ++j) {
    if (std::fabs(x[j]) > std::fabs(x[best])) best = j;
  }
  return x[best];
}

TEST(Quantize, Q8_0MatchesFormula) {
  const auto x = RandomRow(32 * 40, 1);
  const auto data = Encode(ScalarKernels(), GgmlType::kQ8_0, x);
  const auto* blocks = reinterpret_cast<const BlockQ8_0*>(data.data());
  for (int b = 0; b < 40; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float d = amax / 127.0f;
    ASSERT_EQ(blocks[b].d, Fp32ToFp16(d));
    for (int j = 0; j < 32; ++j) {
      // llama.cpp's x86 rule: multiply by 127/amax, round half to even.
      ASSERT_EQ(blocks[b].qs[j], static_cast<int>(std::nearbyint(x[b * 32 + j] * (127.0f / amax)))) << b << " " << j;
    }
  }
}

// llama.cpp's x86 Q8_1: Q8_0's quants, and s from the unrounded d = amax/127.
TEST(Quantize, Q8_1IsQ8_0PlusScaledSum) {
  const auto x = RandomRow(32 * 40, 4);
  const auto q80 = Encode(ScalarKernels(), GgmlType::kQ8_0, x);
  const auto q81 = Encode(ScalarKernels(), GgmlType::kQ8_1, x);
  const auto* a = reinterpret_cast<const BlockQ8_0*>(q80.data());
  const auto* b = reinterpret_cast<const BlockQ8_1*>(q81.data());
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(b[i].d, a[i].d);
    ASSERT_EQ(0, std::memcmp(b[i].qs, a[i].qs, sizeof(a[i].qs)));
    float amax = 0;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      amax = std::max(amax, std::fabs(x[i * 32 + j]));
      sum += a[i].qs[j];
    }
    EXPECT_EQ(b[i].s, Fp32ToFp16(amax / 127.0f * static_cast<float>(sum))) << i;
  }
}

TEST(Quantize, Q4_0MatchesFormula) {
  const auto x = RandomRow(32 * 40, 2);
  const auto y = Decode(ScalarKernels(), GgmlType::kQ4_0, Encode(ScalarKernels(), GgmlType::kQ4_0, x), 32 * 40);
  for (int b = 0; b < 40; ++b) {
    const float d = FirstLargestMagnitude(&x[b * 32], 32) / -8.0f;
    const float d16 = Fp16ToFp32(Fp32ToFp16(d));
    for (int j = 0; j < 32; ++j) {
      const int q = std::clamp(static_cast<int>(std::trunc(x[b * 32 + j] / d + 8.5f)), 0, 15);
      ASSERT_EQ(y[b * 32 + j], static_cast<float>(q - 8) * d16) << b << " " << j;
    }
  }
}

TEST(Quantize, Q8_KMatchesFormula) {
  auto x = RandomRow(256 * 6, 3);
  std::fill(x.begin() + 256 * 2, x.begin() + 256 * 3, 0.0f);  // an all-zero block
  const auto data = Encode(ScalarKernels(), GgmlType::kQ8_K, x);
  const auto* blocks = reinterpret_cast<const BlockQ8_K*>(data.data());
  for (int b = 0; b < 6; ++b) {
    const float max = FirstLargestMagnitude(&x[b * 256], 256);
    const float iscale = max != 0 ? -127.0f / max : 0.0f;
    EXPECT_EQ(blocks[b].d, max != 0 ? 1.0f / iscale : 0.0f);
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) {
        const int i = g * 16 + j;
        const int q = std::min(127, static_cast<int>(std::nearbyint(iscale * x[b * 256 + i])));
        ASSERT_EQ(blocks[b].qs[i], q) << b << " " << i;
        sum += q;
      }
      EXPECT_EQ(blocks[b].bsums[g], sum);
    }
  }
}

struct ErrorStats {
  double max_rel_block;  // max over blocks of max|err| / max|x| in the block
  double rms_rel;        // rms(err) / rms(x) over the row
};

ErrorStats RoundTripError(GgmlType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  const auto y = Decode(ScalarKernels(), type, Encode(ScalarKernels(), type, x), n);
  const int64_t bs = std::max<int64_t>(testing::BlockSize(type), 32);
  ErrorStats s{0, 0};
  double se = 0, sx = 0;
  for (int64_t b = 0; b < n / bs; ++b) {
    double emax = 0, xmax = 0;
    for (int64_t j = b * bs; j < (b + 1) * bs; ++j) {
      emax = std::max(emax, std::fabs(static_cast<double>(x[j]) - y[j]));
      xmax = std::max(xmax, std::fabs(static_cast<double>(x[j])));
      se += (static_cast<double>(x[j]) - y[j]) * (static_cast<double>(x[j]) - y[j]);
      sx += static_cast<double>(x[j]) * x[j];
    }
    if (xmax > 0) s.max_rel_block = std::max(s.max_rel_block, emax / xmax);
  }
  s.rms_rel = std::sqrt(se / sx);
  return s;
}

// Bounds: Q8_0 and Q8_1 err by half a step (amax/254) plus fp16 rounding of d
// (127 * d * 2^-11 = amax * 2^-11); Q4_0 by a full step (amax/8) at the clamped
// end, Q5_0 likewise (amax/16). The other types use valet's own quantizers;
// their bounds are quality floors (about 1.1x what they achieve on this data,
// outliers included).
TEST(Quantize, RoundTripErrorBounds) {
  struct Case {
    GgmlType type;
    double max_rel_block;
    double rms_rel;
  };
  const Case cases[] = {
      {GgmlType::kF16, 1.0 / 2048, 1.0 / 2048},
      {GgmlType::kBF16, 1.0 / 256, 1.0 / 256},
      {GgmlType::kQ8_0, (0.5 / 127 + 1.0 / 2048) * 1.01, 0.01},
      {GgmlType::kQ4_0, (1.0 / 8) * (1 + 8.0 / 2048) * 1.01, 0.15},
      {GgmlType::kQ4_K, 0.10, 0.11},
      {GgmlType::kQ6_K, 0.03, 0.035},
      {GgmlType::kQ5_0, (1.0 / 16) * (1 + 16.0 / 2048) * 1.01, 0.08},
      {GgmlType::kQ8_1, (0.5 / 127 + 1.0 / 2048) * 1.01, 0.01},
      {GgmlType::kQ4_1, 0.075, 0.115},
      {GgmlType::kQ5_1, 0.036, 0.053},
      {GgmlType::kIQ4_NL, 0.13, 0.12},
      {GgmlType::kQ2_K, 0.34, 0.34},
      {GgmlType::kQ3_K, 0.23, 0.23},
      {GgmlType::kQ5_K, 0.055, 0.052},
      {GgmlType::kIQ4_XS, 0.083, 0.12},
      {GgmlType::kQ8_K, 0.5 / 127 * 1.01, 0.03},  // 256-long blocks: outliers set the step
  };
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const auto x = RandomRow(256 * 16, seed);
    for (const Case& c : cases) {
      const ErrorStats s = RoundTripError(c.type, x);
      EXPECT_LE(s.max_rel_block, c.max_rel_block) << GgmlTypeName(c.type);
      EXPECT_LE(s.rms_rel, c.rms_rel) << GgmlTypeName(c.type);
      EXPECT_GT(s.rms_rel, 0.0) << GgmlTypeName(c.type);  // lossy types must actually round
    }
  }
}

TEST(Quantize, ZerosAndConstantsStayExactForBlockTypes) {
  std::vector<float> zeros(512, 0.0f);
  for (GgmlType t : testing::kQuantWeightTypes) {
    const auto y = Decode(ScalarKernels(), t, Encode(ScalarKernels(), t, zeros), 512);
    for (float v : y) ASSERT_EQ(v, 0.0f) << GgmlTypeName(t);
  }
}

TEST(Quantize, SimdActivationQuantizersAreBitExact) {
  const KernelTable* tables[kMaxKernelTables];
  const int n_tables = AvailableKernelTables(tables);
  if (n_tables < 2) GTEST_SKIP() << "no SIMD kernel table on this CPU";
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto x = RandomRow(256 * 8, seed, seed % 2 ? 1.0f : 1e-3f);
    // Ties between magnitudes and exact .5 multiples exercise the rounding rules.
    x[5] = -x[7];
    for (int j = 256; j < 288; ++j) x[j] = static_cast<float>(j - 272) * 0.5f;
    std::fill(x.begin() + 512, x.begin() + 768, 0.0f);
    for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ8_1, GgmlType::kQ8_K, GgmlType::kF16}) {
      for (int k = 1; k < n_tables; ++k) {
        EXPECT_EQ(Encode(ScalarKernels(), t, x), Encode(*tables[k], t, x))
            << tables[k]->name << " " << GgmlTypeName(t) << " seed " << seed;
      }
    }
  }
}

// A table's fused BlockQ8_0S converter equals the reference's Q8_0
// quantization widened block by block: quants, scale and sum.
TEST(Quantize, FusedQ8_0SConvertersMatchTheReference) {
  const KernelTable* tables[kMaxKernelTables];
  const int n_tables = AvailableKernelTables(tables);
  int tested = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto x = RandomRow(32 * 24, seed, seed % 2 ? 1.0f : 1e-3f);
    x[5] = -x[7];
    for (int j = 32; j < 64; ++j) x[j] = static_cast<float>(j - 48) * 0.5f;
    std::fill(x.begin() + 64, x.begin() + 96, 0.0f);
    x[100] = 7e4f;  // a scale past fp16's range
    std::vector<BlockQ8_0S> want(x.size() / kQK8_0), got(want.size());
    WidenQ8_0Blocks(ScalarKernels()[GgmlType::kQ8_0].from_float, x.data(), want.data(),
                    static_cast<int64_t>(want.size()));
    for (int k = 0; k < n_tables; ++k) {
      if (tables[k]->q8_0s_from_float == nullptr) continue;
      ++tested;
      std::memset(got.data(), 0x5a, got.size() * sizeof(BlockQ8_0S));
      tables[k]->q8_0s_from_float(x.data(), got.data(), static_cast<int64_t>(x.size()));
      for (size_t b = 0; b < want.size(); ++b) {
        EXPECT_EQ(std::memcmp(&want[b], &got[b], sizeof(BlockQ8_0S)), 0)
            << tables[k]->name << " block " << b << " seed " << seed << ": d " << got[b].d << " vs " << want[b].d
            << ", sum " << got[b].sum << " vs " << want[b].sum;
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << "no table on this CPU has a fused BlockQ8_0S converter";
}

}  // namespace
}  // namespace valet
