// A paged pool of KV blocks with a byte budget.
//
// The pool owns the memory; sequences own block tables (KvSequence). Blocks
// are reference-counted: a cached system prompt (PrefixCache) is shared by
// many sequences, and a sequence copies a shared block before it writes into
// it (copy on write), so shared blocks are never modified.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv/kv_layout.h"
#include "valet/status.h"

namespace valet {

using KvBlockId = int32_t;

// Gives blocks back to the pool when it runs dry (the prefix cache evicting
// prefixes no sequence uses).
class KvReclaimer {
 public:
  virtual ~KvReclaimer() = default;
  // Releases at least one block to the pool if it can; false when it cannot.
  virtual bool ReclaimOne() = 0;
};

struct KvPoolOptions {
  KvLayout layout;
  size_t capacity_bytes = 256u << 20;  // a phone-sized default
  // Address space reserved for growing the pool at run time (SetCapacity);
  // only pages that blocks use ever become memory. 0: 4 x capacity_bytes.
  size_t max_capacity_bytes = 0;
};

class KvPool {
 public:
  static Result<std::unique_ptr<KvPool>> Create(const KvPoolOptions& options);

  ~KvPool();
  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  const KvLayout& layout() const { return layout_; }
  int32_t capacity_blocks() const { return capacity_blocks_; }
  int32_t free_blocks() const { return static_cast<int32_t>(free_list_.size()); }
  // May exceed capacity_blocks() for a while after SetCapacity shrank the pool.
  int32_t used_blocks() const { return used_blocks_; }
  size_t capacity_bytes() const { return static_cast<size_t>(capacity_blocks()) * layout_.block_bytes(); }
  size_t used_bytes() const { return static_cast<size_t>(used_blocks()) * layout_.block_bytes(); }
  size_t max_capacity_bytes() const { return ref_counts_.size() * layout_.block_bytes(); }

  // A new budget, in whole blocks, up to max_capacity_bytes(). Shrinking
  // never touches a block in use: blocks past the new end leave the pool (and
  // their pages go back to the OS) as they are released.
  Status SetCapacity(size_t bytes);

  // A block with reference count 1, or ResourceExhausted. When no block is
  // free the reclaimer (if any) is asked for one first.
  Result<KvBlockId> Allocate();
  void set_reclaimer(KvReclaimer* reclaimer) { reclaimer_ = reclaimer; }
  void AddRef(KvBlockId id);
  // Drops one reference; the block returns to the free list at zero.
  void Release(KvBlockId id);
  int32_t ref_count(KvBlockId id) const { return ref_counts_[id]; }

  uint8_t* block_data(KvBlockId id) { return storage_ + static_cast<size_t>(id) * layout_.block_bytes(); }
  const uint8_t* block_data(KvBlockId id) const { return storage_ + static_cast<size_t>(id) * layout_.block_bytes(); }

 private:
  KvPool(const KvLayout& layout, int32_t n_reserved);
  // Returns the pages wholly inside blocks [first, end) to the OS.
  void Discard(KvBlockId first, KvBlockId end);

  KvLayout layout_;
  uint8_t* storage_ = nullptr;        // [n_reserved][block_bytes], an anonymous mapping
  size_t storage_bytes_ = 0;
  std::vector<int32_t> ref_counts_;   // [n_reserved]
  std::vector<KvBlockId> free_list_;  // LIFO: recently freed blocks are warm in cache; ids < capacity only
  int32_t capacity_blocks_ = 0;
  int32_t used_blocks_ = 0;
  KvReclaimer* reclaimer_ = nullptr;
};

// One sequence's view of the pool: its block table and how many positions are
// filled. Positions are contiguous from 0. The table holds, for each run of
// block_tokens positions, one block per layer slice (KvLayout); a windowed
// slice's blocks are released as soon as no later query can see them
// (kNoBlock in the table), so a windowed layer holds a ring of about
// window / block_tokens + 1 blocks that the pool's free list recycles.
class KvSequence {
 public:
  static constexpr KvBlockId kNoBlock = -1;

  explicit KvSequence(KvPool& pool) : pool_(&pool) {}
  ~KvSequence() { Clear(); }
  KvSequence(const KvSequence&) = delete;
  KvSequence& operator=(const KvSequence&) = delete;

  int32_t n_tokens() const { return n_tokens_; }
  // [block index][slice]: the block holding positions [i * block_tokens, (i + 1) * block_tokens)
  // of slice s is blocks()[i * n_slices + s]; kNoBlock where a windowed slice let it go.
  const std::vector<KvBlockId>& blocks() const { return blocks_; }
  KvPool& pool() const { return *pool_; }

  // Makes room for `n` more positions, allocating blocks and copying any
  // shared block the new positions fall into (copy on write); on failure
  // nothing changes.
  Status Reserve(int32_t n);
  // Marks `n` reserved positions as filled (after the forward pass wrote
  // them) and releases the windowed blocks that fell out of the window.
  void Commit(int32_t n);
  // Releases every block; the sequence is empty again (and unpinned).
  void Clear();
  // Until UnpinWindow(), windowed blocks that a continuation from position
  // `end` needs are kept too: a prompt's shared prefix is computed in the
  // same step as what follows it, and the prefix cache takes its blocks
  // after that step. Only blocks not yet released can be kept.
  void PinWindow(int32_t end) { window_pin_ = end; }
  void UnpinWindow() {
    window_pin_ = -1;
    DropOutOfWindow();
  }
  // Starts an empty sequence on shared blocks holding positions [0, n_tokens),
  // in blocks()' order (kNoBlock allowed before the window): the blocks gain a
  // reference each.
  void AttachShared(std::span<const KvBlockId> blocks, int32_t n_tokens);

  // Copies the K and V rows of filled positions [begin, end) out as
  // [n_layer][K|V][n_kv_head][rows] of the pool's type, where a full layer
  // has end - begin rows and a windowed layer only those from
  // max(begin, window_start(end)): what the sequence needs to go on from end.
  // KvLayout::rows_bytes(begin, end) bytes.
  void ExportRows(int32_t begin, int32_t end, void* out) const;
  // Appends `n` positions from rows in ExportRows' order (for positions
  // [n_tokens(), n_tokens() + n)): reserves, writes and commits them, a
  // windowed slice taking blocks only for what its window keeps. On failure
  // (the pool is full) nothing changes.
  Status ImportRows(int32_t n, const void* in);
  // The rows of the `n` positions past the committed length that a stopped
  // step wrote (StepCut), every layer's, windowed ones included:
  // n * KvLayout::token_bytes() bytes in ExportRows' order.
  void ExportPendingRows(int32_t n, void* out) const;
  // Reserves those positions again and writes their rows back, committing
  // nothing. On failure (the pool is full) nothing changes.
  Status ImportPendingRows(int32_t n, const void* in);

  // Start of the row of head_dim elements (of the pool's KvType) for (layer, kv, head, position).
  void* row(int32_t layer, int32_t kv, int32_t head, int32_t pos) {
    const KvLayout& l = pool_->layout();
    const KvLayout::Slot s = l.slot(layer);
    return pool_->block_data(blocks_[static_cast<size_t>(pos / l.block_tokens) * n_slices_ + s.slice]) +
           l.slab_byte_offset(s.sub, kv, head) + static_cast<size_t>(pos % l.block_tokens) * l.row_bytes();
  }
  // rows[i] = row(layer, kv, head, first + i) for i in [0, n), a block at a
  // time: attention gathers every key row of a head per block of queries.
  void Rows(int32_t layer, int32_t kv, int32_t head, int32_t first, int32_t n, const void** rows);

 private:
  // Reserve, with a windowed slice's blocks before position `window_from` left out.
  Status Grow(int32_t n, int32_t window_from);
  // Releases windowed blocks wholly before window_start(n_tokens_).
  void DropOutOfWindow();
  // Copies rows between this sequence's blocks and a packed buffer: windowed
  // layers' from windowed_begin on.
  template <typename Fn>
  void ForEachRun(int32_t begin, int32_t end, int32_t windowed_begin, Fn&& fn) const;

  KvPool* pool_;
  int32_t n_slices_ = pool_->layout().n_slices();
  std::vector<KvBlockId> blocks_;
  int32_t n_tokens_ = 0;
  int32_t window_dropped_ = 0;  // leading block indices whose windowed blocks are gone
  int32_t window_pin_ = -1;     // PinWindow's position, -1: none
};

}  // namespace valet
