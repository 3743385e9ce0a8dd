// The "chat under indexing" scenario (docs in ../shared/design/valet.md):
// its configuration, the seeded workload every arm replays, the arms, and
// what one arm's run records.
//
// A run is closed-loop on the chat side (a turn starts a seeded think time
// after the previous one finished) and keeps exactly one indexer document in
// flight (the next is submitted when one completes). Background summaries and
// inline suggestions arrive at seeded points of the think times, so every arm
// gets the same tasks whatever its speed. Midway, the app goes to the
// background (ON_PAUSE, ON_STOP) for a while and comes back (ON_START,
// ON_RESUME) before the next turn; later, during one chat turn, the OS reports
// critically low memory. The workload uses a clock for arrivals; the
// scheduler under test does not.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_interface.h"
#include "valet/scheduler.h"

namespace valet::testing {

enum class Arm : int32_t { kIdle = 0, kFifo, kBatch, kPriority, kValet, kSolo };
inline constexpr int kNumArms = 5;  // kSolo is the calibration run, not an arm
const char* ArmName(Arm arm);
// "idle,fifo,batch,priority,valet" (any subset, any order, no repeats).
Result<std::vector<Arm>> ParseArms(std::string_view list);

struct ScenarioConfig {
  uint64_t seed = 1;
  int32_t turns = 30;
  int32_t system_tokens = 128;    // cached shared system prompt
  int32_t user_tokens = 32;       // each +- user_jitter
  int32_t user_jitter = 4;
  int32_t answer_tokens = 32;
  // A fixed instruction every indexer document starts with, cached as its
  // shared prefix (0: none). It lets eviction choose between keeping it
  // (partial) and dropping it too (full).
  int32_t doc_instruction_tokens = 48;
  int32_t doc_tokens = 768;       // each +- doc_jitter
  int32_t doc_jitter = 64;
  int32_t doc_summary_tokens = 48;
  int32_t summary_prompt_tokens = 256;
  int32_t summary_tokens = 32;
  int32_t suggestion_prompt_tokens = 48;
  int32_t suggestion_tokens = 8;
  double think_min_s = 0.6;
  double think_max_s = 1.6;
  double summary_chance = 0.35;     // per think time
  double suggestion_chance = 0.5;   // per think time
  // The app goes to the background after this turn (-1: never) for this long.
  int32_t lifecycle_after_turn = -1;  // < 0 and turns >= 4: turns / 2
  double background_s = 3.0;
  // Many returns (issue 22): the app goes to the background before this many
  // chat turns instead of the single excursion above (0: the single one). The
  // return turns are spread evenly over the turns that are neither a block's
  // first (a block is one scheduler's run, so the excursion must fall inside
  // it) nor the low-memory turn (which would mix two effects); fewer when
  // fewer turns qualify. Each excursion: ON_PAUSE, ON_STOP, onTrimMemory
  // hide_trim_level, deep_trim_level halfway through the stay, then ON_START,
  // ON_RESUME and the return turn's own think time before it is submitted
  // (the user has not typed yet when ON_START arrives).
  int32_t returns = 0;
  // What Android sends as the UI goes away (0: nothing; -1: UI_HIDDEN with
  // returns > 0, nothing for the single excursion, as before returns existed).
  int32_t hide_trim_level = -1;
  int32_t deep_trim_level = 0;  // e.g. 40 (BACKGROUND) or 80 (COMPLETE); 0: none
  // Resolved from `returns`: the turns submitted first after a return, ascending.
  std::vector<int32_t> return_turns;
  // The OS reports critically low memory (onTrimMemory RUNNING_CRITICAL) this
  // long after this turn's chat is submitted (-1: never): parked work gives
  // its KV back, prefixes included, and the pool shrinks until work needs it.
  int32_t low_memory_turn = -1;  // < 0 and turns >= 4: turns * 3 / 4
  double low_memory_delay_s = 0.05;
  int32_t calibration_docs = 1;       // indexer-alone documents per block (the solo rate)
  // Documents the indexer keeps in flight under chat (the solo calibration keeps one).
  int32_t indexers = 1;
  // Arms run in interleaved blocks of this many turns (each block: the
  // calibration, then every arm, the order rotating from block to block), so
  // a drift of the machine's speed reaches every arm alike.
  int32_t block_turns = 6;
  // Budgets: valet runs the shipped BudgetTable::Defaults(); valet_bg_chunk > 0
  // overrides its non-chat prefill chunk while RESUMED/STARTED (experiments).
  // The baselines' chunk is llama-server's n_ubatch for `batch`.
  int32_t valet_bg_chunk = 0;
  int32_t baseline_chunk = 256;
  int32_t batch_chunk = 512;
  bool valet_fill = true;  // lower tiers' decode tokens ride along chat decode steps
  // The app's consumer of background work (summaries, indexing) takes this
  // long per token in its listener (a database write, say); real-time runs
  // only. 0: a listener that only counts.
  double slow_listener_s = 0.0;
};

// Resolves the defaults that depend on other fields.
ScenarioConfig Resolve(ScenarioConfig config);
// The `returns` turns of [1, turns) the app comes back before: evenly spread,
// none a block's first nor `low_memory_turn` (see ScenarioConfig::returns).
std::vector<int32_t> ReturnTurns(int32_t turns, int32_t returns, int32_t block_turns, int32_t low_memory_turn);

// Text of exact token lengths under the engine's tokenizer, and the plan.
struct SideEvent {
  Tier tier = Tier::kInlineSuggestion;
  double fraction = 0.5;  // of the think time before the turn
  int32_t text = 0;
};

struct TurnPlan {
  double think_s = 1.0;
  int32_t user_text = 0;
  std::vector<SideEvent> side;
};

struct Workload {
  std::string system_prompt;
  std::vector<std::string> user_texts;
  std::string doc_instruction;         // the documents' shared prefix
  std::vector<std::string> doc_texts;  // cycled by the indexer
  std::vector<std::string> summary_texts;
  std::vector<std::string> suggestion_texts;
  std::vector<TurnPlan> turns;
};

// Turns [first, first + count) of `workload`, everything else shared.
Workload SliceTurns(const Workload& workload, size_t first, size_t count);

// Deterministic for (config, tokenizer).
Result<Workload> BuildWorkload(const ScenarioConfig& config, const EngineInterface& tokenizer);
// The same workload for a tokenizer reached some other way (a server's
// /tokenize): the number of tokens of a text without BOS, or why not.
using TokenCounter = std::function<Result<int32_t>(const std::string& text)>;
Result<Workload> BuildWorkload(const ScenarioConfig& config, const TokenCounter& count_tokens);

// Caches the system prompt's KV before an arm starts, as on a phone where the
// assistant has been used before: a one-token chat turn, not recorded.
TaskRequest WarmUpRequest(const Workload& workload);

// Chat turn `turn` of the workload: the cached system prompt, the turn's user
// text, seeded sampling.
TaskRequest ChatTurnRequest(const Workload& workload, const ScenarioConfig& config, int32_t turn);

// Scheduler options for an arm (the budget tables are documented in the report).
SchedulerOptions ArmOptions(Arm arm, const ScenarioConfig& config);

enum class TaskKind : int32_t { kChat = 0, kDoc, kSummary, kSuggestion };
const char* TaskKindName(TaskKind kind);

struct TaskRecord {
  TaskId id = 0;
  TaskKind kind = TaskKind::kChat;
  Tier tier = Tier::kForegroundChat;
  int32_t turn = -1;  // chat turns: index
  bool done = false;  // on_done seen
  TaskResult result;
  std::vector<TimelineEvent> timeline;
};

// Cumulative scheduler counters at a moment of the run.
struct StatsMark {
  double time = 0.0;
  std::array<int64_t, kNumTiers> processed{};  // prompt + generated tokens, per tier
  std::array<double, kNumTiers> led_s{};
  std::array<int64_t, kNumTiers> riders{};
};
StatsMark MarkFrom(const SchedulerStats& stats, double time);

// One stay in the background: ON_STOP to ON_RESUME, and the turn after it.
struct Excursion {
  StatsMark at_stop, at_resume;
  int32_t return_turn = -1;  // in the run's (block's) numbering
};

struct ArmRun {
  Arm arm = Arm::kIdle;
  double start = 0.0;       // scheduler clock
  double window_end = 0.0;  // last chat turn done (solo: last calibration doc done)
  double end = 0.0;         // every task finished
  StatsMark at_start, at_stop, at_resume, at_window_end;  // at_stop/at_resume: the first excursion
  bool had_lifecycle = false;
  int32_t first_turn_after_resume = -1;
  std::vector<Excursion> excursions;  // every one, in order (completed ones)
  std::vector<TaskRecord> tasks;  // in submission order
  SchedulerStats stats;
  // Engine-side park/resume wall time (RealEngine accounting); -1 if unknown.
  double park_seconds = -1.0;
  double resume_seconds = -1.0;
  std::string error;  // non-empty when a submission failed
};

// Engine hooks the runner may use (all optional).
struct EngineProbe {
  // Cumulative seconds spent saving and restoring parked sequences.
  std::function<double()> park_seconds;
  std::function<double()> resume_seconds;
};

// Real time: the threaded Scheduler on `engine`, arrivals on a wall clock.
Result<ArmRun> RunArmRealTime(EngineInterface& engine, const Workload& workload, const ScenarioConfig& config,
                              Arm arm, const EngineProbe& probe = {});

class FakeEngine;
// Virtual time: SchedulerCore on the fake engine's clock, one thread,
// deterministic (tests).
Result<ArmRun> RunArmVirtual(FakeEngine& engine, const Workload& workload, const ScenarioConfig& config, Arm arm);

}  // namespace valet::testing
