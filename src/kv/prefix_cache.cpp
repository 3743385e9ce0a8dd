#include "kv/prefix_cache.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace valet {
namespace {

constexpr uint64_t kRootKey = 0x9e3779b97f4a7c15ULL;
// Spilled entries' store keys, above any sequence id the store also holds.
constexpr uint64_t kSpillKeyBase = 1ULL << 62;

uint64_t Mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

PrefixCache::PrefixCache(KvPool& pool) : pool_(&pool) { pool_->set_reclaimer(this); }

PrefixCache::~PrefixCache() {
  pool_->set_reclaimer(nullptr);
  for (auto& [key, e] : entries_) ReleaseBlocks(e);
  for (auto& [key, s] : spilled_) spill_store_->Erase(s.store_key);
}

void PrefixCache::EnableSpill(SnapshotStore& store, int32_t max_rank) {
  spill_store_ = &store;
  spill_max_rank_ = max_rank;
  next_store_key_ = kSpillKeyBase;
}

bool PrefixCache::Unused(const Entry& e) const {
  return std::all_of(e.blocks.begin(), e.blocks.end(),
                     [&](KvBlockId b) { return b == KvSequence::kNoBlock || pool_->ref_count(b) == 1; });
}

void PrefixCache::ReleaseBlocks(const Entry& e) {
  for (KvBlockId b : e.blocks) {
    if (b != KvSequence::kNoBlock) pool_->Release(b);
  }
}

uint64_t PrefixCache::ChainKey(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = Mix(parent ^ (tokens.size() * 0x100000001b3ULL));
  for (int32_t t : tokens) h = Mix(h ^ static_cast<uint32_t>(t));
  return h;
}

PrefixCache::Entry* PrefixCache::Find(uint64_t parent, std::span<const int32_t> tokens, uint64_t* key) {
  *key = ChainKey(parent, tokens);
  auto it = entries_.find(*key);
  if (it == entries_.end()) return nullptr;
  Entry& e = it->second;
  if (e.parent != parent || !std::equal(tokens.begin(), tokens.end(), e.tokens.begin(), e.tokens.end())) {
    return nullptr;  // a hash collision: treat as absent
  }
  return &e;
}

PrefixMatch PrefixCache::Match(std::span<const int32_t> tokens, int32_t rank) {
  const KvLayout& l = pool_->layout();
  const size_t bt = static_cast<size_t>(l.block_tokens);
  std::vector<const Entry*> chain;
  size_t matched = 0;
  uint64_t parent = kRootKey;
  ++clock_;
  while (matched < tokens.size()) {
    const size_t n = std::min(bt, tokens.size() - matched);
    uint64_t key;
    Entry* e = Find(parent, tokens.subspan(matched, n), &key);
    if (e == nullptr) e = Restore(parent, tokens.subspan(matched, n), key);
    if (e == nullptr) break;
    e->last_used = clock_;
    e->rank = std::min(e->rank, rank);
    chain.push_back(e);
    matched += n;
    parent = key;
  }
  // The longest length whose window the windowed blocks cover; a length ends
  // where one entry ends.
  auto window_kept = [&](size_t n_entries, size_t n_tokens) {
    const size_t from = static_cast<size_t>(l.window_start(static_cast<int32_t>(n_tokens))) / bt;
    for (size_t i = from; i < n_entries; ++i) {
      for (int32_t s = l.n_full_slices(); s < l.n_slices(); ++s) {
        if (chain[i]->blocks[s] == KvSequence::kNoBlock) return false;
      }
    }
    return true;
  };
  size_t n_entries = chain.size(), n_tokens = matched;
  while (n_entries > 0 && !window_kept(n_entries, n_tokens)) {
    n_tokens -= chain[--n_entries]->tokens.size();
  }
  PrefixMatch m;
  m.n_tokens = static_cast<int32_t>(n_tokens);
  m.window_cut = static_cast<int32_t>(matched - n_tokens);
  for (size_t i = 0; i < n_entries; ++i) m.blocks.insert(m.blocks.end(), chain[i]->blocks.begin(), chain[i]->blocks.end());
  return m;
}

int32_t PrefixCache::Insert(std::span<const int32_t> tokens, const KvSequence& seq, int32_t rank) {
  const size_t bt = static_cast<size_t>(pool_->layout().block_tokens);
  const size_t n_slices = static_cast<size_t>(pool_->layout().n_slices());
  const size_t limit = std::min(tokens.size(), static_cast<size_t>(seq.n_tokens()));
  uint64_t parent = kRootKey;
  ++clock_;
  size_t pos = 0;
  for (int32_t depth = 0; pos < limit; ++depth) {
    const size_t n = std::min(bt, limit - pos);
    std::span<const int32_t> run = tokens.subspan(pos, n);
    std::span<const KvBlockId> blocks = std::span<const KvBlockId>(seq.blocks()).subspan(pos / bt * n_slices, n_slices);
    uint64_t key;
    Entry* e = Find(parent, run, &key);
    if (e == nullptr) {
      if (entries_.count(key) != 0) break;  // the slot is taken by a colliding chain
      if (auto spilled = spilled_.find(key); spilled != spilled_.end()) Forget(spilled);  // recomputed instead
      Entry fresh{parent, std::vector<int32_t>(run.begin(), run.end()),
                  std::vector<KvBlockId>(n_slices, KvSequence::kNoBlock), depth, clock_, rank};
      e = &entries_.emplace(key, std::move(fresh)).first->second;
    }
    // Equal tokens at equal positions have equal rows, so a windowed block
    // the entry lacks can come from this sequence.
    for (size_t s = 0; s < n_slices; ++s) {
      if (e->blocks[s] == KvSequence::kNoBlock && blocks[s] != KvSequence::kNoBlock) {
        e->blocks[s] = blocks[s];
        pool_->AddRef(blocks[s]);
      }
    }
    e->last_used = clock_;
    e->rank = std::min(e->rank, rank);
    parent = key;
    pos += n;
  }
  return static_cast<int32_t>(pos);
}

int32_t PrefixCache::unused_blocks() const {
  int32_t n = 0;
  for (const auto& [key, e] : entries_) {
    for (KvBlockId b : e.blocks) n += b != KvSequence::kNoBlock && pool_->ref_count(b) == 1;
  }
  return n;
}

std::unordered_map<uint64_t, PrefixCache::Entry>::iterator PrefixCache::Victim(int32_t min_rank) {
  auto victim = entries_.end();
  // Orders entries by how soon they go: higher rank, older, deeper first.
  auto sooner = [](const Entry& a, const Entry& b) {
    if (a.rank != b.rank) return a.rank > b.rank;
    if (a.last_used != b.last_used) return a.last_used < b.last_used;
    return a.depth > b.depth;
  };
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Entry& e = it->second;
    if (e.rank < min_rank || !Unused(e)) continue;
    if (victim == entries_.end() || sooner(e, victim->second)) victim = it;
  }
  return victim;
}

void PrefixCache::Remove(std::unordered_map<uint64_t, Entry>::iterator it) {
  ReleaseBlocks(it->second);
  entries_.erase(it);
  ++evictions_;
}

bool PrefixCache::EvictOne(int32_t min_rank) {
  auto victim = Victim(min_rank);
  if (victim == entries_.end()) return false;
  Remove(victim);
  return true;
}

bool PrefixCache::ReclaimOne() {
  auto victim = Victim(0);
  if (victim == entries_.end()) return false;
  Spill(victim->first, victim->second);
  Remove(victim);
  return true;
}

void PrefixCache::Spill(uint64_t key, const Entry& e) {
  if (spill_store_ == nullptr || e.rank > spill_max_rank_ || spilled_.count(key) != 0) return;
  const size_t block_bytes = pool_->layout().block_bytes();
  Spilled s{e.parent, e.tokens, std::vector<bool>(e.blocks.size()), e.depth, e.rank, next_store_key_, clock_, 0};
  std::vector<uint8_t> blob;  // [present blocks][block_bytes]
  for (size_t i = 0; i < e.blocks.size(); ++i) {
    s.present[i] = e.blocks[i] != KvSequence::kNoBlock;
    if (!s.present[i]) continue;
    const uint8_t* data = pool_->block_data(e.blocks[i]);
    blob.insert(blob.end(), data, data + block_bytes);
  }
  s.bytes = blob.size();
  // Within what the pool itself holds: the oldest spills make way.
  while (!spilled_.empty() && spilled_bytes_ + s.bytes > pool_->capacity_bytes()) {
    Forget(std::min_element(spilled_.begin(), spilled_.end(), [](const auto& a, const auto& b) {
      return a.second.spilled_at < b.second.spilled_at;
    }));
  }
  if (spilled_bytes_ + s.bytes > pool_->capacity_bytes()) return;
  if (!spill_store_->Put(s.store_key, blob, SnapshotTier::kRam).ok()) return;  // as if never spilled
  ++next_store_key_;
  spilled_bytes_ += s.bytes;
  ++spills_;
  spilled_.emplace(key, std::move(s));
}

PrefixCache::Entry* PrefixCache::Restore(uint64_t parent, std::span<const int32_t> tokens, uint64_t key) {
  auto it = spilled_.find(key);
  if (it == spilled_.end()) return nullptr;
  const Spilled& s = it->second;
  if (s.parent != parent || !std::equal(tokens.begin(), tokens.end(), s.tokens.begin(), s.tokens.end())) return nullptr;
  if (entries_.count(key) != 0) return nullptr;  // the slot is taken by a colliding chain
  const int32_t needed = static_cast<int32_t>(std::count(s.present.begin(), s.present.end(), true));
  if (pool_->free_blocks() < needed) return nullptr;  // it waits for room; it never takes any
  Result<std::vector<uint8_t>> blob = spill_store_->Get(s.store_key);
  const size_t block_bytes = pool_->layout().block_bytes();
  if (!blob.ok() || blob->size() != static_cast<size_t>(needed) * block_bytes) {
    Forget(it);  // damaged or lost: the prefix is recomputed
    return nullptr;
  }
  Entry e{parent, s.tokens, std::vector<KvBlockId>(s.present.size(), KvSequence::kNoBlock), s.depth, clock_, s.rank};
  const uint8_t* data = blob->data();
  for (size_t i = 0; i < s.present.size(); ++i) {
    if (!s.present[i]) continue;
    Result<KvBlockId> block = pool_->Allocate();  // free blocks were counted: no reclaim, no failure
    assert(block.ok());
    e.blocks[i] = *block;
    std::memcpy(pool_->block_data(*block), data, block_bytes);
    data += block_bytes;
  }
  Forget(it);
  ++restores_;
  return &entries_.emplace(key, std::move(e)).first->second;
}

void PrefixCache::Forget(std::unordered_map<uint64_t, Spilled>::iterator it) {
  spill_store_->Erase(it->second.store_key);
  spilled_bytes_ -= it->second.bytes;
  spilled_.erase(it);
}

}  // namespace valet
