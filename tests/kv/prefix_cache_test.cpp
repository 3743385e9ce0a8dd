#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <span>
#include <string_view>
#include <vector>

namespace valet {
namespace {

std::unique_ptr<KvPool> MakePool(int32_t blocks) {
  KvPoolOptions o;
  o.layout = KvLayout{1, 1, 2, 4};
  o.capacity_bytes = blocks * o.layout.block_bytes();
  return std::move(KvPool::Create(o).value());
}

std::vector<int32_t> Tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

void Prefill(KvSequence& seq, int32_t n) {
  ASSERT_TRUE(seq.Reserve(n).ok());
  seq.Commit(n);
}

TEST(PrefixCacheTest, MatchesWholeBlocksAndTheExactPartialTail) {
  auto pool = MakePool(16);
  PrefixCache cache(*pool);
  const std::vector<int32_t> prompt = Tokens(10, 100);  // blocks of 4, 4 and a tail of 2
  KvSequence a(*pool);
  Prefill(a, 10);
  EXPECT_EQ(cache.Insert(prompt, a), 10);
  EXPECT_EQ(cache.n_blocks(), 3);

  PrefixMatch m = cache.Match(prompt);
  EXPECT_EQ(m.n_tokens, 10);
  EXPECT_EQ(m.blocks, a.blocks());

  std::vector<int32_t> longer = prompt;
  longer.push_back(7);  // the tail block differs: only the two full blocks match
  EXPECT_EQ(cache.Match(longer).n_tokens, 8);

  std::vector<int32_t> other = prompt;
  other[5] = 1;  // second block differs: the chain stops after the first
  EXPECT_EQ(cache.Match(other).n_tokens, 4);
  EXPECT_EQ(cache.Match(Tokens(10, 5)).n_tokens, 0);
}

TEST(PrefixCacheTest, ReinsertingKeepsTheCachedBlocks) {
  auto pool = MakePool(16);
  PrefixCache cache(*pool);
  const std::vector<int32_t> prompt = Tokens(8, 1);
  KvSequence a(*pool), b(*pool);
  Prefill(a, 8);
  Prefill(b, 8);
  cache.Insert(prompt, a);
  cache.Insert(prompt, b);
  EXPECT_EQ(cache.n_blocks(), 2);
  EXPECT_EQ(cache.Match(prompt).blocks, a.blocks());
  EXPECT_EQ(pool->ref_count(b.blocks()[0]), 1);
}

TEST(PrefixCacheTest, EvictsUnusedPrefixesLeastRecentlyUsedFirst) {
  auto pool = MakePool(6);
  PrefixCache cache(*pool);
  const std::vector<int32_t> p1 = Tokens(8, 1), p2 = Tokens(8, 50);
  {
    KvSequence a(*pool), b(*pool);
    Prefill(a, 8);
    Prefill(b, 8);
    cache.Insert(p1, a);
    cache.Insert(p2, b);
  }  // no sequence uses either prefix now; the cache keeps 4 blocks
  EXPECT_EQ(pool->free_blocks(), 2);
  EXPECT_EQ(cache.unused_blocks(), 4);
  cache.Match(p1);  // p1 is now the more recently used

  KvSequence user(*pool);
  PrefixMatch m = cache.Match(p1);
  user.AttachShared(m.blocks, m.n_tokens);  // p1 is in use: never evicted
  KvSequence big(*pool);
  Prefill(big, 16);  // needs 4 blocks: 2 free + 2 evicted
  EXPECT_EQ(cache.evictions(), 2);
  EXPECT_EQ(cache.Match(p2).n_tokens, 0);
  EXPECT_EQ(cache.Match(p1).n_tokens, 8);
  EXPECT_EQ(big.Reserve(4).code(), StatusCode::kResourceExhausted) << "blocks in use are not evicted";
}

// The foreground's system prompt (rank 0) outlives a background prefix (rank
// 3) used more recently; eviction below a rank leaves it alone entirely.
TEST(PrefixCacheTest, EvictsHigherRanksBeforeRecency) {
  auto pool = MakePool(6);
  PrefixCache cache(*pool);
  const std::vector<int32_t> chat = Tokens(8, 1), index = Tokens(8, 50);
  {
    KvSequence a(*pool), b(*pool);
    Prefill(a, 8);
    Prefill(b, 8);
    cache.Insert(chat, a, 0);
    cache.Insert(index, b, 3);
  }
  cache.Match(index, 3);  // the background prefix is the more recently used
  EXPECT_FALSE(cache.EvictOne(4)) << "nothing of rank 4 or more";
  KvSequence big(*pool);
  Prefill(big, 16);  // 2 free + 2 evicted: the background prefix's
  EXPECT_EQ(cache.Match(index, 3).n_tokens, 0);
  EXPECT_EQ(cache.Match(chat, 0).n_tokens, 8);
  big.Clear();
  // A background task matching the chat's prefix does not demote it.
  cache.Match(chat, 3);
  KvSequence c(*pool);
  Prefill(c, 8);
  cache.Insert(Tokens(8, 90), c, 2);
  c.Clear();
  EXPECT_TRUE(cache.EvictOne(1));
  EXPECT_EQ(cache.Match(chat, 0).n_tokens, 8);
  EXPECT_EQ(cache.Match(Tokens(8, 90), 2).n_tokens, 4) << "the deeper block of rank 2 went first";
  EXPECT_TRUE(cache.EvictOne(0));
  EXPECT_EQ(cache.Match(Tokens(8, 90), 2).n_tokens, 0);
  EXPECT_EQ(cache.Match(chat, 0).n_tokens, 8) << "rank 2 goes entirely before rank 0 starts";
  EXPECT_TRUE(cache.EvictOne(0));
  EXPECT_EQ(cache.Match(chat, 0).n_tokens, 4);
}

std::unique_ptr<SnapshotStore> RamStore() {
  SnapshotStoreOptions o;
  o.ram_budget_bytes = 1u << 20;
  o.warn = [](std::string_view) {};
  return std::move(SnapshotStore::Create(o).value());
}

// Distinct bytes in every block of a sequence, so a copy back is checkable.
std::vector<std::vector<uint8_t>> Fill(KvPool& pool, const KvSequence& seq, uint8_t seed) {
  std::vector<std::vector<uint8_t>> bytes;
  for (KvBlockId b : seq.blocks()) {
    uint8_t* data = pool.block_data(b);
    for (size_t i = 0; i < pool.layout().block_bytes(); ++i) data[i] = static_cast<uint8_t>(seed + 7 * i + b);
    bytes.emplace_back(data, data + pool.layout().block_bytes());
  }
  return bytes;
}

// What the pool reclaims of the chat's prefix (rank 0) is spilled, and comes
// back byte for byte once there is room; a background prefix is just lost.
TEST(PrefixCacheTest, ReclaimedForegroundPrefixesAreSpilledAndCopiedBackWhenThereIsRoom) {
  auto pool = MakePool(6);
  auto store = RamStore();
  PrefixCache cache(*pool);
  cache.EnableSpill(*store, 0);
  const std::vector<int32_t> chat = Tokens(8, 1), index = Tokens(8, 50);
  std::vector<std::vector<uint8_t>> chat_bytes;
  {
    KvSequence a(*pool), b(*pool);
    Prefill(a, 8);
    Prefill(b, 8);
    chat_bytes = Fill(*pool, a, 3);
    cache.Insert(chat, a, 0);
    cache.Insert(index, b, 3);
  }
  KvSequence big(*pool);
  Prefill(big, 24);  // every block: both prefixes are reclaimed
  EXPECT_EQ(cache.n_blocks(), 0);
  EXPECT_EQ(cache.spills(), 2) << "the chat's two blocks; the background's are dropped";
  EXPECT_EQ(cache.spilled_bytes(), 2 * pool->layout().block_bytes());
  EXPECT_EQ(cache.Match(chat, 0).n_tokens, 0) << "no free block: nothing comes back, nothing is taken";
  EXPECT_EQ(big.n_tokens(), 24);

  big.Clear();
  PrefixMatch m = cache.Match(chat, 0);
  ASSERT_EQ(m.n_tokens, 8);
  EXPECT_EQ(cache.restores(), 2);
  EXPECT_EQ(cache.spilled_bytes(), 0u);
  EXPECT_EQ(store->ram_bytes(), 0u) << "the store gave the copies back";
  for (size_t i = 0; i < m.blocks.size(); ++i) {
    const uint8_t* data = pool->block_data(m.blocks[i]);
    EXPECT_EQ(std::vector<uint8_t>(data, data + pool->layout().block_bytes()), chat_bytes[i]) << "block " << i;
  }
  EXPECT_EQ(cache.Match(index, 3).n_tokens, 0);
}

// Giving memory back on purpose (EvictOne: trim-memory) spills nothing; a
// damaged copy is never used, the prefix is then recomputed.
TEST(PrefixCacheTest, DeliberateDropsDoNotSpillAndADamagedSpillIsNotUsed) {
  auto pool = MakePool(4);
  auto store = RamStore();
  PrefixCache cache(*pool);
  cache.EnableSpill(*store, 0);
  const std::vector<int32_t> chat = Tokens(8, 1);
  auto insert = [&] {
    KvSequence a(*pool);
    Prefill(a, 8);
    Fill(*pool, a, 9);
    cache.Insert(chat, a, 0);
  };
  insert();
  EXPECT_TRUE(cache.EvictOne(0));
  EXPECT_TRUE(cache.EvictOne(0));
  EXPECT_EQ(cache.spills(), 0);

  insert();
  {
    KvSequence big(*pool);
    Prefill(big, 16);
    ASSERT_EQ(cache.spills(), 2);
    // The first spill's frame (store keys of spills start at 2^62): the
    // deeper block, as chains are evicted from their ends.
    std::span<uint8_t> frame = store->RamFrameForTesting(1ULL << 62);
    ASSERT_FALSE(frame.empty());
    frame[frame.size() - 3] ^= 0x10;
  }
  EXPECT_EQ(cache.Match(chat, 0).n_tokens, 4) << "the second block's copy is damaged: the chain stops there";
  EXPECT_EQ(cache.restores(), 1);
  insert();  // the second block recomputed
  EXPECT_EQ(cache.spilled_bytes(), 0u);

  {
    KvSequence big(*pool);
    Prefill(big, 16);
  }
  ASSERT_EQ(cache.spilled_bytes(), 2 * pool->layout().block_bytes());
  insert();  // recomputed before it was matched: the copies are stale and go
  EXPECT_EQ(cache.spilled_bytes(), 0u);
  EXPECT_EQ(store->ram_bytes(), 0u);
}

TEST(PrefixCacheTest, EvictsTheEndOfAChainBeforeItsStart) {
  auto pool = MakePool(3);
  PrefixCache cache(*pool);
  const std::vector<int32_t> p = Tokens(12, 1);
  {
    KvSequence a(*pool);
    Prefill(a, 12);
    cache.Insert(p, a);
  }
  KvSequence s(*pool);
  Prefill(s, 4);  // one eviction
  EXPECT_EQ(cache.Match(p).n_tokens, 8) << "the last block went first";
}

// Layers 0, 1 windowed (window 6), layer 2 full: one slice each.
std::unique_ptr<KvPool> MakeWindowedPool(int32_t blocks) {
  KvPoolOptions o;
  o.layout = KvLayout{3, 1, 2, 4};
  o.layout.window = 6;
  o.layout.window_period = 3;
  o.capacity_bytes = blocks * o.layout.block_bytes();
  return std::move(KvPool::Create(o).value());
}

TEST(PrefixCacheTest, APrefixWhoseWindowWasNotKeptIsCutBackAndSaysSo) {
  auto pool = MakeWindowedPool(64);
  PrefixCache cache(*pool);
  const std::vector<int32_t> prompt = Tokens(12, 1);
  KvSequence a(*pool);
  Prefill(a, 20);  // the query at 20 sees 15..19: runs 0-2 of the windowed layers are gone
  EXPECT_EQ(cache.Insert(prompt, a), 12);
  PrefixMatch m = cache.Match(prompt);
  EXPECT_EQ(m.n_tokens, 0);
  EXPECT_EQ(m.window_cut, 12);
  EXPECT_TRUE(m.blocks.empty());
}

TEST(PrefixCacheTest, APinnedWindowMakesALongPrefixReusable) {
  auto pool = MakeWindowedPool(64);
  const KvLayout& l = pool->layout();
  PrefixCache cache(*pool);
  const std::vector<int32_t> prompt = Tokens(12, 1);
  KvSequence a(*pool);
  a.PinWindow(12);  // the prefix and a turn after it in one step, as the engine runs them
  Prefill(a, 20);
  EXPECT_EQ(cache.Insert(prompt, a), 12);
  a.UnpinWindow();
  PrefixMatch m = cache.Match(prompt);
  EXPECT_EQ(m.n_tokens, 12);
  EXPECT_EQ(m.window_cut, 0);
  ASSERT_EQ(m.blocks.size(), 3u * l.n_slices());
  // A continuation from 12 reads 7..11: runs 1 and 2; run 0 is kept by no one.
  EXPECT_EQ(m.blocks[0 * 3 + 1], KvSequence::kNoBlock);
  EXPECT_NE(m.blocks[1 * 3 + 1], KvSequence::kNoBlock);
  KvSequence b(*pool);
  b.AttachShared(m.blocks, m.n_tokens);
  Prefill(b, 1);  // position 12 starts run 3
  EXPECT_EQ(b.n_tokens(), 13);

  // A sequence that still has the windowed rows of a shorter prefix fills
  // them in, so that prefix is reusable too.
  const std::vector<int32_t> shorter = Tokens(8, 1);
  EXPECT_EQ(cache.Match(shorter).window_cut, 8);
  KvSequence c(*pool);
  Prefill(c, 8);
  EXPECT_EQ(cache.Insert(shorter, c), 8);
  EXPECT_EQ(cache.Match(shorter).n_tokens, 8);
  EXPECT_EQ(cache.Match(shorter).blocks[0 * 3 + 1], c.blocks()[0 * 3 + 1]);
}

}  // namespace
}  // namespace valet
