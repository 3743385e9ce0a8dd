// valet bench-serve: the contention scenario's chat-under-indexing load sent
// to an OpenAI-compatible server, reported in the form of vLLM's
// `bench serve` (TTFT, TPOT, E2E latency percentiles).
//
// The load is bench-contention's (testing/bench/contention_scenario.h): a shared
// system prompt, closed-loop chat turns with seeded think times, and, in the
// "under_indexing" arm, one indexer document always in flight in the
// background. The side tasks and the app's trip to the background are left
// out: a server has no lifecycle, and llama-server no tiers. The two arms run
// interleaved, block by block (idle, under_indexing, idle, ...), replaying the
// same turns, so a drift in the machine's speed falls on both.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "testing/bench/contention_scenario.h"
#include "testing/bench/http_scenario_sink.h"
#include "testing/bench/latency_stats.h"

namespace valet::testing {

struct ServeBenchOptions {
  LoadTarget target;
  uint64_t seed = 1;
  int32_t turns = 16;       // chat turns per arm
  int32_t block_turns = 4;  // turns per block before the arms swap
  double think_min_s = 0.6;
  double think_max_s = 1.6;
  int32_t doc_tokens = 768;  // the indexer's documents (bench-contention's size), +- 1/12
  int32_t indexers = 1;      // indexer documents in flight in the under_indexing arm
};

// The scenario configuration bench-serve replays (side tasks and lifecycle off).
ScenarioConfig ServeLoadConfig(const ServeBenchOptions& options);

struct ServeArmStats {
  std::string name;  // "idle" or "under_indexing"
  int32_t planned = 0;    // chat turns
  int32_t completed = 0;  // chat turns that ended well
  int32_t failed = 0;
  int32_t late_errors = 0;          // completed turns the server flagged after their text
  std::vector<std::string> errors;  // the first few, of either kind
  double duration_s = 0.0;          // the arm's blocks, think times included
  int64_t input_tokens = 0;         // chat prompt tokens (usage)
  int64_t cached_tokens = 0;
  int64_t output_tokens = 0;
  Percentiles ttft_ms, tpot_ms, e2e_ms;
  int32_t docs_completed = 0;
  int64_t indexer_tokens = 0;  // prompt + generated tokens of completed documents
};

struct ServeBenchReport {
  ServeBenchOptions options;
  ScenarioConfig config;
  std::string load_average;
  std::vector<ServeArmStats> arms;  // idle, under_indexing
  // under_indexing TTFT p50 / idle TTFT p50; -1 without both.
  double ttft_p50_ratio = -1.0;
  bool all_completed() const;
};

// Progress lines (block starts) for stderr.
using ProgressFn = std::function<void(const std::string&)>;
Result<ServeBenchReport> RunServeBench(const ServeBenchOptions& options, const ProgressFn& progress);

// The vLLM-style text report, and the same numbers as JSON.
std::string ServeReportText(const ServeBenchReport& report);
std::string ServeReportJson(const ServeBenchReport& report);

}  // namespace valet::testing
