// The server's view of its tasks, for /v1/tasks, per-tier queue limits and
// /metrics. Updated from scheduler callbacks (inference thread) and HTTP
// threads; every access takes the table's mutex, and nothing slow runs under
// it: the inference thread's callbacks wait for it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "valet/scheduler.h"

namespace valet {

struct TaskEntry {
  TaskId id = 0;
  Tier tier = Tier::kForegroundChat;
  TaskState state = TaskState::kQueued;
  int32_t tokens = 0;  // generated so far
  std::string endpoint;
};

// A tier's slot, held from before its task is submitted until the task ends.
// Both the submitter and the task's callbacks name it, so whichever first
// knows the task's id records it: a reply caused by a callback can never
// reach a client before /v1/tasks shows the task. Only TaskTable touches it,
// under its mutex.
class TaskSlot {
 private:
  friend class TaskTable;
  TaskSlot(Tier tier, std::string endpoint) : tier_(tier), endpoint_(std::move(endpoint)) {}
  const Tier tier_;
  const std::string endpoint_;
  bool recorded_ = false;
  bool released_ = false;
};

class TaskTable {
 public:
  // Finished tasks kept for /v1/tasks after they end.
  static constexpr size_t kFinishedKept = 256;

  // A slot for a task about to be submitted, or null if `tier` already holds
  // `limit` slots. The limit is exact under any concurrency, and the submit
  // itself (render, tokenize) runs outside the table's lock.
  std::shared_ptr<TaskSlot> Reserve(Tier tier, int limit, std::string endpoint);
  // The submit returned `id`. Recording twice is harmless.
  void Record(TaskSlot& slot, TaskId id);
  // The submit failed: the slot is free again and nothing is recorded.
  void Release(TaskSlot& slot);

  // From the task's callbacks; the first one records the task.
  void SetState(TaskSlot& slot, TaskId id, TaskState state);
  void AddToken(TaskSlot& slot, TaskId id);

  std::vector<TaskEntry> Entries() const;  // by id
  // Unfinished tasks per tier in `state`.
  std::array<int64_t, kNumTiers> CountByTier(TaskState state) const;

 private:
  // The slot's entry, created on first use; null once it has been evicted.
  TaskEntry* EntryLocked(TaskSlot& slot, TaskId id);
  void FinishLocked(TaskEntry& entry);

  mutable std::mutex mu_;
  std::map<TaskId, TaskEntry> entries_;
  std::deque<TaskId> finished_;
  std::array<int64_t, kNumTiers> held_{};  // slots reserved, not yet finished or released
};

}  // namespace valet
