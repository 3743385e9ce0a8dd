// The server's view of its tasks, for /v1/tasks, per-tier queue limits and
// /metrics. Updated from scheduler callbacks (inference thread) and HTTP
// threads; every access takes the table's mutex.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
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

class TaskTable {
 public:
  // Finished tasks kept for /v1/tasks after they end.
  static constexpr size_t kFinishedKept = 256;

  // Runs `submit` and records the task it returns, unless `tier` already has
  // `limit` unfinished tasks (then returns false without calling it). Holding
  // the lock across `submit` makes callbacks for the new task wait until it
  // is recorded; the scheduler never runs callbacks inside Submit.
  bool SubmitIfRoom(Tier tier, int limit, const std::string& endpoint,
                    const std::function<Result<TaskId>()>& submit, Result<TaskId>* out);

  void SetState(TaskId id, TaskState state);
  void AddToken(TaskId id);

  std::vector<TaskEntry> Entries() const;  // by id
  // Unfinished tasks per tier in `state`.
  std::array<int64_t, kNumTiers> CountByTier(TaskState state) const;

 private:
  int64_t UnfinishedLocked(Tier tier) const;

  mutable std::mutex mu_;
  std::map<TaskId, TaskEntry> entries_;
  std::deque<TaskId> finished_;
};

}  // namespace valet
