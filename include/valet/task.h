// A task as the app submits it and is told of it: its tier, its request and
// callbacks, its states, result and metrics, and what recovery finds of a
// durable one. What the scheduler (valet/scheduler.h) and durable tasks'
// journals both speak, apart from the scheduler itself.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "valet/constraint.h"
#include "valet/export.h"
#include "valet/sampling.h"
#include "valet/status.h"

namespace valet {

using TaskId = int64_t;

// Lower runs first; FIFO within a tier.
enum class Tier : int32_t {
  kForegroundChat = 0,
  kInlineSuggestion = 1,
  kBackgroundSummary = 2,
  kOfflineIndexing = 3,
};
inline constexpr int kNumTiers = 4;
VALET_API const char* TierName(Tier tier);
// InvalidArgument for values outside the four tiers.
VALET_API Result<Tier> TierFromInt(int value);

// Ordered: a task only moves forward, or between PREFILLING/DECODING and PARKED.
enum class TaskState : int32_t {
  kQueued = 0,
  kPrefilling,
  kParked,
  kDecoding,
  kDone,
  kCancelled,  // only ever by the app
  kFailed,     // too large for the KV pool even alone (found at admission), or an engine error
};
VALET_API const char* TaskStateName(TaskState state);
inline bool IsTerminal(TaskState s) { return s >= TaskState::kDone; }

// Why a PARKED task waits (TaskInfo); kNone in every other state.
enum class ParkCause : int32_t {
  kNone = 0,
  kHigherTier,  // a higher tier runs
  kTurn,        // a task of its tier takes its turn
  kBudget,      // its tier's lifecycle or thermal budget is spent
  kMemory,      // memory pressure, a trim, or the app's destruction
  kConsumer,    // its callbacks fell behind (DeliveryOptions)
  kJournalIo,   // its journal cannot be written (a full or failing disk): Scheduler::RetryJournals
  kPower,       // its tier waits for the battery: charging, not low, or battery saver off (PowerNeeds)
};
// "none", "higher_tier", "turn", "budget", "memory", "consumer", "journal_io", "power".
VALET_API const char* ParkCauseName(ParkCause cause);

struct TaskInfo {
  TaskState state = TaskState::kQueued;
  ParkCause park_cause = ParkCause::kNone;
};

// A call of a tool the task offered (TaskRequest::tools), as the model
// wrote it or as the app replays it in a later turn.
struct ToolCall {
  std::string id;         // names the call; a "tool" message answering it gives it back
  std::string name;       // the tool's name
  std::string arguments;  // a JSON object's text
  bool operator==(const ToolCall&) const = default;
};

// A chat turn. Roles: "system", "user", "assistant" (with tool_calls when it
// called tools) and "tool" (a call's result in content, tool_call_id naming
// the call).
struct ChatMessage {
  std::string role;
  std::string content;
  std::vector<ToolCall> tool_calls{};
  std::string tool_call_id{};
  bool operator==(const ChatMessage&) const = default;
};

// Tools one task may offer, and the bytes of one tool's parameter schema.
inline constexpr size_t kMaxTools = 128;
inline constexpr size_t kMaxToolSchemaBytes = 64 * 1024;

// A function the model may call, shown to it through its chat template's
// `tools` (OpenAI's {"type": "function", "function": {...}} form).
struct ToolDefinition {
  std::string name;
  std::string description{};
  std::string parameters{};  // a JSON Schema object's text; empty: {"type": "object"}
  bool operator==(const ToolDefinition&) const = default;
};

// How a task that offers tools lets the model use them (OpenAI's
// tool_choice and parallel_tool_calls).
struct ToolChoice {
  enum class Kind : int32_t {
    kAuto,      // text or calls, as the model chooses; a call it begins follows its schema
    kNone,      // the tools are shown, never called: the answer is text
    kRequired,  // the answer is calls, generated under their parameters' schemas
    kNamed,     // the answer is a call of the tool `name`, generated likewise
  };
  Kind kind = Kind::kAuto;
  std::string name{};     // kNamed: one of the task's tools
  bool parallel = false;  // several calls in one answer (else one)
  bool operator==(const ToolChoice&) const = default;
};

struct TaskMetrics;
struct TaskResult;

// Called on a delivery thread (DeliveryOptions), never under a scheduler
// lock: a task's callbacks one at a time, in order, exactly once each.
struct TaskCallbacks {
  // Every generated token exactly once, in order (EOS included when sampled);
  // `text` is what may be shown now (held back near a possible stop string).
  std::function<void(TaskId, int32_t token, std::string_view text)> on_token;
  // With TaskRequest::top_logprobs >= 0: each generated token's
  // log-probabilities (sampling.h says of which distribution), just before
  // its on_token. Never called otherwise.
  std::function<void(TaskId, const TokenLogprobs&)> on_logprobs;
  std::function<void(TaskId, TaskState)> on_state;
  // Exactly once per accepted task, when it reaches DONE, CANCELLED or
  // FAILED; the task's last callback.
  std::function<void(TaskId, const TaskResult&)> on_done;
};

struct TaskRequest {
  Tier tier = Tier::kForegroundChat;
  // A static system prompt shared by many tasks: it becomes the sequence's
  // shared prefix, so the engine keeps its KV once for all of them.
  std::string system_prompt;
  // Rendered with the model's own chat template (the built-in ChatML for a
  // model without one, sched/chat_renderer.h) when non-empty; their content,
  // and system_prompt's, is text (SchedulerOptions::parse_special_in_messages).
  // Otherwise `prompt` is used as is, special-token texts parsed.
  std::vector<ChatMessage> messages;
  // With messages: the tools the template shows the model (at most
  // kMaxTools, each name 1-64 of [A-Za-z0-9_-]), and how it may call them.
  // The answer is read back into TaskResult::tool_calls in the syntax the
  // model's family writes calls in (docs/structured-output.md), and calls
  // are generated under the tools' parameter schemas: a required or named
  // call excludes `constraint`; with kAuto, `constraint` (when set) decides
  // the answer instead.
  std::vector<ToolDefinition> tools{};
  ToolChoice tool_choice{};
  std::string prompt;
  // Exact prompt token ids, fed as given (no BOS added, no template); when
  // non-empty, `messages`, `prompt` and `system_prompt` must be empty.
  std::vector<int32_t> prompt_tokens;
  // Tokens to generate at most; 0: until the context is full (its last
  // position; or, when the KV pool cannot hold one whole context, until the
  // task alone fills the pool), ending with StopReason::kMaxTokens, as
  // OpenAI's API does without max_tokens.
  int32_t max_tokens = 128;
  SamplingParams sampling;
  // 0..kMaxTopLogprobs: report each generated token's log-probability and
  // the top_logprobs most likely tokens' (TaskCallbacks::on_logprobs,
  // TaskResult::logprobs); -1: none, at no cost.
  int32_t top_logprobs = -1;
  std::vector<std::string> stop;
  // What the output must follow: a JSON Schema, any JSON object, a GBNF
  // grammar or a regex (docs/structured-output.md). A constraint that does
  // not compile is refused at submission with what is wrong named.
  Constraint constraint{};
  // Journaled in SchedulerOptions::durable_dir as it runs, so that after the
  // process dies SchedulerCore::Recover (valet_recover) finds it with its
  // output so far and resumes it token-identically; kept after it ends until
  // acknowledged (Ack). durable_key names it across restarts: 1-128 of
  // [A-Za-z0-9_.-], unique in the directory; empty: one is made up
  // (TaskResult::durable_key).
  bool durable = false;
  std::string durable_key{};
  TaskCallbacks callbacks;
};

struct TaskMetrics {
  Tier tier = Tier::kForegroundChat;
  double submit_time = -1.0;
  double start_time = -1.0;        // first step
  double first_token_time = -1.0;  // first token delivered
  double last_token_time = -1.0;
  double end_time = -1.0;
  int32_t prompt_tokens = 0;  // including the shared prefix
  int32_t cached_prompt_tokens = 0;  // of which had KV cached when the task started (a shared prefix)
  int32_t generated_tokens = 0;
  int32_t parks = 0;
  std::array<int32_t, 5> parks_by_kind{};  // indexed by ParkKind
  size_t park_bytes = 0;
  int32_t tokens_recomputed = 0;

  double ttft() const { return first_token_time < 0 ? -1.0 : first_token_time - submit_time; }
  // (last - first token time) / (n - 1); -1 with fewer than two tokens.
  double tpot() const {
    return generated_tokens < 2 ? -1.0 : (last_token_time - first_token_time) / (generated_tokens - 1);
  }
  double e2e() const { return end_time < 0 ? -1.0 : end_time - submit_time; }
};

struct TaskResult {
  TaskState state = TaskState::kDone;
  Status status;  // why it failed, for kFailed
  StopReason stop_reason = StopReason::kNone;
  std::vector<int32_t> tokens;
  std::string text;
  // A task that offered tools (tool_choice not kNone) and ended kDone: the
  // calls its answer made, each with a fresh id, when the answer reads as
  // calls of offered tools only; `content` is then the text before them
  // (trimmed). Otherwise no calls, and content is text.
  std::vector<ToolCall> tool_calls;
  std::string content;
  std::vector<TokenLogprobs> logprobs;  // one per token, with TaskRequest::top_logprobs >= 0
  TaskMetrics metrics;
  std::string durable_key;  // a durable task's name (TaskRequest::durable_key)
};

// A durable task found in SchedulerOptions::durable_dir at start-up.
struct RecoveredTask {
  std::string durable_key{};
  Tier tier = Tier::kForegroundChat;
  std::vector<int32_t> tokens;  // generated before the process ended
  // Resumed under this id (the callbacks it is given already see it); 0 when
  // it had ended before (state says how) and waits for its acknowledgement.
  TaskId id = 0;
  // kQueued: resumed. Else it ended: before (id 0), right away (the last
  // journaled token had ended it: kDone), or it could not be resumed
  // (kFailed, with its on_done; the journal stays for the app to see).
  TaskState state = TaskState::kQueued;
  StopReason stop_reason = StopReason::kNone;
  std::string error;  // a failed task's reason
};

struct RecoveryReport {
  std::vector<RecoveredTask> tasks;
  // Files in the directory that are not journals this scheduler may read
  // (another model, version or setting that decides tokens, damage), with
  // the reason ("parse_special_in_messages differs: journal false, now
  // true"); left in place.
  std::vector<std::pair<std::string, Status>> skipped;
};

}  // namespace valet
