// The fused attention kernels: the reference against softmax·V in double
// precision, every table's variant against the reference bit for bit, and a
// row's result independent of the rows that share its call (and of keys past
// its own).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/scalar.h"

namespace valet {
namespace {

using testing::RandomRow;
using testing::Tables;

// n_pos K and V rows of head_dim elements of `type`, and a pointer per row.
struct Keys {
  GgmlType type;
  int32_t hd;
  std::vector<uint8_t> k, v;
  std::vector<const void*> k_rows, v_rows;

  Keys(GgmlType t, int32_t head_dim, int32_t n_pos, uint32_t seed) : type(t), hd(head_dim) {
    k = testing::Encode(ScalarKernels(), type, RandomRow(int64_t{n_pos} * hd, seed));
    v = testing::Encode(ScalarKernels(), type, RandomRow(int64_t{n_pos} * hd, seed + 1));
    const size_t row = GgmlRowSize(type, hd);
    for (int32_t j = 0; j < n_pos; ++j) {
      k_rows.push_back(k.data() + j * row);
      v_rows.push_back(v.data() + j * row);
    }
  }
  AttentionKeys View() const { return {type, hd, k_rows.data(), v_rows.data()}; }
  float K(int32_t j, int32_t d) const { return Element(k_rows[j], d); }
  float V(int32_t j, int32_t d) const { return Element(v_rows[j], d); }
  float Element(const void* row, int32_t d) const {
    std::vector<float> wide(static_cast<size_t>(hd));
    ScalarKernels()[type].to_float(row, wide.data(), hd);
    return wide[d];
  }
  // Rows from position `from` on replaced by NaNs (keys a row must never see).
  void PoisonFrom(int32_t from) {
    const size_t row = GgmlRowSize(type, hd);
    if (type == GgmlType::kQ8_0) {  // quantizing NaN is undefined: NaN scales instead
      for (size_t j = from; j < k_rows.size(); ++j) {
        for (uint8_t* r : {k.data() + j * row, v.data() + j * row}) {
          auto* b = reinterpret_cast<BlockQ8_0*>(r);
          for (int32_t i = 0; i < hd / kQK8_0; ++i) b[i].d = 0x7e00;
        }
      }
      return;
    }
    const std::vector<float> nan(static_cast<size_t>(hd), std::numeric_limits<float>::quiet_NaN());
    for (size_t j = from; j < k_rows.size(); ++j) {
      ScalarKernels()[type].from_float(nan.data(), k.data() + j * row, hd);
      ScalarKernels()[type].from_float(nan.data(), v.data() + j * row, hd);
    }
  }
};

// Query rows (pre-scaled as the kernel expects) and their outputs.
struct Queries {
  int32_t hd;
  std::vector<std::vector<float>> q, out;
  std::vector<int32_t> n_keys;
  float softcap = 0.0f;  // AttentionRows::softcap

  Queries(int32_t head_dim, const std::vector<int32_t>& keys, uint32_t seed) : hd(head_dim), n_keys(keys) {
    const float scale = kLog2e / std::sqrt(static_cast<float>(hd));
    for (size_t r = 0; r < keys.size(); ++r) {
      std::vector<float> row = RandomRow(hd, seed + static_cast<uint32_t>(r), 2.0f);
      for (float& x : row) x *= scale;
      q.push_back(row);
      out.emplace_back(hd, -1.0f);
    }
  }
  // Runs rows [first, first + count) in one call.
  void Run(const KernelTable& table, const AttentionKeys& keys, size_t first, size_t count) {
    std::vector<const float*> qp;
    std::vector<float*> op;
    for (size_t r = first; r < first + count; ++r) {
      qp.push_back(q[r].data());
      op.push_back(out[r].data());
    }
    std::vector<float> work(AttentionWorkFloats(hd));
    table.attention({static_cast<int>(count), qp.data(), n_keys.data() + first, op.data(), softcap}, keys,
                    work.data());
  }
  void RunAll(const KernelTable& table, const AttentionKeys& keys) {
    for (size_t r = 0; r < q.size(); r += kAttnMaxRows) Run(table, keys, r, std::min<size_t>(kAttnMaxRows, q.size() - r));
  }
};

constexpr GgmlType kKvTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0};

// Q8_0 rows are whole 32-element blocks: its head sizes are multiples of 32.
std::vector<int32_t> HeadDims(GgmlType type, std::vector<int32_t> hds) {
  if (type == GgmlType::kQ8_0) std::erase_if(hds, [](int32_t hd) { return hd % kQK8_0 != 0; });
  return hds;
}

const std::vector<int32_t> kKeyCounts = {1, 2, 31, 32, 33, 64, 95, 100, 130, 7, 40, 64, 1, 128, 129, 3, 77, 50};

// Soft caps in the scores' base-2 units: none, and one tight enough that
// tanh bends most scores (Gemma 2's 50 is loose for random data).
constexpr float kSoftCaps[] = {0.0f, 2.0f};

TEST(Attention, ReferenceMatchesSoftmaxInDouble) {
  for (GgmlType type : kKvTypes) {
    for (int32_t hd : HeadDims(type, {64, 128, 40, 20, 32})) {
      for (float cap : kSoftCaps) {
        const Keys keys(type, hd, 130, 5);
        Queries qs(hd, kKeyCounts, 9);
        qs.softcap = cap;
        qs.RunAll(ScalarKernels(), keys.View());
        for (size_t r = 0; r < qs.q.size(); ++r) {
          const int32_t nk = qs.n_keys[r];
          std::vector<double> p(static_cast<size_t>(nk));
          double max = -INFINITY, sum = 0;
          for (int32_t j = 0; j < nk; ++j) {
            double s = 0;
            for (int32_t d = 0; d < hd; ++d) s += static_cast<double>(qs.q[r][d]) * keys.K(j, d);
            if (cap > 0) s = cap * std::tanh(s / cap);
            p[j] = s * std::log(2.0);  // the queries carry log2(e)
            max = std::max(max, p[j]);
          }
          for (double& x : p) sum += (x = std::exp(x - max));
          for (int32_t d = 0; d < hd; ++d) {
            double want = 0, mag = 0;
            for (int32_t j = 0; j < nk; ++j) {
              want += p[j] / sum * keys.V(j, d);
              mag += p[j] / sum * std::fabs(keys.V(j, d));
            }
            ASSERT_NEAR(qs.out[r][d], want, 2e-6 * (mag + 1.0))
                << GgmlTypeName(type) << " hd " << hd << " cap " << cap << " row " << r << " d " << d;
          }
        }
      }
    }
  }
}

TEST(Attention, EveryTableEqualsTheReferenceBitForBit) {
  for (GgmlType type : kKvTypes) {
    for (int32_t hd : HeadDims(type, {64, 128, 80, 40, 96})) {
      for (float cap : kSoftCaps) {
        const Keys keys(type, hd, 130, 21);
        Queries want(hd, kKeyCounts, 23);
        want.softcap = cap;
        want.RunAll(ScalarKernels(), keys.View());
        for (const KernelTable* table : Tables()) {
          ASSERT_NE(table->attention, nullptr) << table->name;
          Queries got(hd, kKeyCounts, 23);
          got.softcap = cap;
          got.RunAll(*table, keys.View());
          for (size_t r = 0; r < want.q.size(); ++r) {
            ASSERT_EQ(0, std::memcmp(got.out[r].data(), want.out[r].data(), hd * sizeof(float)))
                << table->name << " " << GgmlTypeName(type) << " hd " << hd << " cap " << cap << " row " << r;
          }
        }
      }
    }
  }
}

// A row alone equals the same row inside calls of every size and offset, and
// inside a call with a longer row over keys that are NaN past its own.
TEST(Attention, ARowsResultDoesNotDependOnItsCallOrOnLaterKeys) {
  const int32_t hd = 64;
  for (const KernelTable* table : Tables()) {
    for (GgmlType type : kKvTypes) {
      const Keys keys(type, hd, 130, 31);
      Queries alone(hd, kKeyCounts, 37);
      for (size_t r = 0; r < alone.q.size(); ++r) alone.Run(*table, keys.View(), r, 1);
      for (size_t count : {2, 3, 5, 16}) {
        for (size_t first = 0; first + count <= alone.q.size(); first += 2) {
          Queries batch(hd, kKeyCounts, 37);
          batch.Run(*table, keys.View(), first, count);
          for (size_t r = first; r < first + count; ++r) {
            ASSERT_EQ(0, std::memcmp(batch.out[r].data(), alone.out[r].data(), hd * sizeof(float)))
                << table->name << " " << GgmlTypeName(type) << ": row " << r << " in a call of " << count
                << " from row " << first;
          }
        }
      }
      for (size_t r = 0; r < alone.q.size(); ++r) {
        Keys poisoned(type, hd, 130, 31);
        poisoned.PoisonFrom(alone.n_keys[r]);
        Queries pair(hd, {alone.n_keys[r], 130}, 0);
        pair.q[0] = alone.q[r];
        pair.Run(*table, poisoned.View(), 0, 2);
        ASSERT_EQ(0, std::memcmp(pair.out[0].data(), alone.out[r].data(), hd * sizeof(float)))
            << table->name << " " << GgmlTypeName(type) << ": row " << r << " beside a row of 130 keys";
      }
    }
  }
}

// The KV cache quantizes K and V rows with the active table's Q8_0
// from_float: every table must write the reference's bits, so a row's cache
// bytes (and a snapshot of them) do not depend on the CPU that wrote them.
TEST(Attention, EveryTablesQ8_0RowQuantizerEqualsTheReference) {
  for (float scale : {0.01f, 1.0f, 40.0f}) {
    const std::vector<float> x = RandomRow(128 * 64, 77, scale);
    const std::vector<uint8_t> want = testing::Encode(ScalarKernels(), GgmlType::kQ8_0, x);
    for (const KernelTable* table : Tables()) {
      const std::vector<uint8_t> got = testing::Encode(*table, GgmlType::kQ8_0, x);
      ASSERT_EQ(got, want) << table->name << " scale " << scale;
    }
  }
}

}  // namespace
}  // namespace valet
