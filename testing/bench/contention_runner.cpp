#include "testing/bench/contention_runner.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace valet::testing {

namespace {

// A task's identity across arms: the same block, kind, turn and order of
// submission within that (kind, turn) get the same prompt and seed.
using TaskKey = std::tuple<size_t, TaskKind, int32_t, int32_t>;

// Counts, per run, the finished tasks whose tokens differ from the first run
// that finished the same task (the calibration's, for a block's first
// document).
class OutputCheck {
 public:
  int64_t Add(size_t block, const ArmRun& run) {
    std::map<std::pair<TaskKind, int32_t>, int32_t> ordinal;
    int64_t mismatches = 0;
    for (const TaskRecord& t : run.tasks) {
      const TaskKey key{block, t.kind, t.turn, ordinal[{t.kind, t.turn}]++};
      if (!t.done || t.result.state != TaskState::kDone) continue;
      auto [it, first] = reference_.try_emplace(key, t.result.tokens);
      if (!first && it->second != t.result.tokens) ++mismatches;
    }
    return mismatches;
  }

 private:
  std::map<TaskKey, std::vector<int32_t>> reference_;
};

}  // namespace

ScenarioConfig BlockConfig(const ScenarioConfig& config, size_t first, size_t count) {
  ScenarioConfig c = config;
  c.turns = static_cast<int32_t>(count);
  const int32_t at = config.lifecycle_after_turn - static_cast<int32_t>(first);
  // The excursion happens between two turns of its block.
  c.lifecycle_after_turn = at >= 0 && at < c.turns ? std::min(at, c.turns - 2) : -1;
  const int32_t low = config.low_memory_turn - static_cast<int32_t>(first);
  c.low_memory_turn = low >= 0 && low < c.turns ? low : -1;
  // Return turns never start a block (ReturnTurns), so each stays in its block.
  c.return_turns.clear();
  for (int32_t r : config.return_turns) {
    const int32_t local = r - static_cast<int32_t>(first);
    if (local >= 1 && local < c.turns) c.return_turns.push_back(local);
  }
  return c;
}

Result<InterleavedRuns> RunInterleaved(const ScenarioConfig& config, const Workload& workload,
                                       std::span<const Arm> arms, const BlockRunner& run_block,
                                       const RunnerProgress& progress) {
  if (config.block_turns < 1) return InvalidArgument("block_turns must be at least 1");
  InterleavedRuns runs;
  runs.blocks.resize(arms.size());
  const size_t turns = workload.turns.size(), block = static_cast<size_t>(config.block_turns);
  for (size_t first = 0, index = 0; first < turns; first += block, ++index) {
    const size_t count = std::min(block, turns - first);
    const Workload slice = SliceTurns(workload, first, count);
    const ScenarioConfig c = BlockConfig(config, first, count);
    const std::string turns_text = "turns " + std::to_string(first + 1) + "-" + std::to_string(first + count);
    if (progress) progress(turns_text + ": the indexer alone ...");
    VALET_ASSIGN_OR_RETURN(ArmRun solo, run_block(Arm::kSolo, slice, c));
    runs.solo.push_back(std::move(solo));
    for (size_t k = 0; k < arms.size(); ++k) {
      const size_t a = (k + index) % arms.size();  // rotate: no arm always runs first or last
      if (progress) progress(turns_text + ": " + ArmName(arms[a]) + " ...");
      VALET_ASSIGN_OR_RETURN(ArmRun run, run_block(arms[a], slice, c));
      runs.blocks[a].push_back(std::move(run));
    }
  }
  return runs;
}

ContentionReport ReportFrom(const ScenarioConfig& config, std::span<const Arm> arms, const InterleavedRuns& runs) {
  ContentionReport report;
  report.config = config;
  report.calibration = CalibrationFrom(runs.solo);
  const auto idle_at = std::find(arms.begin(), arms.end(), Arm::kIdle);
  std::optional<ArmSummary> idle;
  if (idle_at != arms.end()) {
    idle = Summarize(runs.blocks[static_cast<size_t>(idle_at - arms.begin())], report.calibration, nullptr);
  }
  for (size_t a = 0; a < arms.size(); ++a) {
    report.arms.push_back(arms[a] == Arm::kIdle ? *idle
                                                : Summarize(runs.blocks[a], report.calibration, idle ? &*idle : nullptr));
  }
  for (ArmSummary& s : report.arms) {
    if (s.arm == Arm::kIdle && !s.ttft_ms.empty()) s.slowdown_p50 = s.slowdown_p99 = 1.0;
    if (s.arm == Arm::kIdle && !s.returns.ttft_ms.empty()) s.returns.slowdown_p50 = s.returns.slowdown_p99 = 1.0;
  }
  OutputCheck check;
  const size_t blocks = runs.solo.size();
  for (size_t b = 0; b < blocks; ++b) {
    check.Add(b, runs.solo[b]);
    for (size_t a = 0; a < arms.size(); ++a) {
      if (b < runs.blocks[a].size()) report.arms[a].output_mismatches += check.Add(b, runs.blocks[a][b]);
    }
  }
  return report;
}

}  // namespace valet::testing
