// A task as the scheduler core keeps it while it is live (between admission
// and DONE/CANCELLED/FAILED). Only the inference thread touches it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_interface.h"
#include "sampling/stop_condition.h"
#include "durable/task_journal.h"
#include "sched/tool_use.h"
#include "valet/scheduler.h"

namespace valet {

struct Task {
  TaskId id = 0;
  Tier tier = Tier::kForegroundChat;
  uint64_t ticket = 0;  // FIFO order within the tier; renewed when a turn ends
  TaskState state = TaskState::kQueued;
  TaskCallbacks callbacks;
  double submit_time = 0.0;

  SequenceSpec spec;            // shared prefix + sampling
  std::vector<int32_t> prompt;  // the task's own prompt tokens
  int32_t prompt_pos = 0;       // prompt tokens fed so far
  int32_t max_tokens = 0;
  std::optional<StopChecker> stop;
  std::optional<ToolUse> tool_use;  // its answer is read into tool calls

  bool seq_open = false;
  SequenceId seq = 0;
  bool active = false;            // sequence open and not parked
  ParkKind park_kind = ParkKind::kResident;
  bool snapshot_fell_back = false;  // parked partially because its snapshot could not be stored
  int32_t pending_recompute = 0;  // history tokens whose KV must be recomputed
  int32_t pending_token = -1;     // sampled, not yet fed back
  // Tokens of its item in a step stopped between layers (0: none): planned
  // again as they were, so the engine goes on from where the step stopped.
  int32_t cut_chunk = 0;

  int32_t turn_generated = 0;   // budget tokens this turn: generated + weighted prompt
  double prompt_charge = 0.0;   // weighted prompt tokens not yet charged (under one)
  std::vector<int32_t> tokens;  // generated so far
  std::string text;             // shown so far
  std::vector<TokenLogprobs> logprobs;  // per token, when the request asked for them
  bool first_token_seen = false;
  std::string durable_key;
  std::optional<TaskJournal> journal;  // a durable task's
  // What the journal could not take yet (a full or failing disk): tokens with
  // the RNG state after the last, then the end. The task waits, parked,
  // until they are written (SchedulerCore::RetryJournals).
  std::vector<int32_t> unjournaled;
  RngState unjournaled_rng;
  struct End {
    TaskState state = TaskState::kDone;
    Status status;
    StopReason reason = StopReason::kNone;
  };
  std::optional<End> unjournaled_end;
  int32_t checkpoint_tokens = 0;       // positions in its last KV checkpoint
  bool restore_checkpoint = false;     // recovered: its sequence starts from the checkpoint

  bool waits_for_journal() const { return !unjournaled.empty() || unjournaled_end.has_value(); }
  bool prompt_done() const { return prompt_pos >= static_cast<int32_t>(prompt.size()); }
  // Its next step would be one decode token (no prompt or recompute left).
  bool decode_ready() const { return prompt_done() && pending_recompute == 0 && pending_token >= 0; }
  // The phase a running task is in.
  TaskState phase() const { return prompt_done() ? TaskState::kDecoding : TaskState::kPrefilling; }
};

}  // namespace valet
