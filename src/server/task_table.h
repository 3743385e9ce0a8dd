// The server's view of its tasks, for /v1/tasks, per-tier queue limits and
// /metrics. Updated from scheduler callbacks (inference thread) and HTTP
// threads; every access takes the table's mutex, and nothing slow runs under
// it: the inference thread's callbacks wait for it.
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
  // `limit` unfinished tasks (then returns false without calling it). A slot
  // is reserved under the lock and `submit` (which renders and tokenizes the
  // prompt) runs outside it, so the limit is exact under any concurrency
  // while callbacks never wait for a tokenizer. Callbacks that arrive for the
  // new task before it is recorded are kept and applied when it is.
  bool SubmitIfRoom(Tier tier, int limit, const std::string& endpoint,
                    const std::function<Result<TaskId>()>& submit, Result<TaskId>* out);

  void SetState(TaskId id, TaskState state);
  void AddToken(TaskId id);

  std::vector<TaskEntry> Entries() const;  // by id
  // Unfinished tasks per tier in `state`.
  std::array<int64_t, kNumTiers> CountByTier(TaskState state) const;

 private:
  // What callbacks said about a task not recorded yet.
  struct Early {
    TaskState state = TaskState::kQueued;
    int32_t tokens = 0;
  };
  void RecordLocked(TaskId id, Tier tier, const std::string& endpoint);
  void FinishLocked(TaskEntry& entry);

  mutable std::mutex mu_;
  std::map<TaskId, TaskEntry> entries_;
  std::deque<TaskId> finished_;
  std::array<int64_t, kNumTiers> unfinished_{};  // recorded, not terminal
  std::array<int64_t, kNumTiers> reserved_{};    // submits running now
  int64_t in_flight_ = 0;                        // sum of reserved_
  // Only while a submit is in flight: an id unknown then is either that
  // submit's task or one evicted from finished_ (whose stray callback the
  // next quiet moment clears).
  std::map<TaskId, Early> early_;
};

}  // namespace valet
