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
  if (l.window < 0 || (l.window > 0 && l.window_period < 2)) {
    return InvalidArgument("KV layout's window needs a period of at least 2 layers");
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

Status KvSequence::Reserve(int32_t n) { return Grow(n, 0); }

void KvSequence::Rows(int32_t layer, int32_t kv, int32_t head, int32_t first, int32_t n, const void** rows) {
  const KvLayout& l = pool_->layout();
  const size_t row_bytes = l.row_bytes();
  for (int32_t pos = first, end = first + n; pos < end;) {
    const int32_t in_block = std::min(end, (pos / l.block_tokens + 1) * l.block_tokens) - pos;
    const uint8_t* r = static_cast<const uint8_t*>(row(layer, kv, head, pos));
    for (int32_t i = 0; i < in_block; ++i, r += row_bytes) *rows++ = r;
    pos += in_block;
  }
}

Status KvSequence::Grow(int32_t n, int32_t window_from) {
  if (n <= 0) return Status::Ok();
  const KvLayout& l = pool_->layout();
  const int32_t bt = l.block_tokens;
  const size_t S = static_cast<size_t>(n_slices_);
  const size_t needed = static_cast<size_t>((n_tokens_ + n + bt - 1) / bt) * S;
  const size_t had = blocks_.size();
  const size_t first_windowed = static_cast<size_t>(window_from / bt);  // windowed blocks before it stay out
  auto wanted = [&](size_t i) { return !l.windowed_slice(static_cast<int32_t>(i % S)) || i / S >= first_windowed; };
  // Shared blocks the new positions would write into get private copies;
  // a missing block they would write into (a prefix cached without its
  // window) gets a fresh one. Windowed blocks left out are not written.
  std::vector<std::pair<size_t, KvBlockId>> copies, fresh;  // (index, new block)
  auto undo = [&](const Status& s) {
    for (auto& [index, id] : copies) pool_->Release(id);
    for (auto& [index, id] : fresh) pool_->Release(id);
    while (blocks_.size() > had) {
      if (blocks_.back() != kNoBlock) pool_->Release(blocks_.back());
      blocks_.pop_back();
    }
    return s;
  };
  for (size_t i = static_cast<size_t>(n_tokens_ / bt) * S; i < std::min(had, needed); ++i) {
    if (!wanted(i) || (blocks_[i] != kNoBlock && pool_->ref_count(blocks_[i]) == 1)) continue;
    Result<KvBlockId> id = pool_->Allocate();
    if (!id.ok()) return undo(id.status());
    (blocks_[i] == kNoBlock ? fresh : copies).emplace_back(i, *id);
  }
  while (blocks_.size() < needed) {
    KvBlockId block = kNoBlock;
    if (wanted(blocks_.size())) {
      Result<KvBlockId> id = pool_->Allocate();
      if (!id.ok()) return undo(id.status());
      block = *id;
    }
    blocks_.push_back(block);
  }
  for (auto& [index, id] : copies) {
    std::memcpy(pool_->block_data(id), pool_->block_data(blocks_[index]), l.block_bytes());
    pool_->Release(blocks_[index]);
    blocks_[index] = id;
  }
  for (auto& [index, id] : fresh) blocks_[index] = id;
  return Status::Ok();
}

void KvSequence::AttachShared(std::span<const KvBlockId> blocks, int32_t n_tokens) {
  assert(blocks_.empty() && n_tokens_ == 0 && "AttachShared on a non-empty sequence");
  assert(blocks.size() % n_slices_ == 0);
  assert(static_cast<size_t>(n_tokens) <= blocks.size() / n_slices_ * pool_->layout().block_tokens);
  for (KvBlockId id : blocks) {
    if (id != kNoBlock) pool_->AddRef(id);
  }
  blocks_.assign(blocks.begin(), blocks.end());
  n_tokens_ = n_tokens;
  DropOutOfWindow();
}

void KvSequence::DropOutOfWindow() {
  const KvLayout& l = pool_->layout();
  if (l.window == 0) return;
  const int32_t keep_from = window_pin_ < 0 ? l.window_start(n_tokens_)
                                            : std::min(l.window_start(n_tokens_), l.window_start(window_pin_));
  const int32_t end = keep_from / l.block_tokens;
  for (; window_dropped_ < end; ++window_dropped_) {
    for (int32_t s = l.n_full_slices(); s < n_slices_; ++s) {
      KvBlockId& id = blocks_[static_cast<size_t>(window_dropped_) * n_slices_ + s];
      if (id != kNoBlock) pool_->Release(id);
      id = kNoBlock;
    }
  }
}

// Calls fn(block bytes at the run start, packed byte offset, run length in
// bytes) for every contiguous run of rows moved for positions [begin, end),
// windowed layers' from windowed_begin: one per (block, layer, K/V, head).
template <typename Fn>
void KvSequence::ForEachRun(int32_t begin, int32_t end, int32_t windowed_begin, Fn&& fn) const {
  const KvLayout& l = pool_->layout();
  const size_t row = l.row_bytes();
  size_t at = 0;  // packed offset of the current (layer, K/V, head)'s first row
  for (int32_t layer = 0; layer < l.n_layer; ++layer) {
    const int32_t first = l.windowed(layer) ? windowed_begin : begin;
    const KvLayout::Slot slot = l.slot(layer);
    for (int32_t kv = 0; kv < 2; ++kv) {
      for (int32_t head = 0; head < l.n_kv_head; ++head) {
        for (int32_t pos = first; pos < end;) {
          const int32_t in_block = pos % l.block_tokens;
          const int32_t run = std::min(end - pos, l.block_tokens - in_block);
          const KvBlockId id = blocks_[static_cast<size_t>(pos / l.block_tokens) * n_slices_ + slot.slice];
          assert(id != kNoBlock && "a row the window keeps is gone");
          fn(pool_->block_data(id) + l.slab_byte_offset(slot.sub, kv, head) + in_block * row,
             at + static_cast<size_t>(pos - first) * row, run * row);
          pos += run;
        }
        at += static_cast<size_t>(end - first) * row;
      }
    }
  }
}

void KvSequence::ExportRows(int32_t begin, int32_t end, void* out) const {
  assert(0 <= begin && begin <= end && end <= n_tokens_);
  auto* dst = static_cast<uint8_t*>(out);
  ForEachRun(begin, end, std::max(begin, pool_->layout().window_start(end)),
             [&](const uint8_t* rows, size_t at, size_t bytes) { std::memcpy(dst + at, rows, bytes); });
}

Status KvSequence::ImportRows(int32_t n, const void* in) {
  const int32_t end = n_tokens_ + n;
  const int32_t window_from = pool_->layout().window_start(end);
  VALET_RETURN_IF_ERROR(Grow(n, window_from));
  const auto* src = static_cast<const uint8_t*>(in);
  ForEachRun(n_tokens_, end, std::max(n_tokens_, window_from),
             [&](uint8_t* rows, size_t at, size_t bytes) { std::memcpy(rows, src + at, bytes); });
  Commit(n);
  return Status::Ok();
}

void KvSequence::ExportPendingRows(int32_t n, void* out) const {
  assert(n >= 0 && static_cast<size_t>(n_tokens_ + n) <= blocks_.size() / n_slices_ * pool_->layout().block_tokens);
  auto* dst = static_cast<uint8_t*>(out);
  ForEachRun(n_tokens_, n_tokens_ + n, n_tokens_,
             [&](const uint8_t* rows, size_t at, size_t bytes) { std::memcpy(dst + at, rows, bytes); });
}

Status KvSequence::ImportPendingRows(int32_t n, const void* in) {
  VALET_RETURN_IF_ERROR(Reserve(n));
  const auto* src = static_cast<const uint8_t*>(in);
  ForEachRun(n_tokens_, n_tokens_ + n, n_tokens_,
             [&](uint8_t* rows, size_t at, size_t bytes) { std::memcpy(rows, src + at, bytes); });
  return Status::Ok();
}

void KvSequence::Commit(int32_t n) {
  assert(static_cast<size_t>(n_tokens_ + n) <= blocks_.size() / n_slices_ * pool_->layout().block_tokens);
  n_tokens_ += n;
  DropOutOfWindow();
}

void KvSequence::Clear() {
  for (KvBlockId id : blocks_) {
    if (id != kNoBlock) pool_->Release(id);
  }
  blocks_.clear();
  n_tokens_ = 0;
  window_dropped_ = 0;
  window_pin_ = -1;
}

}  // namespace valet
