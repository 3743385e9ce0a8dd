// Turns arm runs into the scenario's report: per-arm latency percentiles,
// interference slowdown, preemption latency and background throughput, as a
// Markdown table and as JSON.
//
// Background throughput, precisely: background tokens are prompt + generated
// tokens of the BACKGROUND_SUMMARY and OFFLINE_INDEXING tiers (recompute
// excluded) processed in an arm's windows (block start to the end of its last
// chat turn). The time the foreground left free is the window minus the steps
// a foreground tier led (whole steps: a chat step is the chat's however many
// riders it carries). The figure, bounded by the engine's speed:
//   bg_free_rate_vs_solo = (background tokens processed in steps the
//   background led / free time) / R,
// where R is the indexer's solo rate measured in the same run, interleaved
// with the arms. Tokens that rode along chat steps are counted apart.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "testing/bench/contention_scenario.h"
#include "testing/bench/latency_stats.h"

namespace valet::testing {

struct Calibration {
  double solo_tokens_per_s = 0.0;
  int64_t tokens = 0;
  double seconds = 0.0;
};
Calibration CalibrationFrom(std::span<const ArmRun> solo_blocks);

// One task of an arm, for the JSON's per-task list.
struct TaskRow {
  TaskId id = 0;
  TaskKind kind = TaskKind::kChat;
  int32_t turn = -1;
  TaskState state = TaskState::kQueued;
  double submit_s = 0.0;  // since the arm's start
  double wait_ms = -1.0;  // submit -> sequence opened
  double ttft_ms = -1.0;
  double e2e_ms = -1.0;
  int32_t prompt_tokens = 0;
  int32_t generated_tokens = 0;
  int32_t parks = 0;
  int32_t tokens_recomputed = 0;
  bool return_turn = false;  // the first chat turn after a return to the foreground
};

// The chat turns submitted first after each return to the foreground
// (ScenarioConfig::returns), apart: the case the chat's cached system prompt
// must survive the background for (docs/memory.md, "The way back").
struct ReturnTurnStats {
  std::vector<double> ttft_samples_ms;  // in submission order
  Percentiles ttft_ms, wait_ms, prompt_ms;
  double slowdown_p50 = -1.0;  // return-turn TTFT p50 / idle's return turns' (same moments)
  double slowdown_p99 = -1.0;
  RatioInterval slowdown_p50_ci;  // bootstrap 95%
  RatioInterval slowdown_p99_ci;  // only with kMinSamplesForP99 on both sides
};

struct ArmSummary {
  Arm arm = Arm::kIdle;
  std::vector<TaskRow> tasks;
  std::vector<double> ttft_samples_ms;  // chat turns, in submission order
  Percentiles ttft_ms, tpot_ms, e2e_ms, preempt_ms;
  // A chat's TTFT in two parts: submitted -> sequence opened (the step in
  // flight, parking others, opening), opened -> first token (its prompt).
  Percentiles wait_ms, prompt_ms;
  double slowdown_p50 = -1.0;  // TTFT / idle TTFT
  double slowdown_p99 = -1.0;
  RatioInterval slowdown_p50_ci;  // bootstrap 95%
  RatioInterval slowdown_p99_ci;  // only when both arms have kMinSamplesForP99 turns
  int64_t submitted = 0, done = 0, cancelled = 0, failed = 0, unfinished = 0;
  int64_t chat_turns = 0, docs_completed = 0, summaries_done = 0, suggestions_done = 0;
  double window_s = 0.0;
  int64_t bg_tokens = 0;
  double bg_tokens_per_s = 0.0;
  double fg_led_s = 0.0;              // steps a foreground tier led
  double free_s = 0.0;                // window_s - fg_led_s
  double bg_led_s = 0.0;              // steps a background tier led
  int64_t bg_rider_tokens = 0;        // background tokens carried by foreground steps
  double bg_free_rate_vs_solo = -1.0;  // see the top of this file
  // Lifecycle segment: background tokens/s while RESUMED and while in the
  // background (CREATED), and the first chat turn's TTFT after ON_RESUME.
  double bg_tps_resumed = -1.0;
  double bg_tps_background = -1.0;
  double ttft_after_resume_ms = -1.0;  // the first excursion's
  ReturnTurnStats returns;
  int64_t prefix_warm_tokens = 0;  // system-prompt tokens recomputed at ON_START
  int64_t tokens_recomputed = 0;
  std::array<int64_t, kNumRecomputeCauses> recomputed_by_cause{};
  int64_t preemptions = 0;
  std::array<int64_t, 5> parks_by_kind{};
  size_t snapshot_bytes = 0;  // written by snapshot_ram / snapshot_disk parks
  double park_ms = -1.0;      // engine time saving / restoring, when known
  double resume_ms = -1.0;
  // Finished tasks whose tokens differ from the same task (same block,
  // kind, turn and order) in the first run that finished it: scheduling must
  // not change outputs.
  int64_t output_mismatches = 0;
  std::string error;
};

// An arm's blocks merged. `idle` may be null (no idle arm ran): slowdowns
// stay -1.
ArmSummary Summarize(std::span<const ArmRun> blocks, const Calibration& calibration, const ArmSummary* idle);

struct ContentionReport {
  ScenarioConfig config;
  std::string model;
  std::string machine;  // e.g. uptime load
  int threads = 0;
  size_t kv_pool_bytes = 0;
  Calibration calibration;
  std::vector<ArmSummary> arms;
};

std::string ReportMarkdown(const ContentionReport& report);
std::string ReportJson(const ContentionReport& report);
// One line per arm setting the seed's phone figures beside ours.
std::string SeedComparison(const ContentionReport& report);

}  // namespace valet::testing
