// Memory and parking: parking a task (the preemption controller picks how),
// making room for the work that runs, trim-memory requests and run-time
// budgets. The rule throughout: memory pressure makes work wait or
// recompute, never fail (docs/memory.md). Part of SchedulerCore
// (sched/scheduler_state.h); inference thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sched/scheduler_state.h"
#include "sched/trim_policy.h"

namespace valet {

class TaskBook;
class TaskJournaling;

class MemoryKeeper {
 public:
  MemoryKeeper(SchedulerState& state, TaskBook& book, TaskJournaling& journals)
      : s_(state), engine_(state.engine), book_(book), journals_(journals) {}
  MemoryKeeper(const MemoryKeeper&) = delete;
  MemoryKeeper& operator=(const MemoryKeeper&) = delete;

  // docs/memory.md. A trim's reductions last until the next ON_START or
  // SetMemoryBudgets; work that needs room meanwhile grows the pool back.
  Status OnTrimMemory(TrimLevel level);
  Status SetMemoryBudgets(const MemoryBudgets& budgets);
  // The task's max_tokens if the pool holds it alone (or for a task without
  // a limit, the most that fit); ResourceExhausted otherwise.
  Result<int32_t> FitPool(const PreparedTask& task) const;
  void Park(Task& task, ParkReason reason, size_t bytes_needed, const Task* cause);
  void ParkAllRunning(ParkReason reason);
  void ParkEverythingToDisk();
  // Frees pool memory for the work in `keep`, cheapest first: park a
  // resident task, drop the shared prefix a parked task still holds, drop
  // unused cached prefixes, grow a trimmed pool back. False when none is left.
  bool RelievePressure(const std::vector<const Task*>& keep, size_t bytes_needed);
  size_t EstimateBytesNeeded(const Task& incoming);
  // Gives the app's budgets back to a trimmed pool; false when it was not trimmed.
  bool RestorePool();
  // Brings the foreground chat's shared prefix back into the prefix cache (a
  // prefill without a task) if memory pressure took it; on the way back to
  // the foreground, before the user's next turn needs it.
  void WarmForegroundPrefix();

 private:
  // Park as `kind`, whatever the policy would choose.
  void ParkAs(Task& task, ParkKind kind, ParkReason reason, const Task* cause);
  bool ParkResidentVictim(const std::vector<const Task*>& keep, size_t bytes_needed);
  bool DropParkedPrefix(const std::vector<const Task*>& keep);
  bool EvictFully(Task& task);
  // Pool bytes a task of `tokens` (shared prefix, prompt, max_tokens) needs to run alone.
  size_t BytesAlone(int64_t tokens) const;
  // The tokens of the largest live task, as BytesAlone counts them.
  int64_t LargestLiveTask() const;
  // Parked-resident tasks' KV leaves the pool: down to the shared prefix, or
  // to disk snapshots (actions.parked_to_disk).
  void EvictParked(const TrimActions& actions);
  // Partially evicted tasks drop their shared-prefix reference too (full).
  void DropEvictedPrefixes();
  void ShrinkPool();

  SchedulerState& s_;
  EngineInterface& engine_;
  TaskBook& book_;
  TaskJournaling& journals_;
};

}  // namespace valet
