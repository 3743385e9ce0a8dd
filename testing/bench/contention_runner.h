// Runs the scenario's arms interleaved: the chat turns are cut into blocks,
// and each block runs the indexer-alone calibration and then every arm on
// the block's turns, the arm order rotating from one block to the next. A
// machine whose speed drifts (other load, frequency, a neighbour on a shared
// host) then slows every arm alike instead of whichever ran last, and the
// solo rate the background figure is relative to is measured beside them.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "testing/bench/contention_report.h"
#include "testing/bench/contention_scenario.h"

namespace valet::testing {

// Runs one arm on one block's workload (a real-time or virtual-time runner).
using BlockRunner = std::function<Result<ArmRun>(Arm arm, const Workload& block, const ScenarioConfig& config)>;
using RunnerProgress = std::function<void(const std::string& line)>;

struct InterleavedRuns {
  std::vector<ArmRun> solo;                 // one per block
  std::vector<std::vector<ArmRun>> blocks;  // [arm index in the request][block]
};

// The configuration of the block of turns [first, first + count): its turn
// count, the lifecycle excursion only if the block holds
// config.lifecycle_after_turn, and the return turns it holds (renumbered).
ScenarioConfig BlockConfig(const ScenarioConfig& config, size_t first, size_t count);

// `config` must be Resolve()d and `workload` built from it.
Result<InterleavedRuns> RunInterleaved(const ScenarioConfig& config, const Workload& workload,
                                       std::span<const Arm> arms, const BlockRunner& run_block,
                                       const RunnerProgress& progress = {});

// The report of interleaved runs: every arm's blocks merged, slowdowns and
// their intervals against the idle arm when it ran.
ContentionReport ReportFrom(const ScenarioConfig& config, std::span<const Arm> arms, const InterleavedRuns& runs);

}  // namespace valet::testing
