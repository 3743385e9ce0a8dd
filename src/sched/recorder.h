// Observability: per-task timelines and metrics, scheduler counters and a
// per-step trace, exportable as Chrome trace-event JSON. Written by the
// inference thread, read from any thread: every access takes the recorder's
// own mutex, which is never held while a callback runs.
//
// Memory is bounded for a process that runs for weeks: the counters are
// aggregates, and only recent history is kept (RecorderLimits): the last
// steps, the records of live tasks plus the last finished ones, the last
// preemption latencies.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "valet/scheduler.h"

namespace valet {

enum class StepItemKind { kPrefill, kRecompute, kDecode };

struct StepTraceItem {
  TaskId task = 0;
  Tier tier = Tier::kForegroundChat;
  StepItemKind kind = StepItemKind::kDecode;
  int32_t tokens = 0;
};

struct StepTrace {
  double start = 0.0;
  double seconds = 0.0;
  std::vector<StepTraceItem> items;
};

struct RecorderLimits {
  size_t steps = 16384;          // step traces kept (the oldest go first)
  size_t finished_tasks = 4096;  // records of finished tasks kept; live tasks are always kept
  size_t latencies = 1024;       // SchedulerStats::preemption_latencies kept
};

class Recorder {
 public:
  explicit Recorder(RecorderLimits limits = {}) : limits_(limits) {}

  // Allocates the next task id and records its submission (state QUEUED).
  TaskId Register(Tier tier, double now);

  // Appends a timeline event and updates the task's metrics from it.
  void Event(TaskId id, TimelineKind kind, double time, ParkKind park_kind = ParkKind::kResident,
             size_t bytes = 0, int32_t tokens = 0);
  void Tokens(TaskId id, int32_t count, double time);
  void SetPromptTokens(TaskId id, int32_t count);
  void SetCachedPromptTokens(TaskId id, int32_t count);
  // Leaving PARKED clears the park cause.
  void SetState(TaskId id, TaskState state);
  // Why the task parks next (set before SetState(kParked)).
  void SetParkCause(TaskId id, ParkCause cause);
  // Empty for ids never registered and for finished tasks whose record was
  // dropped (Registered() tells those apart).
  std::optional<TaskState> State(TaskId id) const;
  bool Registered(TaskId id) const;
  Result<TaskInfo> Info(TaskId id) const;

  Result<TaskMetrics> Metrics(TaskId id) const;
  Result<std::vector<TimelineEvent>> Timeline(TaskId id) const;

  void UpdateStats(const std::function<void(SchedulerStats&)>& update);
  SchedulerStats Stats() const;

  void AddStep(StepTrace step);
  std::vector<StepTrace> Steps() const;
  std::string ChromeTraceJson() const;

 private:
  struct TaskRecord {
    TaskState state = TaskState::kQueued;
    ParkCause park_cause = ParkCause::kNone;
    TaskMetrics metrics;
    std::vector<TimelineEvent> events;
  };

  std::string UnknownTask(TaskId id) const;  // the NotFound message (mu_ held)
  void Forget();  // drops the oldest finished records over the limit (mu_ held)

  RecorderLimits limits_;
  mutable std::mutex mu_;
  TaskId next_id_ = 1;
  std::unordered_map<TaskId, TaskRecord> tasks_;
  std::deque<TaskId> finished_;  // in finishing order
  SchedulerStats stats_;
  std::deque<StepTrace> steps_;
};

}  // namespace valet
