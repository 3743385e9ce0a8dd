// One arm's workload as an event-driven state machine: it reacts to the start,
// to task completions and to its own timers (think times, side arrivals, the
// app's return from the background), and tells a sink what to submit. The
// real-time and virtual-time drivers (contention_scenario.cpp) feed it events;
// it never reads a clock itself, so both drivers replay the same workload.
#pragma once

#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "testing/bench/contention_scenario.h"

namespace valet::testing {

class ScenarioSink {
 public:
  virtual ~ScenarioSink() = default;
  // Attaches its own completion callback to `request`.
  virtual Result<TaskId> Submit(TaskRequest request) = 0;
  virtual Status Lifecycle(LifecycleEvent event) = 0;
  virtual Status TrimMemory(TrimLevel level) = 0;
  virtual SchedulerStats Stats() const = 0;
};

class ContentionSession {
 public:
  ContentionSession(const Workload& workload, const ScenarioConfig& config, Arm arm, ScenarioSink& sink);

  void Start(double now);
  void OnTime(double now);
  void OnDone(TaskId id, const TaskResult& result, double now);

  // When OnTime next has something to do; +inf when nothing is scheduled.
  double NextWake() const;
  // The workload is over and every task it submitted has finished (or failed to submit).
  bool Finished() const { return closed_ && outstanding_ == 0; }
  const ArmRun& run() const { return run_; }
  ArmRun& run() { return run_; }

  static constexpr double kNever = std::numeric_limits<double>::infinity();

 private:
  enum class TimerKind { kTurn, kSide, kResumeApp, kLowMemory, kDeepTrim };
  struct Timer {
    double at = 0.0;
    TimerKind kind = TimerKind::kTurn;
    int32_t turn = 0;
    int32_t side = 0;
  };

  void ScheduleTurn(int32_t turn, double now);
  void Fire(const Timer& timer, double now);
  void SubmitChat(int32_t turn);
  void SubmitSide(int32_t turn, int32_t side);
  void SubmitDoc();
  void Submit(TaskRequest request, TaskKind kind, int32_t turn);
  void Lifecycle(LifecycleEvent event);
  void Trim(int32_t level);
  bool LeavesAfter(int32_t turn) const;
  void ToBackground(int32_t next_turn, double now);
  void BackToForeground(int32_t turn, double now);
  void ChatDone(int32_t turn, double now);
  void Close(double now);

  const Workload& workload_;
  const ScenarioConfig& config_;
  ScenarioSink& sink_;
  bool chat_on_ = true;
  bool indexer_on_ = true;
  bool side_on_ = true;
  std::vector<Timer> timers_;
  std::unordered_map<TaskId, size_t> index_;
  int32_t docs_submitted_ = 0;
  int32_t docs_done_ = 0;
  int32_t outstanding_ = 0;
  bool closed_ = false;
  ArmRun run_;
};

// Seconds on std::chrono::steady_clock: the real-time drivers' clock.
double SteadySeconds();

// Completions reported on other threads (the inference thread, HTTP client
// threads) for the driver thread to hand to the session.
class CompletionQueue {
 public:
  void Push(TaskId id, const TaskResult& result);
  // Waits until something is queued or `deadline` (SteadySeconds) passes.
  std::deque<std::pair<TaskId, TaskResult>> WaitUntil(double deadline);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<TaskId, TaskResult>> done_;
};

// Runs `session` on the steady clock until it is finished; its sink reports
// completions to `done`.
void DriveRealTime(ContentionSession& session, CompletionQueue& done);

}  // namespace valet::testing
