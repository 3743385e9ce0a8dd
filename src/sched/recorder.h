// Observability: per-task timelines and metrics, scheduler counters and a
// per-step trace, exportable as Chrome trace-event JSON. Written by the
// inference thread, read from any thread: every access takes the recorder's
// own mutex, which is never held while a callback runs.
#pragma once

#include <cstdint>
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

class Recorder {
 public:
  // Allocates the next task id and records its submission (state QUEUED).
  TaskId Register(Tier tier, double now);

  // Appends a timeline event and updates the task's metrics from it.
  void Event(TaskId id, TimelineKind kind, double time, ParkKind park_kind = ParkKind::kResident,
             size_t bytes = 0, int32_t tokens = 0);
  void Tokens(TaskId id, int32_t count, double time);
  void SetPromptTokens(TaskId id, int32_t count);
  void SetCachedPromptTokens(TaskId id, int32_t count);
  void SetState(TaskId id, TaskState state);
  // Empty for ids never registered.
  std::optional<TaskState> State(TaskId id) const;

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
    TaskMetrics metrics;
    std::vector<TimelineEvent> events;
  };

  mutable std::mutex mu_;
  TaskId next_id_ = 1;
  std::unordered_map<TaskId, TaskRecord> tasks_;
  SchedulerStats stats_;
  std::vector<StepTrace> steps_;
};

}  // namespace valet
