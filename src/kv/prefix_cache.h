// Cached KV blocks of shared prompt prefixes (static system prompts), matched
// by token ids block by block.
//
// Why a hash chain rather than a radix tree: sharing happens in whole blocks
// (a block is the unit the pool reference-counts), so a token-granular tree
// would buy nothing; keying each block by hash(parent key, its tokens) makes
// every block an independent entry found in O(1), with no tree to rebalance
// when single blocks are evicted. Entries store their tokens and parent key,
// so a hash collision can never produce a false match. The last, partly
// filled block of a prefix is an entry of its own (keyed by its shorter token
// run); sequences copy it before writing into it (KvSequence::Reserve), so the
// cache's blocks are never modified.
//
// With windowed layers (KvLayout) an entry holds one block per layer slice,
// and a windowed slice's block only while some sequence still had it when the
// entry was inserted or refreshed: a prefix longer than the window keeps its
// windowed rows for the last window positions only, which is all a sequence
// continuing from its end reads. A match is used only up to a length whose
// window is complete; a longer one found without it is cut back (and says so:
// PrefixMatch::window_cut), since a sequence cannot attend to rows nobody kept.
//
// The cache holds one reference to each of its blocks. A block whose only
// reference is the cache's is unused; when the pool runs dry it asks the cache
// (as its KvReclaimer) to evict unused entries, least recently used first and,
// among those, deepest first so chains shrink from their ends.
//
// An entry the pool takes back that way is lost work for whoever comes next,
// and for the foreground chat's system prompt that is the user's next turn.
// With EnableSpill, such entries of low enough rank are copied to the
// snapshot store first (raw block bytes, RAM tier first, the disk when RAM is
// full) and a later Match that misses them copies them back into free blocks:
// a memcpy instead of a prefill, with bit-identical rows. Deliberate drops
// (EvictOne: trim-memory, giving memory back) do not spill.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/kv_pool.h"
#include "kv/snapshot_store.h"

namespace valet {

struct PrefixMatch {
  std::vector<KvBlockId> blocks;  // holding positions [0, n_tokens), in KvSequence::blocks()' order
  int32_t n_tokens = 0;
  // Tokens found after n_tokens but left out: the windowed layers' rows their
  // continuation would read were not kept.
  int32_t window_cut = 0;
};

class PrefixCache : public KvReclaimer {
 public:
  // Registers itself as the pool's reclaimer; the pool must outlive the cache.
  explicit PrefixCache(KvPool& pool);
  ~PrefixCache() override;
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The longest cached run of whole blocks of `tokens`, followed by the cached
  // partial block that ends `tokens` exactly, if any, and cut back to where
  // the windowed slices' blocks cover the window. Marks them recently used.
  // `rank` as SequenceSpec::prefix_rank: entries keep the lowest they were
  // matched or inserted with. Spilled entries on the way come back when the
  // pool has free blocks for them (never by reclaiming others).
  PrefixMatch Match(std::span<const int32_t> tokens, int32_t rank = 0);

  // Caches seq's blocks for positions [0, tokens.size()), which must hold the
  // KV of `tokens` (seq->n_tokens() >= tokens.size()). Blocks already cached
  // stay as they are; windowed blocks an entry lacks are taken from seq when
  // it has them. Returns how many leading tokens are now cached.
  int32_t Insert(std::span<const int32_t> tokens, const KvSequence& seq, int32_t rank = 0);

  // Evicts one unused entry of rank >= min_rank: the highest rank, then the
  // least recently used, then the deepest. False when there is none.
  bool EvictOne(int32_t min_rank);
  // The pool ran dry: as EvictOne(0), spilling the victim when it may.
  bool ReclaimOne() override;

  // Entries of rank <= max_rank that the pool reclaims are spilled to
  // `store` (which must outlive the cache), within as many bytes as the pool
  // holds; the oldest spills go first.
  void EnableSpill(SnapshotStore& store, int32_t max_rank);

  int32_t n_blocks() const { return static_cast<int32_t>(entries_.size()); }
  // Cached blocks that only the cache references.
  int32_t unused_blocks() const;
  int64_t evictions() const { return evictions_; }
  int64_t spills() const { return spills_; }
  int64_t restores() const { return restores_; }
  size_t spilled_bytes() const { return spilled_bytes_; }

 private:
  struct Entry {
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
    std::vector<KvBlockId> blocks;  // one per layer slice; KvSequence::kNoBlock for a windowed block not kept
    int32_t depth = 0;
    uint64_t last_used = 0;
    int32_t rank = 0;
  };

  // An evicted entry kept in the snapshot store.
  struct Spilled {
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
    std::vector<bool> present;  // per slice: whether the entry had the block
    int32_t depth = 0;
    int32_t rank = 0;
    uint64_t store_key = 0;
    uint64_t spilled_at = 0;  // clock_ when spilled
    size_t bytes = 0;
  };

  static uint64_t ChainKey(uint64_t parent, std::span<const int32_t> tokens);
  // The next entry to go for EvictOne(min_rank), or entries_.end().
  std::unordered_map<uint64_t, Entry>::iterator Victim(int32_t min_rank);
  void Remove(std::unordered_map<uint64_t, Entry>::iterator it);
  // Copies an entry about to be evicted to the store (when it may and fits).
  void Spill(uint64_t key, const Entry& e);
  // Brings back the spilled entry for `tokens` after `parent`, or nullptr.
  Entry* Restore(uint64_t parent, std::span<const int32_t> tokens, uint64_t key);
  void Forget(std::unordered_map<uint64_t, Spilled>::iterator it);
  // Whether every block of `e` is referenced by the cache alone.
  bool Unused(const Entry& e) const;
  void ReleaseBlocks(const Entry& e);
  // The entry for `tokens` after `parent`, or nullptr.
  Entry* Find(uint64_t parent, std::span<const int32_t> tokens, uint64_t* key);

  KvPool* pool_;
  std::unordered_map<uint64_t, Entry> entries_;
  uint64_t clock_ = 0;
  int64_t evictions_ = 0;
  SnapshotStore* spill_store_ = nullptr;
  int32_t spill_max_rank_ = -1;
  std::unordered_map<uint64_t, Spilled> spilled_;
  size_t spilled_bytes_ = 0;
  uint64_t next_store_key_ = 0;
  int64_t spills_ = 0;
  int64_t restores_ = 0;
};

}  // namespace valet
