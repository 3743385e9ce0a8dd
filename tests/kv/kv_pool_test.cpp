#include "kv/kv_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace valet {
namespace {

std::unique_ptr<KvPool> MakePool(int32_t blocks) {
  KvPoolOptions o;
  o.layout = KvLayout{2, 2, 4, 4, KvType::kF32};  // 2 layers, 2 heads, head_dim 4, 4 tokens per block
  o.capacity_bytes = blocks * o.layout.block_bytes();
  return std::move(KvPool::Create(o).value());
}

// Writes a value derived from (layer, kv, head, pos, d) into every filled row.
float* Row(KvSequence& seq, int32_t layer, int32_t kv, int32_t head, int32_t pos) {
  return static_cast<float*>(seq.row(layer, kv, head, pos));
}

void Fill(KvSequence& seq, int32_t from, int32_t to, float salt) {
  const KvLayout& l = seq.pool().layout();
  for (int32_t layer = 0; layer < l.n_layer; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv)
      for (int32_t h = 0; h < l.n_kv_head; ++h)
        for (int32_t p = from; p < to; ++p)
          for (int32_t d = 0; d < l.head_dim; ++d) Row(seq, layer, kv, h, p)[d] = salt + layer * 1000 + kv * 100 + h * 10 + p + d * 0.01f;
}

TEST(KvSequenceTest, WritingIntoASharedBlockCopiesItFirst) {
  auto pool = MakePool(8);
  KvSequence a(*pool);
  ASSERT_TRUE(a.Reserve(6).ok());
  Fill(a, 0, 6, 0.0f);
  a.Commit(6);
  KvSequence b(*pool);
  b.AttachShared(a.blocks(), 6);
  EXPECT_EQ(pool->ref_count(a.blocks()[1]), 2);
  EXPECT_EQ(b.blocks(), a.blocks());

  ASSERT_TRUE(b.Reserve(1).ok());  // position 6 lies in the shared, partly filled block 1
  EXPECT_EQ(b.blocks()[0], a.blocks()[0]) << "full blocks stay shared";
  EXPECT_NE(b.blocks()[1], a.blocks()[1]) << "the partly filled block is copied";
  EXPECT_EQ(pool->ref_count(a.blocks()[1]), 1);
  EXPECT_EQ(Row(b, 1, 1, 1, 5)[3], Row(a, 1, 1, 1, 5)[3]) << "the copy carries the shared rows";
  Fill(b, 6, 7, 50000.0f);
  b.Commit(1);
  EXPECT_EQ(Row(a, 0, 0, 0, 6)[0], Row(a, 0, 0, 0, 6)[0]);
  EXPECT_NE(Row(a, 0, 0, 0, 6)[0], Row(b, 0, 0, 0, 6)[0]) << "the original block was not written";
}

TEST(KvSequenceTest, RowsGatherWhatRowGivesAcrossBlocks) {
  auto pool = MakePool(8);
  KvSequence a(*pool);
  ASSERT_TRUE(a.Reserve(11).ok());  // three blocks of 4 tokens, the last partly filled
  for (int32_t first : {0, 3, 4, 7}) {
    for (int32_t n : {0, 1, 4, 11 - first}) {
      std::vector<const void*> rows(static_cast<size_t>(n) + 1, nullptr);
      a.Rows(1, 1, 1, first, n, rows.data());
      for (int32_t i = 0; i < n; ++i) EXPECT_EQ(rows[static_cast<size_t>(i)], a.row(1, 1, 1, first + i)) << first << "+" << i;
      EXPECT_EQ(rows[static_cast<size_t>(n)], nullptr) << "wrote past n";
    }
  }
}

TEST(KvSequenceTest, FailedReserveLeavesTheSequenceUnchanged) {
  auto pool = MakePool(3);
  KvSequence a(*pool);
  ASSERT_TRUE(a.Reserve(6).ok());
  a.Commit(6);
  KvSequence b(*pool);
  b.AttachShared(a.blocks(), 6);
  // Needs a copy of block 1 and two new blocks: only one block is free.
  Status s = b.Reserve(6);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(b.blocks(), a.blocks());
  EXPECT_EQ(pool->free_blocks(), 1);
}

TEST(KvSequenceTest, ExportThenImportReproducesTheRowsInOtherBlocks) {
  auto pool = MakePool(16);
  KvSequence a(*pool);
  ASSERT_TRUE(a.Reserve(11).ok());
  Fill(a, 0, 11, 7.0f);
  a.Commit(11);
  std::vector<float> rows(pool->layout().rows_bytes(3, 11) / sizeof(float));
  a.ExportRows(3, 11, rows.data());

  KvSequence b(*pool);
  b.AttachShared(std::span<const KvBlockId>(a.blocks()).first(1), 3);
  ASSERT_TRUE(b.ImportRows(8, rows.data()).ok());
  EXPECT_EQ(b.n_tokens(), 11);
  EXPECT_NE(b.blocks()[0], a.blocks()[0]) << "position 3 fell in the shared block: copied";
  const KvLayout& l = pool->layout();
  for (int32_t layer = 0; layer < l.n_layer; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv)
      for (int32_t h = 0; h < l.n_kv_head; ++h)
        for (int32_t p = 0; p < 11; ++p)
          for (int32_t d = 0; d < l.head_dim; ++d)
            ASSERT_EQ(Row(a, layer, kv, h, p)[d], Row(b, layer, kv, h, p)[d]) << layer << kv << h << " pos " << p;
}

// A Q8_0 row is head_dim / 32 blocks of 34 bytes (fp16 scale + 32 int8),
// so elements are no unit of the layout: every offset counts bytes.
TEST(KvLayoutTest, ByteMathOfEveryType) {
  KvLayout l{3, 2, 64, 16, KvType::kF32};
  EXPECT_EQ(l.row_bytes(), 256u);
  l.type = KvType::kF16;
  EXPECT_EQ(l.row_bytes(), 128u);
  l.type = KvType::kQ8_0;
  EXPECT_EQ(l.row_bytes(), 68u);  // 2 blocks
  EXPECT_EQ(l.head_slab_bytes(), 16u * 68);
  EXPECT_EQ(l.token_bytes(), 3u * 2 * 2 * 68);
  EXPECT_EQ(l.block_bytes(), 3u * 2 * 2 * 16 * 68);
  EXPECT_EQ(l.block_bytes(), l.token_bytes() * l.block_tokens);
  EXPECT_EQ(l.slab_byte_offset(0, 0, 0), 0u);
  EXPECT_EQ(l.slab_byte_offset(0, 0, 1), 16u * 68);
  EXPECT_EQ(l.slab_byte_offset(0, 1, 0), 2u * 16 * 68);
  EXPECT_EQ(l.slab_byte_offset(2, 1, 1), 11u * 16 * 68);
  EXPECT_EQ(l.slab_byte_offset(2, 1, 1) + l.head_slab_bytes(), l.block_bytes());
  EXPECT_EQ(KvRowBytes(KvType::kQ8_0, 128) * 100 / KvRowBytes(KvType::kF16, 128), 53u);  // 53% of F16

  EXPECT_TRUE(KvTypeFits(KvType::kQ8_0, 32));
  EXPECT_TRUE(KvTypeFits(KvType::kQ8_0, 128));
  EXPECT_FALSE(KvTypeFits(KvType::kQ8_0, 8));
  EXPECT_FALSE(KvTypeFits(KvType::kQ8_0, 80));
  EXPECT_TRUE(KvTypeFits(KvType::kF16, 8));
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) EXPECT_EQ(ParseKvType(KvTypeName(t)), t);
  EXPECT_EQ(ParseKvType("q4_0"), std::nullopt);
}

TEST(KvPoolTest, Q8_0RefusesAHeadDimThatIsNotWholeBlocks) {
  KvPoolOptions o;
  o.layout = KvLayout{2, 2, 8, 4, KvType::kQ8_0};
  o.capacity_bytes = 1 << 20;
  Result<std::unique_ptr<KvPool>> pool = KvPool::Create(o);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pool.status().message().find("head_dim is 8"), std::string::npos) << pool.status().message();
  o.layout.head_dim = 64;
  EXPECT_TRUE(KvPool::Create(o).ok());
}

// Rows of Q8_0 bytes (not whole floats) move between blocks byte for byte,
// across a block boundary and into a copied shared block.
TEST(KvSequenceTest, Q8_0RowsExportAndImportByteForByte) {
  KvPoolOptions o;
  o.layout = KvLayout{2, 2, 64, 4, KvType::kQ8_0};
  o.capacity_bytes = 16 * o.layout.block_bytes();
  auto pool = std::move(KvPool::Create(o).value());
  const KvLayout& l = pool->layout();
  KvSequence a(*pool);
  ASSERT_TRUE(a.Reserve(11).ok());
  for (int32_t layer = 0; layer < l.n_layer; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv)
      for (int32_t h = 0; h < l.n_kv_head; ++h)
        for (int32_t p = 0; p < 11; ++p) {
          auto* row = static_cast<uint8_t*>(a.row(layer, kv, h, p));
          for (size_t i = 0; i < l.row_bytes(); ++i) row[i] = static_cast<uint8_t>(layer * 97 + kv * 53 + h * 31 + p * 7 + i);
        }
  a.Commit(11);
  // Rows of one slab are adjacent: position p + 1 starts row_bytes() after p.
  EXPECT_EQ(static_cast<uint8_t*>(a.row(1, 1, 1, 2)) + l.row_bytes(), a.row(1, 1, 1, 3));
  std::vector<uint8_t> rows(l.rows_bytes(3, 11));
  EXPECT_EQ(rows.size(), 8 * l.token_bytes());
  a.ExportRows(3, 11, rows.data());
  KvSequence b(*pool);
  b.AttachShared(std::span<const KvBlockId>(a.blocks()).first(1), 3);
  ASSERT_TRUE(b.ImportRows(8, rows.data()).ok());
  for (int32_t layer = 0; layer < l.n_layer; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv)
      for (int32_t h = 0; h < l.n_kv_head; ++h)
        for (int32_t p = 0; p < 11; ++p)
          ASSERT_EQ(0, std::memcmp(a.row(layer, kv, h, p), b.row(layer, kv, h, p), l.row_bytes()))
              << layer << kv << h << " pos " << p;
}

struct CountingReclaimer : KvReclaimer {
  KvPool* pool;
  std::vector<KvBlockId> held;
  int calls = 0;
  bool ReclaimOne() override {
    ++calls;
    if (held.empty()) return false;
    pool->Release(held.back());
    held.pop_back();
    return true;
  }
};

TEST(KvPoolTest, AllocateAsksTheReclaimerWhenEmpty) {
  auto pool = MakePool(2);
  CountingReclaimer r;
  r.pool = pool.get();
  r.held = {*pool->Allocate(), *pool->Allocate()};
  pool->set_reclaimer(&r);
  EXPECT_TRUE(pool->Allocate().ok());
  EXPECT_TRUE(pool->Allocate().ok());
  EXPECT_FALSE(pool->Allocate().ok());
  EXPECT_EQ(r.calls, 3);
  pool->set_reclaimer(nullptr);
}

TEST(KvPoolTest, ShrinkingKeepsBlocksInUseAndRetiresThemOnRelease) {
  auto pool = MakePool(4);
  std::vector<KvBlockId> held;
  for (int i = 0; i < 4; ++i) held.push_back(*pool->Allocate());
  ASSERT_TRUE(pool->SetCapacity(2 * pool->layout().block_bytes()).ok());
  EXPECT_EQ(pool->capacity_blocks(), 2);
  EXPECT_EQ(pool->used_blocks(), 4);  // nothing in use is taken away
  EXPECT_FALSE(pool->Allocate().ok());
  for (KvBlockId id : held) pool->Release(id);
  EXPECT_EQ(pool->used_blocks(), 0);
  EXPECT_EQ(pool->free_blocks(), 2);  // the blocks past the end left the pool
  std::vector<KvBlockId> again = {*pool->Allocate(), *pool->Allocate()};
  EXPECT_LT(again[0], 2);
  EXPECT_LT(again[1], 2);
  EXPECT_FALSE(pool->Allocate().ok());
}

TEST(KvPoolTest, GrowsUpToWhatWasReservedAndNoFurther) {
  KvPoolOptions o;
  o.layout = KvLayout{2, 2, 4, 4, KvType::kF32};
  o.capacity_bytes = 2 * o.layout.block_bytes();
  o.max_capacity_bytes = 5 * o.layout.block_bytes();
  std::unique_ptr<KvPool> pool = std::move(KvPool::Create(o).value());
  EXPECT_EQ(pool->max_capacity_bytes(), 5 * o.layout.block_bytes());
  ASSERT_TRUE(pool->SetCapacity(5 * o.layout.block_bytes()).ok());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(pool->Allocate().ok()) << i;
  EXPECT_FALSE(pool->Allocate().ok());
  EXPECT_EQ(pool->SetCapacity(6 * o.layout.block_bytes()).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(pool->SetCapacity(o.layout.block_bytes() - 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(pool->capacity_blocks(), 5);
}

// 6 layers, every third one full (2 and 5): slices of gcd(2, 4) = 2 layers,
// one full slice then two windowed ones.
KvLayout WindowedLayout() {
  KvLayout l{6, 1, 4, 4, KvType::kF32};
  l.window = 6;
  l.window_period = 3;
  return l;
}

std::unique_ptr<KvPool> MakeWindowedPool(int32_t blocks) {
  KvPoolOptions o;
  o.layout = WindowedLayout();
  o.capacity_bytes = blocks * o.layout.block_bytes();
  return std::move(KvPool::Create(o).value());
}

// Live (not released) blocks in a sequence's table.
int32_t LiveBlocks(const KvSequence& seq) {
  int32_t n = 0;
  for (KvBlockId id : seq.blocks()) n += id != KvSequence::kNoBlock;
  return n;
}

TEST(KvLayoutTest, WindowedLayersGetSlicesOfTheirOwnKind) {
  const KvLayout l = WindowedLayout();
  EXPECT_EQ(l.n_full_layers(), 2);
  EXPECT_EQ(l.slice_layers(), 2);
  EXPECT_EQ(l.n_slices(), 3);
  EXPECT_EQ(l.block_bytes(), 2u * 2 * 1 * 4 * 16);
  const std::pair<int32_t, int32_t> expected[6] = {{1, 0}, {1, 1}, {0, 0}, {2, 0}, {2, 1}, {0, 1}};
  for (int32_t il = 0; il < 6; ++il) {
    EXPECT_EQ(l.windowed(il), il % 3 != 2) << il;
    EXPECT_EQ(l.slot(il).slice, expected[il].first) << il;
    EXPECT_EQ(l.slot(il).sub, expected[il].second) << il;
  }
  EXPECT_EQ(l.window_start(4), 0);
  EXPECT_EQ(l.window_start(20), 15);  // the query at 20 sees 15..20
  // 17 positions from 3: full layers all 17, windowed ones 15..19.
  EXPECT_EQ(l.rows_bytes(3, 20), (2u * 17 + 4u * 5) * 2 * 16);
  // 20 positions: 5 block runs; windowed slices keep runs 3 and 4.
  EXPECT_EQ(l.sequence_bytes(20), (5u + 2 * 2) * l.block_bytes());
  // A last step of 8 positions (12..19) ran with the window of 12 (7..11): runs 1-4.
  EXPECT_EQ(l.sequence_bytes(20, 8), (5u + 2 * 4) * l.block_bytes());
  KvLayout full = l;
  full.window = 0;
  EXPECT_EQ(full.n_slices(), 1);
  EXPECT_EQ(full.slot(4).sub, 4);
  EXPECT_EQ(full.sequence_bytes(20), 5 * full.block_bytes());
  EXPECT_EQ(full.rows_bytes(3, 20), 17 * full.token_bytes());
}

TEST(KvSequenceTest, WindowedSlicesReleaseWhatNoLaterQueryCanSee) {
  auto pool = MakeWindowedPool(64);
  const KvLayout& l = pool->layout();
  KvSequence a(*pool);
  for (int32_t step : {3, 9, 8}) {  // 20 positions in uneven steps
    const int32_t from = a.n_tokens();
    ASSERT_TRUE(a.Reserve(step).ok());
    Fill(a, from, from + step, 1.0f);
    a.Commit(step);
    EXPECT_EQ(static_cast<size_t>(pool->used_blocks()) * l.block_bytes(), l.sequence_bytes(a.n_tokens()))
        << a.n_tokens();
  }
  for (int32_t i = 0; i < 5; ++i) {
    for (int32_t s = 0; s < 3; ++s) {
      EXPECT_EQ(a.blocks()[i * 3 + s] == KvSequence::kNoBlock, s > 0 && i < 3) << "run " << i << " slice " << s;
    }
  }
  for (int32_t p = l.window_start(20); p < 20; ++p) {  // what the window keeps is intact
    EXPECT_EQ(Row(a, 0, 1, 0, p)[2], 1.0f + 100 + p + 0.02f) << p;
  }
  EXPECT_EQ(Row(a, 2, 0, 0, 0)[0], 1.0f + 2000) << "full layers keep every position";
  a.Clear();
  EXPECT_EQ(pool->used_blocks(), 0);
}

TEST(KvSequenceTest, WindowedRowsExportAndImportOnlyTheWindow) {
  auto pool = MakeWindowedPool(64);
  const KvLayout& l = pool->layout();
  KvSequence a(*pool);
  a.PinWindow(3);  // keeps run 0's windowed blocks for b's shared start
  ASSERT_TRUE(a.Reserve(20).ok());
  Fill(a, 0, 20, 3.0f);
  a.Commit(20);
  std::vector<float> rows(l.rows_bytes(3, 20) / sizeof(float));
  a.ExportRows(3, 20, rows.data());

  KvSequence b(*pool);
  b.AttachShared(std::span<const KvBlockId>(a.blocks()).first(3), 3);
  const int32_t used = pool->used_blocks();
  ASSERT_TRUE(b.ImportRows(17, rows.data()).ok());
  EXPECT_EQ(b.n_tokens(), 20);
  // b copied run 0 of the full slice (its windowed rows at 3 are out of the
  // window) and took runs 1-4 of the full slice and 3-4 of the windowed ones.
  EXPECT_EQ(pool->used_blocks() - used, 1 + 4 + 2 * 2);
  EXPECT_EQ(LiveBlocks(b), 5 + 2 * 2);
  for (int32_t layer = 0; layer < l.n_layer; ++layer) {
    for (int32_t p = l.windowed(layer) ? l.window_start(20) : 0; p < 20; ++p) {
      for (int32_t kv = 0; kv < 2; ++kv) {
        ASSERT_EQ(0, std::memcmp(Row(a, layer, kv, 0, p), Row(b, layer, kv, 0, p), l.row_bytes()))
            << layer << kv << " pos " << p;
      }
    }
  }
}

TEST(KvSequenceTest, APinnedWindowOutlivesTheStepUntilUnpinned) {
  auto pool = MakeWindowedPool(64);
  KvSequence a(*pool);
  a.PinWindow(10);  // a continuation from 10 reads 5..9: runs 1 and 2
  ASSERT_TRUE(a.Reserve(24).ok());
  a.Commit(24);
  EXPECT_EQ(a.blocks()[0 * 3 + 1], KvSequence::kNoBlock);
  EXPECT_NE(a.blocks()[1 * 3 + 1], KvSequence::kNoBlock);
  EXPECT_NE(a.blocks()[2 * 3 + 2], KvSequence::kNoBlock);
  a.UnpinWindow();  // the query at 24 sees 19..24: runs 4 and 5
  EXPECT_EQ(a.blocks()[3 * 3 + 1], KvSequence::kNoBlock);
  EXPECT_NE(a.blocks()[4 * 3 + 1], KvSequence::kNoBlock);
  EXPECT_EQ(static_cast<size_t>(pool->used_blocks()) * pool->layout().block_bytes(),
            pool->layout().sequence_bytes(24));
}

TEST(KvPoolTest, RefusesAWindowWithoutAPeriod) {
  KvPoolOptions o;
  o.layout = WindowedLayout();
  o.layout.window_period = 1;
  o.capacity_bytes = 1 << 20;
  EXPECT_EQ(KvPool::Create(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace valet
