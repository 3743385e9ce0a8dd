#include "server/task_table.h"

namespace valet {

std::shared_ptr<TaskSlot> TaskTable::Reserve(Tier tier, int limit, std::string endpoint) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t& held = held_[static_cast<size_t>(tier)];
  if (held >= limit) return nullptr;
  ++held;
  return std::shared_ptr<TaskSlot>(new TaskSlot(tier, std::move(endpoint)));
}

void TaskTable::Record(TaskSlot& slot, TaskId id) {
  std::lock_guard<std::mutex> lock(mu_);
  (void)EntryLocked(slot, id);
}

void TaskTable::Release(TaskSlot& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot.recorded_ || slot.released_) return;
  slot.released_ = true;
  --held_[static_cast<size_t>(slot.tier_)];
}

TaskEntry* TaskTable::EntryLocked(TaskSlot& slot, TaskId id) {
  if (!slot.recorded_ && !slot.released_) {
    slot.recorded_ = true;
    return &(entries_[id] = TaskEntry{id, slot.tier_, TaskState::kQueued, 0, slot.endpoint_});
  }
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

void TaskTable::FinishLocked(TaskEntry& entry) {
  --held_[static_cast<size_t>(entry.tier)];
  finished_.push_back(entry.id);  // `entry` may be the one erased below
  if (finished_.size() > kFinishedKept) {
    entries_.erase(finished_.front());
    finished_.pop_front();
  }
}

void TaskTable::SetState(TaskSlot& slot, TaskId id, TaskState state) {
  std::lock_guard<std::mutex> lock(mu_);
  TaskEntry* entry = EntryLocked(slot, id);
  if (entry == nullptr || IsTerminal(entry->state)) return;
  entry->state = state;
  if (IsTerminal(state)) FinishLocked(*entry);
}

void TaskTable::AddToken(TaskSlot& slot, TaskId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (TaskEntry* entry = EntryLocked(slot, id)) ++entry->tokens;
}

std::vector<TaskEntry> TaskTable::Entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TaskEntry> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(e);
  return out;
}

std::array<int64_t, kNumTiers> TaskTable::CountByTier(TaskState state) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::array<int64_t, kNumTiers> n{};
  for (const auto& [id, e] : entries_) n[static_cast<size_t>(e.tier)] += e.state == state ? 1 : 0;
  return n;
}

}  // namespace valet
