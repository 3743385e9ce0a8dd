#include "kv/kv_pool.h"

#include <algorithm>
#include <cassert>
#include <cstring>
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
  pool->storage_.reset(new (std::nothrow) uint8_t[n_blocks * l.block_bytes()]);
  if (!pool->storage_) {
    return ResourceExhausted("cannot allocate a KV pool of " + std::to_string(n_blocks * l.block_bytes()) +
                             " bytes");
  }
  return pool;
}

Result<KvBlockId> KvPool::Allocate() {
  while (free_list_.empty() && reclaimer_ != nullptr && reclaimer_->ReclaimOne()) {
  }
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
  if (n <= 0) return Status::Ok();
  const KvLayout& l = pool_->layout();
  const int32_t bt = l.block_tokens;
  const int32_t needed = (n_tokens_ + n + bt - 1) / bt;
  const size_t had = blocks_.size();
  // Shared blocks the new positions would write into get private copies.
  std::vector<std::pair<size_t, KvBlockId>> copies;  // (index, new block)
  auto undo = [&](const Status& s) {
    for (auto& [index, id] : copies) pool_->Release(id);
    while (blocks_.size() > had) {
      pool_->Release(blocks_.back());
      blocks_.pop_back();
    }
    return s;
  };
  const size_t first = static_cast<size_t>(n_tokens_ / bt);
  for (size_t i = first; i < std::min(had, static_cast<size_t>(needed)); ++i) {
    if (pool_->ref_count(blocks_[i]) == 1) continue;
    Result<KvBlockId> id = pool_->Allocate();
    if (!id.ok()) return undo(id.status());
    copies.emplace_back(i, *id);
  }
  while (static_cast<int32_t>(blocks_.size()) < needed) {
    Result<KvBlockId> id = pool_->Allocate();
    if (!id.ok()) return undo(id.status());
    blocks_.push_back(*id);
  }
  for (auto& [index, id] : copies) {
    std::memcpy(pool_->block_data(id), pool_->block_data(blocks_[index]), l.block_bytes());
    pool_->Release(blocks_[index]);
    blocks_[index] = id;
  }
  return Status::Ok();
}

void KvSequence::AttachShared(std::span<const KvBlockId> blocks, int32_t n_tokens) {
  assert(blocks_.empty() && n_tokens_ == 0 && "AttachShared on a non-empty sequence");
  assert(static_cast<size_t>(n_tokens) <= blocks.size() * pool_->layout().block_tokens);
  for (KvBlockId id : blocks) pool_->AddRef(id);
  blocks_.assign(blocks.begin(), blocks.end());
  n_tokens_ = n_tokens;
}

// Calls fn(block bytes at the run start, packed byte offset, run length in
// bytes) for every contiguous run of rows of positions [begin, end): one per
// (block, layer, K/V, head).
template <typename Fn>
void KvSequence::ForEachRun(int32_t begin, int32_t end, Fn&& fn) const {
  const KvLayout& l = pool_->layout();
  const int32_t n = end - begin;
  const size_t row = static_cast<size_t>(l.head_dim) * l.elem_bytes();
  for (int32_t pos = begin; pos < end;) {
    const int32_t in_block = pos % l.block_tokens;
    const int32_t run = std::min(end - pos, l.block_tokens - in_block);
    uint8_t* block = pool_->block_data(blocks_[pos / l.block_tokens]);
    for (int32_t layer = 0; layer < l.n_layer; ++layer) {
      for (int32_t kv = 0; kv < 2; ++kv) {
        for (int32_t head = 0; head < l.n_kv_head; ++head) {
          const size_t slab = (static_cast<size_t>(layer) * 2 + kv) * l.n_kv_head + head;
          fn(block + l.slab_offset(layer, kv, head) * l.elem_bytes() + in_block * row,
             (slab * n + (pos - begin)) * row, run * row);
        }
      }
    }
    pos += run;
  }
}

void KvSequence::ExportRows(int32_t begin, int32_t end, void* out) const {
  assert(0 <= begin && begin <= end && end <= n_tokens_);
  auto* dst = static_cast<uint8_t*>(out);
  ForEachRun(begin, end, [&](const uint8_t* rows, size_t at, size_t bytes) { std::memcpy(dst + at, rows, bytes); });
}

void KvSequence::ImportRows(int32_t n, const void* in) {
  assert(static_cast<size_t>(n_tokens_ + n) <= blocks_.size() * pool_->layout().block_tokens);
  const auto* src = static_cast<const uint8_t*>(in);
  ForEachRun(n_tokens_, n_tokens_ + n, [&](uint8_t* rows, size_t at, size_t bytes) { std::memcpy(rows, src + at, bytes); });
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
