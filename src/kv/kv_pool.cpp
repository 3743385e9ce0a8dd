#include "kv/kv_pool.h"

#include <cassert>
#include <new>
#include <string>

namespace valet {

KvPool::KvPool(const KvLayout& layout, int32_t n_blocks)
    : layout_(layout), ref_counts_(n_blocks, 0) {
  free_list_.reserve(n_blocks);
  for (int32_t i = n_blocks - 1; i >= 0; --i) free_list_.push_back(i);
}

Result<std::unique_ptr<KvPool>> KvPool::Create(const KvPoolOptions& options) {
  const KvLayout& l = options.layout;
  if (l.n_layer <= 0 || l.n_kv_head <= 0 || l.head_dim <= 0 || l.block_tokens <= 0) {
    return InvalidArgument("KV layout needs positive layers, heads, head_dim and block size");
  }
  const size_t n_blocks = options.capacity_bytes / l.block_bytes();
  if (n_blocks == 0) {
    return InvalidArgument("KV pool capacity " + std::to_string(options.capacity_bytes) +
                           " bytes is smaller than one block (" + std::to_string(l.block_bytes()) +
                           " bytes)");
  }
  if (n_blocks > INT32_MAX) return InvalidArgument("KV pool has too many blocks");
  std::unique_ptr<KvPool> pool(new KvPool(l, static_cast<int32_t>(n_blocks)));
  pool->storage_.reset(new (std::nothrow) float[n_blocks * l.block_floats()]);
  if (!pool->storage_) {
    return ResourceExhausted("cannot allocate a KV pool of " + std::to_string(n_blocks * l.block_bytes()) +
                             " bytes");
  }
  return pool;
}

Result<KvBlockId> KvPool::Allocate() {
  if (free_list_.empty()) {
    return ResourceExhausted("KV pool is full (" + std::to_string(capacity_blocks()) + " blocks)");
  }
  KvBlockId id = free_list_.back();
  free_list_.pop_back();
  ref_counts_[id] = 1;
  return id;
}

void KvPool::AddRef(KvBlockId id) {
  assert(ref_counts_[id] > 0 && "AddRef on a free block");
  ++ref_counts_[id];
}

void KvPool::Release(KvBlockId id) {
  assert(ref_counts_[id] > 0 && "Release on a free block");
  if (--ref_counts_[id] == 0) free_list_.push_back(id);
}

Status KvSequence::Reserve(int32_t n) {
  const int32_t bt = pool_->layout().block_tokens;
  const int32_t needed = (n_tokens_ + n + bt - 1) / bt;
  const size_t had = blocks_.size();
  while (static_cast<int32_t>(blocks_.size()) < needed) {
    Result<KvBlockId> id = pool_->Allocate();
    if (!id.ok()) {
      while (blocks_.size() > had) {
        pool_->Release(blocks_.back());
        blocks_.pop_back();
      }
      return id.status();
    }
    blocks_.push_back(*id);
  }
  return Status::Ok();
}

void KvSequence::Commit(int32_t n) {
  assert(static_cast<size_t>(n_tokens_ + n) <= blocks_.size() * pool_->layout().block_tokens);
  n_tokens_ += n;
}

void KvSequence::Clear() {
  for (KvBlockId id : blocks_) pool_->Release(id);
  blocks_.clear();
  n_tokens_ = 0;
}

}  // namespace valet
