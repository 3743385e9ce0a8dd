#include "server/task_table.h"

namespace valet {

bool TaskTable::SubmitIfRoom(Tier tier, int limit, const std::string& endpoint,
                             const std::function<Result<TaskId>()>& submit, Result<TaskId>* out) {
  const size_t t = static_cast<size_t>(tier);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unfinished_[t] + reserved_[t] >= limit) return false;
    ++reserved_[t];
    ++in_flight_;
  }
  Result<TaskId> result = submit();
  std::lock_guard<std::mutex> lock(mu_);
  --reserved_[t];
  if (result.ok()) RecordLocked(*result, tier, endpoint);
  if (--in_flight_ == 0) early_.clear();
  *out = std::move(result);
  return true;
}

void TaskTable::RecordLocked(TaskId id, Tier tier, const std::string& endpoint) {
  TaskEntry& entry = entries_[id] = TaskEntry{id, tier, TaskState::kQueued, 0, endpoint};
  ++unfinished_[static_cast<size_t>(tier)];
  auto early = early_.find(id);
  if (early == early_.end()) return;
  entry.tokens = early->second.tokens;
  entry.state = early->second.state;
  early_.erase(early);
  if (IsTerminal(entry.state)) FinishLocked(entry);
}

void TaskTable::FinishLocked(TaskEntry& entry) {
  --unfinished_[static_cast<size_t>(entry.tier)];
  finished_.push_back(entry.id);  // `entry` may be the one erased below
  if (finished_.size() > kFinishedKept) {
    entries_.erase(finished_.front());
    finished_.pop_front();
  }
}

void TaskTable::SetState(TaskId id, TaskState state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    if (in_flight_ > 0) {
      Early& early = early_[id];
      if (!IsTerminal(early.state)) early.state = state;
    }
    return;
  }
  if (IsTerminal(it->second.state)) return;
  it->second.state = state;
  if (IsTerminal(state)) FinishLocked(it->second);
}

void TaskTable::AddToken(TaskId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(id); it != entries_.end()) {
    ++it->second.tokens;
  } else if (in_flight_ > 0) {
    ++early_[id].tokens;
  }
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
