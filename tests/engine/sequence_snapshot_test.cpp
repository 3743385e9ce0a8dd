// Snapshot bytes of a Q8_0 KV sequence: its rows round-trip byte for byte
// into other blocks, and a pool of another KV type refuses them.
#include "engine/sequence_snapshot.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace valet {
namespace {

std::unique_ptr<KvPool> Pool(KvType type) {
  KvPoolOptions o;
  o.layout = KvLayout{2, 2, 64, 4, type};  // head_dim 64: two Q8_0 blocks a row
  o.capacity_bytes = 16 * o.layout.block_bytes();
  return std::move(KvPool::Create(o).value());
}

TEST(SequenceSnapshotTest, Q8_0RowsRoundTripAndOtherKvTypesAreRefused) {
  auto pool = Pool(KvType::kQ8_0);
  const KvLayout& l = pool->layout();
  KvSequence a(*pool);
  ASSERT_TRUE(a.Reserve(10).ok());
  for (int32_t layer = 0; layer < l.n_layer; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv)
      for (int32_t h = 0; h < l.n_kv_head; ++h)
        for (int32_t p = 0; p < 10; ++p) {
          auto* row = static_cast<uint8_t*>(a.row(layer, kv, h, p));
          for (size_t i = 0; i < l.row_bytes(); ++i) row[i] = static_cast<uint8_t>(layer * 89 + kv * 41 + h * 17 + p * 5 + i);
        }
  a.Commit(10);
  SnapshotHeader h;
  h.kv_begin = 2;  // positions [0, 2) stand for a shared prefix
  h.kv_end = 10;
  for (int32_t t = 0; t < 10; ++t) h.history.push_back(100 + t);
  h.sampler.rng.words = {1, 2, 3, 4};
  const std::vector<uint8_t> bytes = EncodeSequenceSnapshot(h, a);
  EXPECT_EQ(bytes.size(), 88 + 10 * sizeof(int32_t) + 8 * l.token_bytes());  // header, history, rows

  Result<DecodedSnapshot> d = DecodeSequenceSnapshot(bytes, l);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->header.history, h.history);
  KvSequence b(*pool);
  b.AttachShared(std::span<const KvBlockId>(a.blocks()).first(1), 2);
  ASSERT_TRUE(b.ImportRows(8, d->rows).ok());
  for (int32_t layer = 0; layer < l.n_layer; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv)
      for (int32_t hd = 0; hd < l.n_kv_head; ++hd)
        for (int32_t p = 0; p < 10; ++p)
          ASSERT_EQ(0, std::memcmp(a.row(layer, kv, hd, p), b.row(layer, kv, hd, p), l.row_bytes()))
              << layer << kv << hd << " pos " << p;

  for (KvType other : {KvType::kF16, KvType::kF32}) {
    KvLayout same_shape = l;
    same_shape.type = other;
    Result<DecodedSnapshot> refused = DecodeSequenceSnapshot(bytes, same_shape);
    ASSERT_FALSE(refused.ok()) << KvTypeName(other);
    EXPECT_EQ(refused.status().code(), StatusCode::kCorrupt) << refused.status().ToString();
    // The header's kv_type says so before the row bytes are even counted.
    EXPECT_NE(refused.status().message().find("another shape"), std::string::npos) << refused.status().ToString();
  }
  KvLayout windowed = l;
  windowed.window = 4;
  windowed.window_period = 2;
  EXPECT_EQ(DecodeSequenceSnapshot(bytes, windowed).status().code(), StatusCode::kCorrupt)
      << "a pool that drops positions cannot take every position's rows";
}

}  // namespace
}  // namespace valet
