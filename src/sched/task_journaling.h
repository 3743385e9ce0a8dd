// Durable tasks in the scheduler (docs/durable.md): journaling each token and
// the end as tasks run, a task waiting parked while its journal cannot be
// written, KV checkpoints, recovery after the process ended, and
// acknowledgement. The files themselves are durable/'s (TaskDurability).
// Part of SchedulerCore (sched/scheduler_state.h); inference thread only.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sched/scheduler_state.h"

namespace valet {

class MemoryKeeper;
class TaskBook;

class TaskJournaling {
 public:
  TaskJournaling(SchedulerState& state, TaskBook& book, MemoryKeeper& memory)
      : s_(state), engine_(state.engine), book_(book), memory_(memory) {}
  TaskJournaling(const TaskJournaling&) = delete;
  TaskJournaling& operator=(const TaskJournaling&) = delete;

  // Recover reads SchedulerOptions::durable_dir and resumes every unfinished
  // task found there (with callbacks_for's callbacks, if given) where its
  // journal ends; ended ones wait for Ack, which removes a journal (NotFound
  // when there is none, InvalidArgument while its task runs). DetachJournals
  // lets every live task go on without its journal: the scheduler is
  // stopping, and what the journals hold is for the next one to recover.
  Result<RecoveryReport> Recover(const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for = {});
  Status Ack(const std::string& durable_key);
  void DetachJournals();
  // Writes what journals could not take (ParkCause::kJournalIo); a task whose
  // journal takes it goes on (or ends, if its end was what waited). Also
  // tried on every lifecycle event and after every durable write that
  // succeeds; never on a timer.
  void RetryJournals();
  // RetryJournals without delivering: callable mid-step.
  void TryJournalsAgain();
  // Appends to, or ends, a task's journal. A durable task never reports what
  // its journal cannot back: when a write fails, what it lacks is kept
  // (Task::unjournaled) and the task waits, parked, for a retry to write it;
  // JournalEnd is then false and the task does not end yet.
  void JournalToken(Task& task, int32_t token, const std::array<uint64_t, 4>& rng);
  [[nodiscard]] bool JournalEnd(Task& task, TaskState state, const Status& status, StopReason reason);
  void WaitForJournal(Task& task);
  void SyncJournals();
  // Writes the KV checkpoint of a durable task (of every one) that has
  // computed more since its last; a no-op where the engine cannot export.
  void Checkpoint(Task& task, FileSync sync);
  void CheckpointAll(FileSync sync);
  // A recovered task's sequence, just opened, takes its checkpoint's KV.
  void RestoreCheckpoint(Task& task);

 private:
  // Writes the task's unjournaled tokens, then its end (synced).
  Status FlushJournal(Task& task);
  // Registers an unfinished journaled task (r.id) and enqueues it where its
  // journal ends; one it cannot resume ends FAILED (r.state, r.error).
  void ResumeJournaled(JournalContents& contents,
                       const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for, RecoveredTask& r);
  // Feeds a recovered task the tokens it had generated; false if they ended it.
  bool Replay(Task& task, const std::vector<int32_t>& tokens);

  SchedulerState& s_;
  EngineInterface& engine_;
  TaskBook& book_;
  MemoryKeeper& memory_;
  bool retrying_journals_ = false;
};

}  // namespace valet
