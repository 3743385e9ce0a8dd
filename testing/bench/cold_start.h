// Cold start with recovered durable tasks (issue 22 item 4): how much later
// does the user's first chat turn after a process start get its first token
// when the start also recovers unfinished durable background tasks?
//
// Every repetition starts from nothing, as a killed app does: a new engine, a
// new scheduler on a durable directory, Recover(), then one chat turn. Two
// kinds, interleaved (a, b, then b, a, ...) so a drift of the machine's speed
// reaches both alike:
//   (a) empty: the durable directory is empty;
//   (b) recovered: it holds a fresh copy of the same unfinished durable
//       indexing tasks, prepared once by schedulers dropped part-way after
//       ON_STOP (their KV checkpoints written), as the low-memory killer
//       leaves them.
// Both call Recover(), as an app does at every start; only the directory's
// contents differ.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/real_engine.h"
#include "testing/bench/contention_scenario.h"
#include "testing/bench/latency_stats.h"

namespace valet::testing {

struct ColdStartOptions {
  int32_t repetitions = 10;     // of each kind
  int32_t durable_tasks = 3;    // unfinished tasks in (b)'s directory
  int32_t durable_tokens = 16;  // each had generated this many when dropped
  // A new engine, as a starting process opens it, keeping its snapshots in
  // `snapshot_dir`.
  std::function<Result<std::unique_ptr<RealEngine>>(const std::string& snapshot_dir)> open_engine;
  std::function<void(const std::string& line)> progress;
};

struct ColdStartSample {
  double startup_ms = -1.0;       // engine open + scheduler + Recover()
  double ttft_ms = -1.0;          // chat submitted -> first token
  double launch_ttft_ms = -1.0;   // engine open began -> the chat's first token
  int32_t recovered = 0;          // tasks Recover() resumed
  int64_t restored_tokens = 0;    // their tokens whose KV came from checkpoints, by the chat's end
};

struct ColdStartReport {
  int32_t repetitions = 0, durable_tasks = 0, durable_tokens = 0;
  int64_t checkpoints_written = 0;  // while preparing (b)'s directory
  std::vector<ColdStartSample> empty, recovered;
  Percentiles ttft_empty, ttft_recovered, launch_empty, launch_recovered, startup_empty, startup_recovered;
  double ttft_ratio = -1.0;  // p50 (b) / p50 (a)
  RatioInterval ttft_ratio_ci;
  double launch_ratio = -1.0;
  RatioInterval launch_ratio_ci;
  std::string model, machine;
  int threads = 0;
};

// Percentiles and the (b)/(a) ratios with bootstrap 95% intervals.
void SummarizeColdStart(ColdStartReport& report);
std::string ColdStartMarkdown(const ColdStartReport& report);
std::string ColdStartJson(const ColdStartReport& report);

// The chat of repetition i is turn i (mod turns) of `workload`.
Result<ColdStartReport> RunColdStart(const Workload& workload, const ScenarioConfig& config,
                                     const ColdStartOptions& options);

}  // namespace valet::testing
