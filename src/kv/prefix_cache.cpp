#include "kv/prefix_cache.h"

#include <algorithm>

namespace valet {
namespace {

constexpr uint64_t kRootKey = 0x9e3779b97f4a7c15ULL;

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
  for (auto& [key, e] : entries_) pool_->Release(e.block);
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

PrefixMatch PrefixCache::Match(std::span<const int32_t> tokens) {
  const size_t bt = static_cast<size_t>(pool_->layout().block_tokens);
  PrefixMatch m;
  uint64_t parent = kRootKey;
  ++clock_;
  for (size_t pos = 0; pos < tokens.size();) {
    const size_t n = std::min(bt, tokens.size() - pos);
    uint64_t key;
    Entry* e = Find(parent, tokens.subspan(pos, n), &key);
    if (e == nullptr) break;
    e->last_used = clock_;
    m.blocks.push_back(e->block);
    m.n_tokens += static_cast<int32_t>(n);
    parent = key;
    pos += n;
  }
  return m;
}

int32_t PrefixCache::Insert(std::span<const int32_t> tokens, const KvSequence& seq) {
  const size_t bt = static_cast<size_t>(pool_->layout().block_tokens);
  const size_t limit = std::min(tokens.size(), static_cast<size_t>(seq.n_tokens()));
  uint64_t parent = kRootKey;
  ++clock_;
  size_t pos = 0;
  for (int32_t depth = 0; pos < limit; ++depth) {
    const size_t n = std::min(bt, limit - pos);
    std::span<const int32_t> run = tokens.subspan(pos, n);
    uint64_t key;
    Entry* e = Find(parent, run, &key);
    if (e == nullptr) {
      if (entries_.count(key) != 0) break;  // the slot is taken by a colliding chain
      Entry fresh{parent, std::vector<int32_t>(run.begin(), run.end()), seq.blocks()[pos / bt], depth, clock_};
      pool_->AddRef(fresh.block);
      e = &entries_.emplace(key, std::move(fresh)).first->second;
    }
    e->last_used = clock_;
    parent = key;
    pos += n;
  }
  return static_cast<int32_t>(pos);
}

int32_t PrefixCache::unused_blocks() const {
  int32_t n = 0;
  for (const auto& [key, e] : entries_) n += pool_->ref_count(e.block) == 1;
  return n;
}

bool PrefixCache::ReclaimOne() {
  auto victim = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Entry& e = it->second;
    if (pool_->ref_count(e.block) != 1) continue;
    if (victim == entries_.end() || e.last_used < victim->second.last_used ||
        (e.last_used == victim->second.last_used && e.depth > victim->second.depth)) {
      victim = it;
    }
  }
  if (victim == entries_.end()) return false;
  pool_->Release(victim->second.block);
  entries_.erase(victim);
  ++evictions_;
  return true;
}

}  // namespace valet
