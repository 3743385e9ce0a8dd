// /metrics in the Prometheus text exposition format (version 0.0.4).
//
// Latencies come from each finished task's TaskMetrics (the scheduler's
// clock); counters from SchedulerStats; queue depth from the server's task
// table. Names:
//   valet_ttft_seconds{tier}             histogram, first token latency of DONE tasks
//   valet_tpot_seconds{tier}             histogram, time per output token after the first
//   valet_queue_depth{tier}              gauge, tasks waiting to start
//   valet_tasks{tier,state}              gauge, unfinished tasks by state
//   valet_parks_total{kind}              counter, parks by kind
//   valet_park_bytes_total               counter, bytes snapshotted or freed by parks
//   valet_resume_bytes_total             counter, bytes restored by resumes
//   valet_lifecycle_state{state}         gauge, 1 for the current lifecycle state
//   valet_generated_tokens_total{tier}   counter
//   valet_prompt_tokens_total{tier}      counter, prompt tokens prefilled
//   valet_tokens_per_second              gauge, generated tokens per engine-busy second
//   valet_tasks_finished_total{state}    counter, DONE / CANCELLED / FAILED
//   valet_client_disconnects_total       counter, requests cancelled because the client left
//   valet_http_errors_total{status}      counter, error responses by HTTP status
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "valet/scheduler.h"

namespace valet {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  // Appends the _bucket/_sum/_count lines of `name` with `labels` (`k="v"` pairs).
  void Render(const std::string& name, const std::string& labels, std::string* out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0.0;
};

struct MetricsInputs {
  SchedulerStats stats;
  LifecycleState lifecycle = LifecycleState::kResumed;
  PowerState power;  // as last reported to POST /v1/power
  std::array<std::array<int64_t, kNumTiers>, 4> unfinished_by_state{};  // QUEUED, PREFILLING, PARKED, DECODING
};

class ServerMetrics {
 public:
  ServerMetrics();
  void ObserveFinished(const TaskResult& result);
  void CountDisconnect();
  void CountHttpError(int status);
  std::string Render(const MetricsInputs& in) const;

 private:
  mutable std::mutex mu_;
  std::vector<Histogram> ttft_;  // per tier
  std::vector<Histogram> tpot_;
  std::array<int64_t, 3> finished_{};  // DONE, CANCELLED, FAILED
  int64_t disconnects_ = 0;
  std::map<int, int64_t> http_errors_;
};

}  // namespace valet
