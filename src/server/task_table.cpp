#include "server/task_table.h"

namespace valet {

int64_t TaskTable::UnfinishedLocked(Tier tier) const {
  int64_t n = 0;
  for (const auto& [id, e] : entries_) n += (e.tier == tier && !IsTerminal(e.state)) ? 1 : 0;
  return n;
}

bool TaskTable::SubmitIfRoom(Tier tier, int limit, const std::string& endpoint,
                             const std::function<Result<TaskId>()>& submit, Result<TaskId>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (UnfinishedLocked(tier) >= limit) return false;
  *out = submit();
  if (out->ok()) entries_[**out] = TaskEntry{**out, tier, TaskState::kQueued, 0, endpoint};
  return true;
}

void TaskTable::SetState(TaskId id, TaskState state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || IsTerminal(it->second.state)) return;
  it->second.state = state;
  if (!IsTerminal(state)) return;
  finished_.push_back(id);
  if (finished_.size() > kFinishedKept) {
    entries_.erase(finished_.front());
    finished_.pop_front();
  }
}

void TaskTable::AddToken(TaskId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(id); it != entries_.end()) ++it->second.tokens;
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
