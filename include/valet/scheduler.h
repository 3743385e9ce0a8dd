// valet's three-tier scheduler, public C++ API.
//
// Apps submit tasks in one of four tiers; a foreground chat request runs
// first, background work is parked (never cancelled) when a higher tier needs
// the engine and resumes exactly where it stopped. App lifecycle events (not
// timers) set how much each tier may run, through a budget table.
//
// Scheduler is callable from any thread. One inference thread, owned by the
// Scheduler, drives the engine and never runs the app's code: task callbacks
// run on delivery threads (DeliveryOptions), each task's in order, and a
// slow one holds back only its own task. They may call every method but
// WaitIdle, which would wait for their own on_done.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "valet/engine_interface.h"
#include "valet/export.h"
#include "valet/sampling.h"
#include "valet/status.h"
#include "valet/task.h"

namespace valet {

// Android's lifecycle events and the states they lead to.
enum class LifecycleEvent : int32_t { kOnCreate, kOnStart, kOnResume, kOnPause, kOnStop, kOnDestroy };
enum class LifecycleState : int32_t { kDestroyed = 0, kCreated, kStarted, kResumed };
inline constexpr int kNumLifecycleStates = 4;
VALET_API const char* LifecycleEventName(LifecycleEvent event);
VALET_API const char* LifecycleStateName(LifecycleState state);
// The state `event` leads to from `state`; InvalidArgument when out of order
// (ON_CREATE from DESTROYED only, ON_START from CREATED, ON_RESUME from
// STARTED, ON_PAUSE from RESUMED, ON_STOP from STARTED, ON_DESTROY from CREATED).
VALET_API Result<LifecycleState> NextLifecycleState(LifecycleState state, LifecycleEvent event);
// Until the first accepted event the state is only the app's guess
// (SchedulerOptions::initial_state), and androidx brings an observer added to
// a Lifecycle up to date with ON_CREATE (then ON_START, ON_RESUME as due): so
// the first event may be ON_CREATE from any state. After that, the strict order.
enum class LifecycleHistory : int32_t { kNoEventYet, kEventsSeen };
VALET_API Result<LifecycleState> NextLifecycleState(LifecycleState state, LifecycleEvent event,
                                                    LifecycleHistory history);

// Android's PowerManager.THERMAL_STATUS_* values.
enum class ThermalStatus : int32_t { kNone = 0, kLight, kModerate, kSevere, kCritical, kEmergency, kShutdown };
inline constexpr int kNumThermalStatuses = 7;
VALET_API const char* ThermalStatusName(ThermalStatus status);
// InvalidArgument outside 0..6.
VALET_API Result<ThermalStatus> ThermalStatusFromInt(int value);
// PowerManager.getThermalHeadroom() reaches 1.0 where SEVERE throttling
// starts, so a forecast at or above 1.0 counts as at least SEVERE. Negative or
// NaN headroom is unknown and changes nothing.
VALET_API ThermalStatus EffectiveThermalStatus(ThermalStatus status, float headroom);

// Android's ComponentCallbacks2.onTrimMemory levels. What each one frees is
// in docs/memory.md; none ever cancels a task.
enum class TrimLevel : int32_t {
  kRunningModerate = 5,   // deprecated in API 34, still sent by older devices
  kRunningLow = 10,
  kRunningCritical = 15,
  kUiHidden = 20,
  kBackground = 40,
  kModerate = 60,
  kComplete = 80,
};
VALET_API const char* TrimLevelName(TrimLevel level);
// The highest named level at or below `value` (a level a newer Android adds
// is treated as the one below it); InvalidArgument below 5.
VALET_API Result<TrimLevel> TrimLevelFromInt(int value);

// What a tier may do while the app is in one lifecycle state.
inline constexpr int64_t kUnlimitedTokens = -1;
struct TierBudget {
  // Budgets count generated tokens plus prompt tokens weighted by
  // SchedulerOptions::prompt_token_weight.
  int32_t turn_tokens = 0;                      // per turn before yielding to equal tiers; 0: no limit
  int64_t state_cap_tokens = kUnlimitedTokens;  // while in this state; over it the tier parks
  int32_t prefill_chunk = 256;                  // prompt/recompute tokens per step
  int32_t threads = 0;                          // engine compute threads; 0: all hardware threads
  // The OS priority and cores of a step whose highest tier this is
  // (valet/threads.h): nice 0 under kNormal is the app's priority;
  // kBackgroundNice is Android's THREAD_PRIORITY_BACKGROUND.
  int32_t nice = 0;
  CoreClass cores = CoreClass::kAll;
  SchedPolicy policy = SchedPolicy::kNormal;
};

// What heat allows, on top of the lifecycle budgets (the smaller wins). Heat
// throttles, it never cancels: a tier below lowest_running_tier stays parked
// until the phone cools.
struct ThermalCaps {
  int32_t threads = 0;             // engine threads for every tier; 0: no cap
  int32_t background_threads = 0;  // for BACKGROUND_SUMMARY and OFFLINE_INDEXING; 0: no cap
  Tier lowest_running_tier = Tier::kOfflineIndexing;
};

// The battery as Android reports it: ACTION_BATTERY_CHANGED (its sticky
// intent: plugged, level), ACTION_POWER_SAVE_MODE_CHANGED
// (PowerManager.isPowerSaveMode()) and ACTION_BATTERY_LOW / _OKAY. The
// defaults constrain nothing: a device that never reports runs every tier.
struct PowerState {
  bool charging = true;          // plugged in (AC, USB, wireless)
  int32_t battery_percent = -1;  // 0..100; -1: unknown (reported, never decides)
  bool power_save = false;       // battery saver is on
  bool battery_low = false;      // between ACTION_BATTERY_LOW and ACTION_BATTERY_OKAY
};

// InvalidArgument for a battery_percent outside -1..100.
VALET_API Status CheckPowerState(const PowerState& power);

// What a tier needs of the battery to run, as WorkManager's constraints put
// it. A tier whose needs are not met parks (never cancels) until they are;
// a durable task of it waits across process deaths too.
struct PowerNeeds {
  bool requires_charging = false;         // WorkManager's requiresCharging
  bool requires_battery_not_low = false;  // requiresBatteryNotLow: charging, or not low
  bool requires_power_save_off = false;   // parked while battery saver is on
  // Whether `power` meets these needs.
  bool MetBy(const PowerState& power) const {
    return !(requires_charging && !power.charging) &&
           !(requires_battery_not_low && power.battery_low && !power.charging) &&
           !(requires_power_save_off && power.power_save);
  }
};

struct VALET_API BudgetTable {
  std::array<std::array<TierBudget, kNumTiers>, kNumLifecycleStates> budgets;
  std::array<ThermalCaps, kNumThermalStatuses> thermal;
  std::array<PowerNeeds, kNumTiers> power;  // the power column, by tier

  const PowerNeeds& needs(Tier t) const { return power[static_cast<size_t>(t)]; }
  PowerNeeds& needs(Tier t) { return power[static_cast<size_t>(t)]; }

  const ThermalCaps& caps(ThermalStatus s) const { return thermal[static_cast<size_t>(s)]; }
  ThermalCaps& caps(ThermalStatus s) { return thermal[static_cast<size_t>(s)]; }

  const TierBudget& at(LifecycleState s, Tier t) const {
    return budgets[static_cast<size_t>(s)][static_cast<size_t>(t)];
  }
  TierBudget& at(LifecycleState s, Tier t) { return budgets[static_cast<size_t>(s)][static_cast<size_t>(t)]; }

  // RESUMED: foreground tiers uninterrupted with short chunks, background tiers
  // small turns and chunks. STARTED: like RESUMED, background a little more.
  // CREATED (ON_STOP): background tiers get their normal budget back.
  // DESTROYED: nothing runs (state cap 0); everything is parked to disk.
  // Thermal: NONE no caps; LIGHT background tiers on 1 thread; MODERATE also
  // OFFLINE_INDEXING parked; SEVERE also BACKGROUND_SUMMARY parked and at most
  // 2 threads; CRITICAL 1 thread; EMERGENCY and SHUTDOWN only FOREGROUND_CHAT.
  // Threads: foreground tiers at the app's priority on the performance
  // cores, background tiers under SCHED_IDLE (nice 10 where that cannot be
  // set) on the efficiency cores, in every state.
  // Power, as WorkManager's background work is constrained: chat and
  // suggestions always run; BACKGROUND_SUMMARY parks in battery saver;
  // OFFLINE_INDEXING also needs the battery not low (or charging).
  static BudgetTable Defaults();
};

// JSON form (every key optional; unnamed entries keep their defaults):
//   {"RESUMED": {"OFFLINE_INDEXING": {"turn_tokens": 8, "state_cap_tokens": -1,
//                                     "prefill_chunk": 32, "threads": 1, "nice": 10,
//                                     "policy": "idle", "cores": "efficiency"}}, ...}
// States: RESUMED STARTED CREATED DESTROYED; tiers: FOREGROUND_CHAT
// INLINE_SUGGESTION BACKGROUND_SUMMARY OFFLINE_INDEXING. The thermal column:
//   {"thermal": {"MODERATE": {"threads": 0, "background_threads": 1,
//                             "lowest_running_tier": "BACKGROUND_SUMMARY"}}}
// with NONE LIGHT MODERATE SEVERE CRITICAL EMERGENCY SHUTDOWN; a
// lowest_running_tier below FOREGROUND_CHAT is impossible (chat always runs).
// The power column, by tier:
//   {"power": {"OFFLINE_INDEXING": {"requires_charging": true, "requires_battery_not_low": true,
//                                   "requires_power_save_off": true}}}
// FOREGROUND_CHAT needs nothing of the battery, whatever the table says
// (InvalidArgument otherwise): the user is waiting for it.
// Unknown names and out-of-range values are InvalidArgument.
VALET_API Result<BudgetTable> ParseBudgetTable(std::string_view json);
VALET_API Result<BudgetTable> LoadBudgetTable(const std::string& path);

// How lower tiers share a step with the highest runnable tier.
enum class BatchMode : int32_t {
  kStrict = 0,  // the highest tier runs alone
  kFill,        // lower tiers' decode tokens ride along in its decode steps while cheap
};

// Overrides the preemption controller's choice (benchmark arms, tests).
enum class ParkPolicy : int32_t {
  kAuto = 0,  // resident while the pool has room, else the engine's cheapest
  kForceResident,
  kForceSnapshotRam,
  kForceSnapshotDisk,
  kForcePartial,
  kForceFull,
};

// Which tasks run and when. kValet is the scheduler this library is about;
// the others are the baselines a benchmark sets beside it (same engine, same
// budget table, same tracing), not production modes.
enum class QueuePolicy : int32_t {
  kValet = 0,          // tiers, preemption of lower tiers, turns (the default)
  kFifo,               // one queue in arrival order, tiers ignored; a task runs to completion
  kPriorityNoPreempt,  // tier order, but a started task runs to completion
  kBatchAll,           // every admitted task advances in every step (llama-server's parallel
                       // slots): decode tokens first, then prompt chunks fill the step
};
VALET_API const char* QueuePolicyName(QueuePolicy policy);

// Where task callbacks run. Each task's events (on_token, on_logprobs,
// on_state, on_done) are delivered in order, one at a time, on a pool of
// delivery threads that grows while every thread is busy in a callback, so
// one slow listener never delays another task's events. A task whose
// consumer falls max_pending_events behind is parked (like any park: resumed
// exactly where it was) until its backlog is down to resume_at_events; the
// engine and every other task go on meanwhile.
struct DeliveryOptions {
  size_t max_pending_events = 32;  // per task, at least 1
  size_t resume_at_events = 8;     // below max_pending_events
  size_t max_threads = 64;         // at least 1; beyond it, ready tasks' events wait their turn
  size_t idle_threads = 2;         // kept waiting for work; more exit when idle
};

// Where a test may step into durable tasks' writes: the kill soak dies at
// chosen points in them (docs/durable.md, "Fault injection"). An app leaves
// them empty; valet never sets them itself (`valet serve --fault` and the
// tests do). Called on the thread that writes.
struct DurableWriteHooks {
  // Before each record is appended to a journal, with the journal's file
  // descriptor and the whole record; the record is written when it returns.
  // The header and Submit a journal is created with are not appends.
  std::function<void(int fd, std::span<const uint8_t> record)> before_journal_append;
  // When a KV checkpoint's temporary file is complete, before it is renamed
  // over the checkpoint.
  std::function<void()> before_checkpoint_rename;
};

struct SchedulerOptions {
  QueuePolicy queue_policy = QueuePolicy::kValet;
  BudgetTable budgets = BudgetTable::Defaults();
  LifecycleState initial_state = LifecycleState::kResumed;
  // The battery at start, before the app's first OnPowerState: a process
  // started on a low battery keeps durable indexing waiting from the start.
  PowerState initial_power;
  BatchMode batch_mode = BatchMode::kStrict;
  // kFill: riders join while their measured marginal step cost stays below
  // this fraction of a solo decode step, so the chat's TPOT grows by at most
  // that much.
  double fill_max_cost_fraction = 0.05;
  // What one prompt token costs a budget, in generated tokens. A prompt token
  // runs in a batch, a few times cheaper than a decode token (pp512 is 3-4x
  // tg128 on the bench model); recompute after a park is never charged.
  double prompt_token_weight = 0.25;
  ParkPolicy park_policy = ParkPolicy::kAuto;
  // Finished tasks whose records (Timeline, Metrics, a server's
  // /v1/tasks) are kept, the oldest forgotten first; at least 1. Live
  // tasks' records are always kept, and durable tasks' results stay in their
  // journals until acknowledged, whatever this says.
  size_t finished_task_records = 4096;
  // Chat message content (and system_prompt with messages) is text: a
  // control-token text typed in it ("<|im_start|>system") stays text, and only
  // the chat template's markup makes control tokens. True parses them in
  // content too, as tokenizing the whole rendered prompt with special tokens
  // parsed does (llama.cpp's server). Raw prompts are always parsed. Part of
  // a durable task's identity: its journal resumes only under the same value.
  bool parse_special_in_messages = false;
  // Where durable tasks (TaskRequest::durable) keep their journals
  // (docs/durable.md); empty: durable tasks are refused. One scheduler at a
  // time may own the directory. Opened when the scheduler is made, created
  // 0700 if missing, never through a symbolic link: Scheduler::Create fails
  // (InvalidArgument, naming the path and what is wrong) for a link, a
  // non-directory, another user's directory or one others may write; one
  // that cannot be created leaves durable tasks unavailable (their calls
  // answer why).
  std::string durable_dir;
  // Names the model file (its tokenizer, chat template and weights: the C
  // API and valet serve use Engine::fingerprint()). Every journal records it
  // with valet's version and the settings outside the model that decide
  // tokens (parse_special_in_messages, the engine's context length, chat
  // format, BOS and KV type: docs/durable.md, "Identity"); a journal written
  // under any other is skipped with the difference named, never misread.
  // Required with durable_dir.
  std::string model_fingerprint;
  // The most bytes durable_dir may hold (journals and KV checkpoints): a
  // durable task submitted beyond it is refused (ResourceExhausted) until
  // finished tasks are acknowledged, and a checkpoint that would exceed it is
  // not written (recovery then recomputes). Nothing already written is dropped.
  size_t durable_disk_budget_bytes = size_t{1} << 30;
  // Seconds on a monotonic clock; default std::chrono::steady_clock. Tests
  // pass the fake engine's virtual clock. Must be callable from any thread.
  std::function<double()> clock;
  DeliveryOptions delivery;
  // A test seam (above); empty: durable writes run uninterrupted.
  DurableWriteHooks durable_write_hooks;
};

// Why tokens were run through the model again (SchedulerStats::recomputed_by_cause).
enum class RecomputeCause : int32_t {
  kCutStep,           // a step stopped between layers whose progress was not kept
  kPartialEviction,   // parked down to the shared prefix
  kFullEviction,      // parked with nothing kept
  kSnapshotFallback,  // a snapshot that could not be stored or restored
};
inline constexpr int kNumRecomputeCauses = 4;
// "cut_step", "partial_eviction", "full_eviction", "snapshot_fallback".
VALET_API const char* RecomputeCauseName(RecomputeCause cause);

enum class TimelineKind : int32_t {
  kSubmitted,
  kStarted,
  kFirstToken,
  kParked,   // park_kind, bytes, tokens (dropped: to recompute)
  kResumed,  // park_kind, bytes, tokens (to recompute)
  kDone,
  kCancelled,
  kFailed,
};
VALET_API const char* TimelineKindName(TimelineKind kind);

struct TimelineEvent {
  double time = 0.0;
  TaskId task = 0;
  TimelineKind kind = TimelineKind::kSubmitted;
  ParkKind park_kind = ParkKind::kResident;
  size_t bytes = 0;
  int32_t tokens = 0;
};

// Tasks of one tier, as the threaded Scheduler sees them through callbacks.
struct TierTaskCounts {
  int64_t active = 0;  // accepted, not finished
  int64_t parked = 0;  // of which parked now
  int64_t done = 0;
  int64_t cancelled = 0;
  int64_t failed = 0;
};

// The engine's memory as of the end of the last step (the threaded Scheduler
// samples it on the inference thread).
struct MemoryStats {
  size_t pool_used_bytes = 0;
  size_t pool_capacity_bytes = 0;
  size_t snapshot_ram_bytes = 0;
  size_t snapshot_disk_bytes = 0;
  size_t weights_file_backed_bytes = 0;  // pages the system may drop and read again
  size_t weights_anonymous_bytes = 0;    // row groups packed at start without a weights cache
  size_t scratch_bytes = 0;              // forward-pass activations and matmul buffers
};

struct SchedulerStats {
  LifecycleState lifecycle = LifecycleState::kResumed;
  ThermalStatus thermal = ThermalStatus::kNone;  // effective (headroom applied)
  PowerState power;                              // as last reported
  int64_t submitted = 0;
  int64_t rejected = 0;  // failed validation
  // Durable writes that failed (a full or failing disk): a journal record
  // (its task then waits, journal_waits), a checkpoint (recovery recomputes
  // instead) or a removal.
  int64_t journal_errors = 0;
  // Times a task was parked because its journal could not take a record
  // (ParkCause::kJournalIo), until a retry wrote it.
  int64_t journal_waits = 0;
  // Durable tasks' KV checkpoints written (when parked, at ON_STOP and on a
  // memory trim), and the positions recovery took from them instead of
  // recomputing.
  int64_t durable_checkpoints = 0;
  int64_t durable_restored_tokens = 0;
  // Tokens of the foreground chat's system prompt computed again at ON_START
  // because memory pressure had taken them in the background.
  int64_t prefix_warm_tokens = 0;
  int64_t done = 0;
  int64_t cancelled = 0;
  int64_t failed = 0;
  int64_t steps = 0;
  int64_t batched_steps = 0;  // steps with riders (fill mode)
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  int64_t tokens_recomputed = 0;  // recomputed after parks (recomputed_by_cause has cut steps too)
  // Tokens run through the model again, by cause: what preemption cost
  // beyond the work itself.
  std::array<int64_t, kNumRecomputeCauses> recomputed_by_cause{};
  std::array<int64_t, kNumTiers> generated_by_tier{};
  std::array<int64_t, kNumTiers> prefill_by_tier{};  // prompt tokens fed (recompute excluded)
  // Engine time per tier: a step's time split by its items' token counts,
  // park/resume time charged to the tier of the task moved.
  std::array<double, kNumTiers> busy_seconds_by_tier{};
  // Whole-step time by the step's highest tier (its lead), and the tokens a
  // tier processed (prompt + generated, recompute excluded) in steps a higher
  // tier led: what the time the foreground left free was used for.
  std::array<double, kNumTiers> led_seconds_by_tier{};
  std::array<int64_t, kNumTiers> rider_tokens_by_tier{};
  std::array<int64_t, 5> parks_by_kind{};
  size_t park_bytes = 0;
  size_t resume_bytes = 0;
  int64_t resume_fallbacks = 0;  // snapshot missing/corrupt: recomputed instead
  int64_t preemptions = 0;       // parks caused by a higher tier
  int64_t aborted_steps = 0;     // steps stopped between layers: a lower tier's for an arrival, any for Stop
  int64_t consumer_waits = 0;    // times a task was held because its callbacks fell behind (DeliveryOptions)
  std::vector<double> preemption_latencies;  // higher-tier submit -> lower-tier parked, seconds (the last 1-2k)
  double busy_seconds = 0.0;                 // engine step + park/resume time
  // Filled by Scheduler::Stats() only (SchedulerCore leaves them zero).
  std::array<TierTaskCounts, kNumTiers> tasks_by_tier{};
  MemoryStats memory;
};

class SchedulerCore;

// The threaded scheduler: a mutex-protected inbox drained by the inference
// thread between steps. The engine must outlive the Scheduler and must not be
// used by anyone else while the Scheduler runs.
class VALET_API Scheduler {
 public:
  static Result<std::unique_ptr<Scheduler>> Create(EngineInterface& engine, SchedulerOptions options = {});
  // Stop("scheduler destroyed"), and waits for every callback to return.
  // From a task callback of this scheduler it stops, then leaves the rest
  // (the other callbacks still running, and freeing) to a thread of its own:
  // the engine is no longer used when it returns, but callbacks still
  // running must not use this Scheduler.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Stops for good: a running step of any tier stops at its next layer
  // boundary (the engine's abort flag), the inference thread ends, and every
  // unfinished task (queued, parked or running) ends CANCELLED with status
  // kAborted `reason`. Returns once every task's on_done has run; from a task
  // callback of this scheduler, once the tasks are cancelled (their
  // callbacks follow when it returns). WaitIdle then returns, Submit is
  // refused (InvalidArgument) and SetMemoryBudgets is Aborted; the other
  // calls keep answering. Idempotent: a call made while another stops waits
  // for it. Safe concurrently with every call but the destructor.
  Status Stop(const std::string& reason = "scheduler stopped");
  // True on this scheduler's delivery threads, where its task callbacks run.
  bool OnCallbackThread() const;

  Result<TaskId> Submit(TaskRequest request);
  // NotFound for an unknown id, InvalidArgument for a finished task. Ok
  // exactly when the task ends CANCELLED: the cancel is settled against the
  // task's own end under one lock, whichever comes first.
  Status Cancel(TaskId id);
  // InvalidArgument when out of order; the scheduler's state is then unchanged.
  Status OnLifecycleEvent(LifecycleEvent event);
  // PowerManager's thermal status (0..6, else InvalidArgument) and an optional
  // getThermalHeadroom() forecast (negative or NaN: unknown). Applies the
  // budget table's thermal caps; never cancels.
  Status OnThermalStatus(ThermalStatus status, float headroom = -1.0f);
  // The battery (PowerState): each tier runs only while the budget table's
  // power column allows it, and parks (never cancels) otherwise.
  // InvalidArgument for a battery_percent outside -1..100.
  Status OnPowerState(const PowerState& power);

  // Frees memory for Android's onTrimMemory(level) (docs/memory.md): RAM
  // snapshots to disk, parked KV down to the shared prefix, a smaller pool.
  // Never cancels; applied before the next step. InvalidArgument below 5.
  Status OnTrimMemory(int level);
  // New KV pool and snapshot-RAM budgets (they also end a trim's reductions).
  // Waits for the inference thread (at most one step), also from a task
  // callback. Aborted once Stop has begun.
  Status SetMemoryBudgets(const MemoryBudgets& budgets);
  MemoryBudgets memory_budgets() const;

  // Durable tasks (TaskRequest::durable, docs/durable.md). Recover resumes
  // every unfinished task journaled in SchedulerOptions::durable_dir where
  // its journal ends, each with the callbacks callbacks_for gives it (called
  // on this thread once the tasks are found; a resumed task may already run,
  // its callbacks wait for it), and lists the ended ones; Ack removes an
  // ended task's journal (NotFound when there is none, InvalidArgument
  // while it runs). Both wait for the inference thread (at most one step).
  Result<RecoveryReport> Recover(std::function<TaskCallbacks(const RecoveredTask&)> callbacks_for = {});
  Status Ack(const std::string& durable_key);
  // Writes again what durable tasks' journals could not take (a full or
  // failing disk; ParkCause::kJournalIo): each task whose journal now takes
  // it goes on, the others stay parked. Also tried on every lifecycle event
  // and whenever another durable write succeeds; never on a timer. Applied
  // before the next step.
  Status RetryJournals();

  // Blocks until every task submitted so far is finished (no timeout). Not
  // from a task callback (OnCallbackThread()): it would wait for itself.
  void WaitIdle();

  LifecycleState lifecycle_state() const;
  SchedulerStats Stats() const;
  Result<std::vector<TimelineEvent>> Timeline(TaskId id) const;
  Result<TaskMetrics> Metrics(TaskId id) const;
  // The task's state and, when parked, why (NotFound as Metrics).
  Result<TaskInfo> Info(TaskId id) const;
  // Chrome trace-event JSON (chrome://tracing, Perfetto) of the run so far.
  std::string ChromeTraceJson() const;

 private:
  struct Impl;
  explicit Scheduler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace valet
