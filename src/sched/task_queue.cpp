#include "sched/task_queue.h"

#include <cassert>
#include <utility>

namespace valet {

void TaskQueue::Place(size_t i, Entry e) {
  slot_[e.id] = i;
  heap_[i] = e;
}

void TaskQueue::SiftUp(size_t i) {
  Entry e = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!(e.key < heap_[parent].key)) break;
    Place(i, heap_[parent]);
    i = parent;
  }
  Place(i, e);
}

void TaskQueue::SiftDown(size_t i) {
  Entry e = heap_[i];
  const size_t n = heap_.size();
  while (true) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].key < heap_[child].key) ++child;
    if (!(heap_[child].key < e.key)) break;
    Place(i, heap_[child]);
    i = child;
  }
  Place(i, e);
}

void TaskQueue::Push(TaskId id, QueueKey key) {
  assert(!Contains(id));
  heap_.push_back({id, key});
  ++per_tier_[static_cast<size_t>(key.tier)];
  SiftUp(heap_.size() - 1);
}

void TaskQueue::RemoveAt(size_t i) {
  const Entry removed = heap_[i];
  --per_tier_[static_cast<size_t>(removed.key.tier)];
  slot_.erase(removed.id);
  const Entry last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;
  Place(i, last);
  // The moved entry may belong above or below its new slot.
  if (i > 0 && last.key < heap_[(i - 1) / 2].key) {
    SiftUp(i);
  } else {
    SiftDown(i);
  }
}

void TaskQueue::Pop() {
  assert(!heap_.empty());
  RemoveAt(0);
}

bool TaskQueue::Erase(TaskId id) {
  auto it = slot_.find(id);
  if (it == slot_.end()) return false;
  RemoveAt(it->second);
  return true;
}

bool TaskQueue::Update(TaskId id, QueueKey key) {
  auto it = slot_.find(id);
  if (it == slot_.end()) return false;
  const size_t i = it->second;
  --per_tier_[static_cast<size_t>(heap_[i].key.tier)];
  ++per_tier_[static_cast<size_t>(key.tier)];
  const bool up = key < heap_[i].key;
  heap_[i].key = key;
  if (up) {
    SiftUp(i);
  } else {
    SiftDown(i);
  }
  return true;
}

const QueueKey* TaskQueue::KeyOf(TaskId id) const {
  auto it = slot_.find(id);
  return it == slot_.end() ? nullptr : &heap_[it->second].key;
}

std::vector<TaskId> TaskQueue::Ids() const {
  std::vector<TaskId> ids;
  ids.reserve(heap_.size());
  for (const Entry& e : heap_) ids.push_back(e.id);
  return ids;
}

bool TaskQueue::Valid() const {
  if (slot_.size() != heap_.size()) return false;
  std::array<size_t, kNumTiers> counts{};
  for (size_t i = 0; i < heap_.size(); ++i) {
    auto it = slot_.find(heap_[i].id);
    if (it == slot_.end() || it->second != i) return false;
    if (i > 0 && heap_[i].key < heap_[(i - 1) / 2].key) return false;
    ++counts[static_cast<size_t>(heap_[i].key.tier)];
  }
  return counts == per_tier_;
}

}  // namespace valet
