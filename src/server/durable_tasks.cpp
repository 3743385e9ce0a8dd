#include "server/durable_tasks.h"

#include <utility>

namespace valet {

DurableTaskTable::Reservation DurableTaskTable::Reserve(const DurableEntry& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(entry.key) != 0) return Reservation::kTaken;
  if (entries_.size() >= max_tasks_) return Reservation::kFull;
  entries_.emplace(entry.key, entry);
  return Reservation::kReserved;
}

void DurableTaskTable::Release(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(key);
}

void DurableTaskTable::Started(const std::string& key, TaskId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) it->second.id = id;
}

void DurableTaskTable::AddRecovered(DurableEntry entry) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = entry.key;
  entries_.insert_or_assign(std::move(key), std::move(entry));
}

void DurableTaskTable::OnState(const std::string& key, TaskState state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && !IsTerminal(it->second.state)) it->second.state = state;
}

void DurableTaskTable::OnToken(const std::string& key, int32_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) it->second.tokens.push_back(token);
}

bool DurableTaskTable::OnDone(const std::string& key, const TaskResult& result, size_t resumed_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  DurableEntry& e = it->second;
  if (e.deleted) {
    // A cancel removes the journal; a task that ended before its cancel
    // arrived still has one, for the caller to acknowledge.
    entries_.erase(it);
    return result.state != TaskState::kCancelled;
  }
  e.state = result.state;
  e.stop_reason = result.stop_reason;
  e.error = result.status.ok() ? std::string() : result.status.message();
  std::vector<int32_t>().swap(e.tokens);  // the journal has them
  // A resumed task's prompt was fed its earlier tokens too, and its cached
  // count describes the restart, not the request.
  const int32_t prompt = result.metrics.prompt_tokens - static_cast<int32_t>(resumed_tokens);
  e.prompt_tokens = prompt > 0 ? prompt : -1;  // -1: counted again when asked for
  e.cached_prompt_tokens = resumed_tokens == 0 ? result.metrics.cached_prompt_tokens : 0;
  return false;
}

std::optional<DurableEntry> DurableTaskTable::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.deleted) return std::nullopt;
  return it->second;
}

void DurableTaskTable::SetPromptTokens(const std::string& key, int32_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) it->second.prompt_tokens = count;
}

std::optional<DurableEntry> DurableTaskTable::BeginDelete(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.deleted) return std::nullopt;
  it->second.deleted = true;
  return it->second;
}

void DurableTaskTable::CancelDelete(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) it->second.deleted = false;
}

void DurableTaskTable::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(key);
}

bool DurableTaskTable::IsDurable(TaskId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, e] : entries_) {
    if (e.id == id) return true;
  }
  return false;
}

}  // namespace valet
