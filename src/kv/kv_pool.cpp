#include "kv/kv_pool.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <new>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace valet {

KvPool::KvPool(const KvLayout& layout, int32_t n_reserved) : layout_(layout), ref_counts_(n_reserved, 0) {}

KvPool::~KvPool() {
  if (storage_ != nullptr) munmap(storage_, storage_bytes_);
}

Result<std::unique_ptr<KvPool>> KvPool::Create(const KvPoolOptions& options) {
  const KvLayout& l = options.layout;
  if (l.n_layer <= 0 || l.n_kv_head <= 0 || l.head_dim <= 0 || l.block_tokens <= 0) {
    return InvalidArgument("KV layout needs positive layers, heads, head_dim and block size");
  }
  if (!KvTypeFits(l.type, l.head_dim)) {
    return InvalidArgument(std::string("KV type ") + KvTypeName(l.type) + " stores rows in blocks of " +
                           std::to_string(kKvQ8_0Block) + " elements, but this model's head_dim is " +
                           std::to_string(l.head_dim) + "; use --kv-type f16 or f32");
  }
  const size_t n_blocks = options.capacity_bytes / l.block_bytes();
  if (n_blocks == 0) {
    return InvalidArgument("KV pool capacity " + std::to_string(options.capacity_bytes) +
                           " bytes is smaller than one block (" + std::to_string(l.block_bytes()) +
                           " bytes)");
  }
  const size_t max_bytes = options.max_capacity_bytes > 0 ? options.max_capacity_bytes : 4 * options.capacity_bytes;
  const size_t n_reserved = std::max(n_blocks, max_bytes / l.block_bytes());
  if (n_reserved > INT32_MAX) return InvalidArgument("KV pool has too many blocks");
  std::unique_ptr<KvPool> pool(new KvPool(l, static_cast<int32_t>(n_reserved)));
  // Reserved, not committed: only the pages blocks are written to become memory.
  pool->storage_bytes_ = n_reserved * l.block_bytes();
  void* p = mmap(nullptr, pool->storage_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    return ResourceExhausted("cannot reserve a KV pool of " + std::to_string(pool->storage_bytes_) + " bytes");
  }
  pool->storage_ = static_cast<uint8_t*>(p);
  VALET_RETURN_IF_ERROR(pool->SetCapacity(options.capacity_bytes));
  return pool;
}

Status KvPool::SetCapacity(size_t bytes) {
  const size_t n = bytes / layout_.block_bytes();
  if (n == 0) {
    return InvalidArgument("KV pool capacity " + std::to_string(bytes) + " bytes is smaller than one block (" +
                           std::to_string(layout_.block_bytes()) + " bytes)");
  }
  if (n > ref_counts_.size()) {
    return OutOfRange("KV pool capacity " + std::to_string(bytes) + " bytes is over the " +
                      std::to_string(max_capacity_bytes()) + " bytes reserved at start-up");
  }
  const auto end = static_cast<int32_t>(n);
  if (end < capacity_blocks_) {
    std::erase_if(free_list_, [&](KvBlockId id) { return id >= end; });
    Discard(end, capacity_blocks_);
  }
  // Grown blocks go below the free list's top, so warm blocks stay first.
  std::vector<KvBlockId> grown;
  for (KvBlockId id = end - 1; id >= capacity_blocks_; --id) {
    if (ref_counts_[id] == 0) grown.push_back(id);
  }
  free_list_.insert(free_list_.begin(), grown.begin(), grown.end());
  capacity_blocks_ = end;
  return Status::Ok();
}

void KvPool::Discard(KvBlockId first, KvBlockId end) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const size_t block = layout_.block_bytes();
  for (KvBlockId run = first; run < end;) {
    if (ref_counts_[run] != 0) {  // in use: its pages stay until it is released
      ++run;
      continue;
    }
    KvBlockId run_end = run;
    while (run_end < end && ref_counts_[run_end] == 0) ++run_end;
    const auto lo = (reinterpret_cast<uintptr_t>(block_data(run)) + page - 1) / page * page;
    const auto hi = reinterpret_cast<uintptr_t>(storage_ + static_cast<size_t>(run_end) * block) / page * page;
    if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
    run = run_end;
  }
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
  ++used_blocks_;
  return id;
}

void KvPool::AddRef(KvBlockId id) {
  assert(ref_counts_[id] > 0 && "AddRef on a free block");
  ++ref_counts_[id];
}

void KvPool::Release(KvBlockId id) {
  assert(ref_counts_[id] > 0 && "Release on a free block");
  if (--ref_counts_[id] != 0) return;
  --used_blocks_;
  if (id < capacity_blocks_) {
    free_list_.push_back(id);
  } else {
    Discard(id, id + 1);  // past a shrunk capacity: out of the pool
  }
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
  const size_t row = l.row_bytes();
  for (int32_t pos = begin; pos < end;) {
    const int32_t in_block = pos % l.block_tokens;
    const int32_t run = std::min(end - pos, l.block_tokens - in_block);
    uint8_t* block = pool_->block_data(blocks_[pos / l.block_tokens]);
    for (int32_t layer = 0; layer < l.n_layer; ++layer) {
      for (int32_t kv = 0; kv < 2; ++kv) {
        for (int32_t head = 0; head < l.n_kv_head; ++head) {
          const size_t slab = (static_cast<size_t>(layer) * 2 + kv) * l.n_kv_head + head;
          fn(block + l.slab_byte_offset(layer, kv, head) + in_block * row,
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
