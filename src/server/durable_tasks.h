// The server's durable tasks (docs/durable.md, "Over HTTP"), by their
// durable key: what GET/DELETE /v1/tasks/{id} need to know without reading
// the journal. A running task keeps its tokens here (its text so far is
// rebuilt from them); once it ends they are dropped, because its journal
// holds them and /result reads them from there: memory per ended task is a
// few small fields, and the number of tasks is bounded (Reserve).
//
// Updated from the scheduler's callbacks (inference thread) and the HTTP
// threads; every access takes the table's mutex and nothing slow runs under it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/completion_request.h"
#include "valet/scheduler.h"

namespace valet {

struct DurableEntry {
  std::string key;
  TaskId id = 0;  // the running task here; 0 before its submit returned, or for one that ended before a restart
  Endpoint endpoint = Endpoint::kChatCompletions;
  Tier tier = Tier::kForegroundChat;
  TaskState state = TaskState::kQueued;
  std::vector<std::string> stop;  // the request's stop strings, to rebuild its text
  std::vector<int32_t> tokens;    // generated so far, while it runs; empty once it ended
  int32_t prompt_tokens = -1;     // for usage, once counted (-1: not yet)
  int32_t cached_prompt_tokens = 0;  // known only for a task that ran whole in this process
  StopReason stop_reason = StopReason::kNone;
  std::string error;     // a failed task's reason
  bool deleted = false;  // DELETE cancelled it; gone once its cancellation is done
};

class DurableTaskTable {
 public:
  explicit DurableTaskTable(size_t max_tasks) : max_tasks_(max_tasks) {}

  enum class Reservation { kReserved, kTaken, kFull };
  // A key for a task about to be submitted: kTaken when the key is known
  // (running, ended and unacknowledged, or still being cancelled), kFull at
  // max_tasks entries.
  Reservation Reserve(const DurableEntry& entry);
  // The submit failed: the key is free again.
  void Release(const std::string& key);
  // The submit returned `id`.
  void Started(const std::string& key, TaskId id);
  // A task Recover found (resumed or ended), whatever the limit: its journal exists.
  void AddRecovered(DurableEntry entry);

  // From the task's callbacks.
  void OnState(const std::string& key, TaskState state);
  void OnToken(const std::string& key, int32_t token);
  // `resumed_tokens`: generated before a restart. True when the task had
  // been deleted but ended on its own before its cancel arrived: its journal
  // is still there, and the caller must acknowledge it.
  bool OnDone(const std::string& key, const TaskResult& result, size_t resumed_tokens);

  // The entry, unless unknown or deleted.
  std::optional<DurableEntry> Find(const std::string& key) const;
  void SetPromptTokens(const std::string& key, int32_t count);
  // Marks the entry deleted and returns it as it was; nullopt when unknown
  // or deleted already.
  std::optional<DurableEntry> BeginDelete(const std::string& key);
  // The deletion failed: the entry is back.
  void CancelDelete(const std::string& key);
  void Erase(const std::string& key);

  bool IsDurable(TaskId id) const;

 private:
  const size_t max_tasks_;
  mutable std::mutex mu_;
  std::map<std::string, DurableEntry> entries_;
};

}  // namespace valet
