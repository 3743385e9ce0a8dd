// Snapshot bytes of a Q8_0 KV sequence: its rows round-trip byte for byte
// into other blocks, and a pool of another KV type refuses them; a stopped
// step's rows and hidden state ride along, and a damaged description of it
// is refused before anything is sized from it.
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

// Fills every row of positions [begin, end) with bytes that name it.
void FillRows(KvSequence& seq, int32_t begin, int32_t end) {
  const KvLayout& l = seq.pool().layout();
  for (int32_t layer = 0; layer < l.n_layer; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv)
      for (int32_t h = 0; h < l.n_kv_head; ++h)
        for (int32_t p = begin; p < end; ++p) {
          auto* row = static_cast<uint8_t*>(seq.row(layer, kv, h, p));
          for (size_t i = 0; i < l.row_bytes(); ++i) row[i] = static_cast<uint8_t>(layer * 89 + kv * 41 + h * 17 + p * 5 + i);
        }
}

// A header for rows [kv_begin, kv_end) of a history of kv_end tokens.
SnapshotHeader Header(int32_t kv_begin, int32_t kv_end) {
  SnapshotHeader h;
  h.kv_begin = kv_begin;
  h.kv_end = kv_end;
  for (int32_t t = 0; t < kv_end; ++t) h.history.push_back(100 + t);
  h.sampler.rng.words = {1, 2, 3, 4};
  return h;
}

TEST(SequenceSnapshotTest, Q8_0RowsRoundTripAndOtherKvTypesAreRefused) {
  auto pool = Pool(KvType::kQ8_0);
  const KvLayout& l = pool->layout();
  KvSequence a(*pool);
  ASSERT_TRUE(a.Reserve(10).ok());
  FillRows(a, 0, 10);
  a.Commit(10);
  const SnapshotHeader h = Header(2, 10);  // positions [0, 2) stand for a shared prefix
  const std::vector<uint8_t> bytes = EncodeSequenceSnapshot(h, a);
  EXPECT_EQ(bytes.size(), 88 + 10 * sizeof(int32_t) + 8 * l.token_bytes() + 16);  // header, history, rows, no cut

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

TEST(SequenceSnapshotTest, AStoppedStepRoundTripsAndADamagedOneIsRefused) {
  auto pool = Pool(KvType::kF16);
  const KvLayout& l = pool->layout();
  KvSequence a(*pool);
  ASSERT_TRUE(a.Reserve(9).ok());
  FillRows(a, 0, 9);
  a.Commit(6);  // three positions written past the committed length by a stopped step
  const SnapshotHeader h = Header(0, 6);
  StepCut cut;
  cut.layer = 1;
  cut.tokens = {7, 8, 9};
  for (int i = 0; i < 3 * 5; ++i) cut.hidden.push_back(0.5f * static_cast<float>(i) - 3.0f);
  const std::vector<uint8_t> bytes = EncodeSequenceSnapshot(h, a, &cut);
  EXPECT_EQ(bytes.size(), 88 + 6 * sizeof(int32_t) + 6 * l.token_bytes() + 16 +
                              3 * (sizeof(int32_t) + l.token_bytes() + 5 * sizeof(float)));
  Result<DecodedSnapshot> d = DecodeSequenceSnapshot(bytes, l);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->cut.layer, 1);
  EXPECT_EQ(d->cut.tokens, cut.tokens);
  EXPECT_EQ(d->cut.hidden, cut.hidden);
  KvSequence b(*pool);
  ASSERT_TRUE(b.ImportRows(6, d->rows).ok());
  ASSERT_TRUE(b.ImportPendingRows(3, d->cut_rows).ok());
  EXPECT_EQ(b.n_tokens(), 6);
  for (int32_t layer = 0; layer < l.n_layer; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv)
      for (int32_t hd = 0; hd < l.n_kv_head; ++hd)
        for (int32_t p = 0; p < 9; ++p)
          ASSERT_EQ(0, std::memcmp(a.row(layer, kv, hd, p), b.row(layer, kv, hd, p), l.row_bytes())) << " pos " << p;

  // The stopped step's description follows the rows: CutFixed is at `at`.
  const size_t at = 88 + 6 * sizeof(int32_t) + 6 * l.token_bytes();
  auto damaged = [&](size_t offset, uint32_t value) {
    std::vector<uint8_t> copy = bytes;
    std::memcpy(copy.data() + at + offset, &value, sizeof(value));
    return DecodeSequenceSnapshot(copy, l).status().code();
  };
  EXPECT_EQ(damaged(0, 0), StatusCode::kCorrupt);            // no layer, yet tokens
  EXPECT_EQ(damaged(4, 0xFFFFFFFFu), StatusCode::kCorrupt);  // more tokens than bytes
  EXPECT_EQ(damaged(4, 2), StatusCode::kCorrupt);
  EXPECT_EQ(damaged(8, 0), StatusCode::kCorrupt);            // no hidden state
  EXPECT_EQ(damaged(8, 0x40000000u), StatusCode::kCorrupt);
  EXPECT_EQ(damaged(12, 1), StatusCode::kCorrupt);
  EXPECT_EQ(DecodeSequenceSnapshot(std::span<const uint8_t>(bytes).first(bytes.size() - 1), l).status().code(),
            StatusCode::kCorrupt);

  // A version 4 snapshot (a durable checkpoint from before) reads without a cut.
  std::vector<uint8_t> v4(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(at));
  const uint32_t four = 4;
  std::memcpy(v4.data() + 4, &four, sizeof(four));
  Result<DecodedSnapshot> old = DecodeSequenceSnapshot(v4, l);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_TRUE(old->cut.empty());
  EXPECT_EQ(old->cut_rows, nullptr);
}

}  // namespace
}  // namespace valet
