// A paged pool of KV blocks with a byte budget.
//
// The pool owns the memory; sequences own block tables (KvSequence). Blocks
// are reference-counted so that later a cached system prompt can be shared by
// many sequences and snapshot/eviction can hand blocks back individually.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/kv_layout.h"
#include "valet/status.h"

namespace valet {

using KvBlockId = int32_t;

struct KvPoolOptions {
  KvLayout layout;
  size_t capacity_bytes = 256u << 20;  // a phone-sized default
};

class KvPool {
 public:
  static Result<std::unique_ptr<KvPool>> Create(const KvPoolOptions& options);

  const KvLayout& layout() const { return layout_; }
  int32_t capacity_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t free_blocks() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t used_blocks() const { return capacity_blocks() - free_blocks(); }
  size_t capacity_bytes() const { return capacity_blocks() * layout_.block_bytes(); }
  size_t used_bytes() const { return used_blocks() * layout_.block_bytes(); }

  // A block with reference count 1, or ResourceExhausted.
  Result<KvBlockId> Allocate();
  void AddRef(KvBlockId id);
  // Drops one reference; the block returns to the free list at zero.
  void Release(KvBlockId id);
  int32_t ref_count(KvBlockId id) const { return ref_counts_[id]; }

  float* block_data(KvBlockId id) { return storage_.get() + static_cast<size_t>(id) * layout_.block_floats(); }
  const float* block_data(KvBlockId id) const {
    return storage_.get() + static_cast<size_t>(id) * layout_.block_floats();
  }

 private:
  KvPool(const KvLayout& layout, int32_t n_blocks);

  KvLayout layout_;
  std::unique_ptr<float[]> storage_;  // [n_blocks][block_floats]
  std::vector<int32_t> ref_counts_;   // [n_blocks]
  std::vector<KvBlockId> free_list_;  // LIFO: recently freed blocks are warm in cache
};

// One sequence's view of the pool: its block table and how many positions are
// filled. Positions are contiguous from 0.
class KvSequence {
 public:
  explicit KvSequence(KvPool& pool) : pool_(&pool) {}
  ~KvSequence() { Clear(); }
  KvSequence(const KvSequence&) = delete;
  KvSequence& operator=(const KvSequence&) = delete;

  int32_t n_tokens() const { return n_tokens_; }
  const std::vector<KvBlockId>& blocks() const { return blocks_; }
  KvPool& pool() const { return *pool_; }

  // Makes room for `n` more positions, allocating blocks; on failure nothing changes.
  Status Reserve(int32_t n);
  // Marks `n` reserved positions as filled (after the forward pass wrote them).
  void Commit(int32_t n);
  // Releases every block; the sequence is empty again.
  void Clear();

  // Start of the head_dim floats for (layer, kv, head, position).
  float* row(int32_t layer, int32_t kv, int32_t head, int32_t pos) {
    const KvLayout& l = pool_->layout();
    return pool_->block_data(blocks_[pos / l.block_tokens]) + l.slab_offset(layer, kv, head) +
           static_cast<size_t>(pos % l.block_tokens) * l.head_dim;
  }

 private:
  KvPool* pool_;
  std::vector<KvBlockId> blocks_;
  int32_t n_tokens_ = 0;
};

}  // namespace valet
