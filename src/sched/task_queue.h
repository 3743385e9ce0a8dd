// The scheduler's priority queue: a binary min-heap of task ids keyed by
// (tier, ticket). Tickets grow with arrival, so the queue is FIFO within a
// tier; a task that ends its turn takes a fresh ticket and goes to the back
// of its tier. An id -> heap-slot index makes erase and re-key O(log n).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "valet/scheduler.h"

namespace valet {

struct QueueKey {
  Tier tier = Tier::kForegroundChat;
  uint64_t ticket = 0;

  bool operator<(const QueueKey& o) const {
    return tier != o.tier ? tier < o.tier : ticket < o.ticket;
  }
};

class TaskQueue {
 public:
  // Precondition: id not queued.
  void Push(TaskId id, QueueKey key);
  // Precondition: !empty().
  TaskId Top() const { return heap_.front().id; }
  QueueKey TopKey() const { return heap_.front().key; }
  void Pop();
  // False when the id is not queued.
  bool Erase(TaskId id);
  // Re-keys a queued task (returns false when it is not queued).
  bool Update(TaskId id, QueueKey key);

  bool Contains(TaskId id) const { return slot_.count(id) != 0; }
  const QueueKey* KeyOf(TaskId id) const;
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  size_t CountInTier(Tier tier) const { return per_tier_[static_cast<size_t>(tier)]; }
  // Queued ids in heap order (unsorted), for scans that need every entry.
  std::vector<TaskId> Ids() const;

  // Checks the heap property and the index; for tests.
  bool Valid() const;

 private:
  struct Entry {
    TaskId id;
    QueueKey key;
  };

  void Place(size_t i, Entry e);
  void SiftUp(size_t i);
  void SiftDown(size_t i);
  void RemoveAt(size_t i);

  std::vector<Entry> heap_;
  std::unordered_map<TaskId, size_t> slot_;
  std::array<size_t, kNumTiers> per_tier_{};
};

}  // namespace valet
