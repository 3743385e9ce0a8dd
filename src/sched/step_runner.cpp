// StepRunner::RunOneStep and its parts: pick the lead, plan riders, park
// the displaced, activate, run one engine step, deliver its tokens.
//
// QueuePolicy::kBatchAll (RunBatchAllStep): the baseline of llama-server's
// parallel slots. Every admitted task advances in every step: all pending
// decode tokens first, then prompt/recompute chunks in arrival order fill
// what is left of the step. A task is admitted (takes a "slot") when its KV
// is expected to fit in the pool; the oldest task is always admitted. When a
// step still runs out of pool, the newest member is parked to free memory and
// the step is retried.
#include "sched/step_runner.h"

#include <algorithm>
#include <array>

#include "sched/memory_keeper.h"
#include "sched/task_book.h"
#include "sched/task_journaling.h"

namespace valet {

Task* StepRunner::PickLead() {
  if (book_.RunsToCompletion() && s_.last_lead != 0) {
    Task* current = book_.Find(s_.last_lead);
    if (current != nullptr && s_.queue.Contains(current->id) && governor_.MayRun(current->tier) &&
        !book_.HoldIfConsumerBehind(*current)) {
      return current;
    }
  }
  while (!s_.queue.empty()) {
    Task* task = book_.Find(s_.queue.Top());
    if (!governor_.MayRun(task->tier)) {
      book_.Hold(*task);
      s_.queue.Pop();
      continue;
    }
    if (book_.HoldIfConsumerBehind(*task)) continue;
    return task;
  }
  return nullptr;
}

std::vector<Task*> StepRunner::PlanRiders(const Task& lead) {
  if (s_.options.batch_mode != BatchMode::kFill) return {};
  const bool lead_resident = lead.active || (lead.seq_open && lead.park_kind == ParkKind::kResident);
  std::vector<Task*> candidates;
  for (TaskId id : s_.queue.Ids()) {
    Task* t = book_.Find(id);
    if (t == &lead || t->tier <= lead.tier || !t->decode_ready() || !t->seq_open) continue;
    if (!t->active && t->park_kind != ParkKind::kResident) continue;  // riders must not cost a restore
    if (s_.hooks.consumer_behind && s_.hooks.consumer_behind(id)) continue;  // held when it leads
    candidates.push_back(t);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Task* a, const Task* b) {
    return QueueKey{a->tier, a->ticket} < QueueKey{b->tier, b->ticket};
  });
  BatchPlanInput input;
  input.lead_decoding = lead.decode_ready() && lead_resident;
  input.candidates = static_cast<int32_t>(candidates.size());
  input.max_riders = engine_.max_step_tokens() - 1;
  candidates.resize(static_cast<size_t>(s_.batch.Plan(input)));
  return candidates;
}

void StepRunner::DisplaceOthers(const Task& lead, const std::vector<Task*>& riders) {
  std::vector<Task*> displaced;
  for (auto& [id, task] : s_.tasks) {
    Task* t = task.get();
    if (!t->active || t == &lead || std::find(riders.begin(), riders.end(), t) != riders.end()) continue;
    displaced.push_back(t);
  }
  if (displaced.empty()) return;
  std::sort(displaced.begin(), displaced.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  const size_t bytes_needed = memory_.EstimateBytesNeeded(lead);
  for (Task* t : displaced) {
    const ParkReason reason = book_.HoldReason(t->id).value_or(t->tier > lead.tier ? ParkReason::kPreempted : ParkReason::kTurnEnded);
    memory_.Park(*t, reason, bytes_needed, &lead);
  }
}

StepRunner::Activation StepRunner::OpenSequence(Task& task, const std::vector<const Task*>& keep) {
  Result<SequenceId> seq = engine_.OpenSequence(task.spec);
  while (!seq.ok() && seq.status().code() == StatusCode::kResourceExhausted && memory_.RelievePressure(keep, 0)) {
    seq = engine_.OpenSequence(task.spec);
  }
  if (!seq.ok()) {
    if (seq.status().code() == StatusCode::kResourceExhausted) return Activation::kNoRoom;
    book_.Finish(task, TaskState::kFailed, seq.status(), StopReason::kNone);
    return Activation::kFinished;
  }
  task.seq = *seq;
  task.seq_open = true;
  task.active = true;
  if (task.restore_checkpoint) journals_.RestoreCheckpoint(task);
  if (task.tier == Tier::kForegroundChat && !task.spec.shared_prefix.empty()) {
    s_.foreground_prefix = task.spec.shared_prefix;
  }
  if (Result<SequenceInfo> info = engine_.Info(task.seq); info.ok()) {
    task.pending_recompute = info->pending_recompute;
    s_.recorder.SetCachedPromptTokens(task.id, info->n_cached);
  }
  s_.recorder.Event(task.id, TimelineKind::kStarted, s_.Now());
  book_.SetState(task, task.phase());
  return Activation::kReady;
}

StepRunner::Activation StepRunner::ResumeTask(Task& task, const std::vector<const Task*>& keep) {
  Result<ResumeReport> report = engine_.Resume(task.seq);
  while (!report.ok() && report.status().code() == StatusCode::kResourceExhausted &&
         memory_.RelievePressure(keep, memory_.EstimateBytesNeeded(task))) {
    report = engine_.Resume(task.seq);
  }
  if (!report.ok()) {
    if (report.status().code() == StatusCode::kResourceExhausted) return Activation::kNoRoom;
    book_.Finish(task, TaskState::kFailed, report.status(), StopReason::kNone);
    return Activation::kFinished;
  }
  task.active = true;
  task.pending_recompute = report->tokens_to_recompute;
  if (Result<SequenceInfo> info = engine_.Info(task.seq); info.ok()) task.pending_recompute = info->pending_recompute;
  s_.recorder.Event(task.id, TimelineKind::kResumed, s_.Now(), report->kind, report->bytes, report->tokens_to_recompute);
  const RecomputeCause cause = report->fell_back || task.snapshot_fell_back ? RecomputeCause::kSnapshotFallback
                               : report->kind == ParkKind::kFull         ? RecomputeCause::kFullEviction
                                                                         : RecomputeCause::kPartialEviction;
  task.snapshot_fell_back = false;
  s_.recorder.UpdateStats([&](SchedulerStats& s) {
    s.resume_bytes += report->bytes;
    s.tokens_recomputed += report->tokens_to_recompute;
    s.recomputed_by_cause[static_cast<size_t>(cause)] += report->tokens_to_recompute;
    s.recomputed_by_cause[static_cast<size_t>(RecomputeCause::kCutStep)] += report->cut_tokens_dropped;
    s.busy_seconds += report->seconds;
    s.busy_seconds_by_tier[static_cast<size_t>(task.tier)] += report->seconds;
    s.led_seconds_by_tier[static_cast<size_t>(task.tier)] += report->seconds;
    if (report->fell_back) ++s.resume_fallbacks;
  });
  book_.SetState(task, task.phase());
  return Activation::kReady;
}

StepRunner::Activation StepRunner::Activate(Task& task, const std::vector<const Task*>& keep) {
  if (!task.seq_open) return OpenSequence(task, keep);
  if (task.active) return Activation::kReady;
  return ResumeTask(task, keep);
}

void StepRunner::ApplyThreads(Tier tier) {
  const TierBudget& b = governor_.Budget(tier);
  const StepThreads want{b.threads, b.nice, b.cores, b.policy};
  if (want == applied_threads_) return;
  // An engine that refuses keeps what it has, and we do not ask again until
  // the budget changes.
  (void)engine_.SetThreads(want).ok();
  applied_threads_ = want;
}

namespace {

// Tokens of the next chunk of `rest`: at most `limit`, except that a rest
// past it by a quarter of a chunk or less goes in one step (up to `cap`):
// every step streams all the weights once, so a step of a few tokens costs
// about a decode step (3b-shape Q4_0, 2 threads: a 69-token chat prompt
// 0.64 s in one step, 0.71 s as 64 + 5).
int32_t ChunkTokens(int32_t rest, int32_t limit, int32_t cap) {
  if (rest <= limit) return rest;
  return rest - limit <= limit / 4 && rest <= cap ? rest : limit;
}

}  // namespace

StepItem StepRunner::NextItem(Task& task, int32_t limit, int32_t cap, StepItemKind* kind) const {
  const auto chunk = [&](int32_t rest) {
    return task.cut_chunk > 0 ? std::min(task.cut_chunk, rest) : ChunkTokens(rest, limit, cap);
  };
  StepItem item;
  item.seq = task.seq;
  if (task.pending_recompute > 0) {
    item.recompute = chunk(task.pending_recompute);
    *kind = StepItemKind::kRecompute;
  } else if (!task.prompt_done()) {
    const int32_t n = chunk(static_cast<int32_t>(task.prompt.size()) - task.prompt_pos);
    item.tokens = std::span<const int32_t>(task.prompt.data() + task.prompt_pos, static_cast<size_t>(n));
    item.sample = task.prompt_pos + n == static_cast<int32_t>(task.prompt.size());
    *kind = StepItemKind::kPrefill;
  } else {
    item.tokens = std::span<const int32_t>(&task.pending_token, 1);
    item.sample = true;
    *kind = StepItemKind::kDecode;
  }
  return item;
}

void StepRunner::AddItem(Task& task, const StepItem& item, StepItemKind kind, StepPlan& plan) const {
  plan.tasks.push_back(&task);
  plan.items.push_back(item);
  plan.kinds.push_back(kind);
}

void StepRunner::BuildItems(Task& lead, const std::vector<Task*>& riders, StepPlan& plan) const {
  plan = StepPlan{};
  const int32_t cap = std::max(1, engine_.max_step_tokens());
  const int32_t limit = std::max(1, std::min(governor_.Budget(lead.tier).prefill_chunk, cap));
  StepItemKind kind = StepItemKind::kDecode;
  const StepItem item = NextItem(lead, limit, cap, &kind);  // sets `kind`: evaluate before AddItem reads it
  AddItem(lead, item, kind, plan);
  if (kind != StepItemKind::kDecode) return;  // riders join decode steps only
  for (Task* r : riders) {
    StepItemKind rider_kind = StepItemKind::kDecode;
    const StepItem ride = NextItem(*r, 1, 1, &rider_kind);
    AddItem(*r, ride, rider_kind, plan);
  }
}

Result<StepResult> StepRunner::RunStep(Task& lead, std::vector<Task*>& riders, StepPlan& plan) {
  // Every tier below the chat yields mid-step to an arrival that would
  // preempt it: suggestions to a chat, background work to a chat or a
  // suggestion. A chat's own steps finish unless the scheduler stops.
  const std::atomic<bool>* abort = arrivals_.stop;
  if (s_.options.queue_policy == QueuePolicy::kValet) {
    if (lead.tier == Tier::kInlineSuggestion) abort = arrivals_.chat;
    if (lead.tier >= Tier::kBackgroundSummary) abort = arrivals_.chat_or_suggestion;
  }
  const ScopedAbortFlag abort_flag(engine_, abort);
  while (true) {
    BuildItems(lead, riders, plan);
    Result<StepResult> result = engine_.Step(plan.items);
    if (result.ok() || result.status().code() != StatusCode::kResourceExhausted) return result;
    if (!riders.empty()) {
      riders.clear();  // the lead first; riders stay resident for later
      continue;
    }
    const int32_t tokens = plan.items[0].recompute + static_cast<int32_t>(plan.items[0].tokens.size());
    if (!memory_.RelievePressure({&lead}, static_cast<size_t>(tokens) * std::max<size_t>(s_.kv_bytes_per_token, 1))) {
      return result;
    }
  }
}

void StepRunner::OnToken(Task& task, StepOutput& output, double now) {
  const int32_t token = output.token;
  task.tokens.push_back(token);
  journals_.JournalToken(task, token, output.rng_state);
  if (output.logprobs) DeliverLogprobs(task, std::move(*output.logprobs));
  ++task.turn_generated;
  governor_.Charge(task.tier, 1);
  const StopDecision decision = task.stop->Feed(token, engine_.TokenPiece(token));
  task.text += decision.text;
  if (!task.first_token_seen) {
    task.first_token_seen = true;
    s_.recorder.Event(task.id, TimelineKind::kFirstToken, now);
  }
  s_.recorder.Tokens(task.id, 1, now);
  s_.recorder.UpdateStats([&](SchedulerStats& s) { ++s.generated_by_tier[static_cast<size_t>(task.tier)]; });
  if (task.callbacks.on_token) {
    s_.outbox.push_back([cb = task.callbacks.on_token, id = task.id, token, text = decision.text] { cb(id, token, text); });
  }
  if (decision.stopped()) {
    book_.Finish(task, TaskState::kDone, Status::Ok(), decision.reason);
    return;
  }
  task.pending_token = token;
  book_.SetState(task, task.phase());
}

void StepRunner::DeliverLogprobs(Task& task, TokenLogprobs logprobs) {
  logprobs.sampled.piece = engine_.TokenPiece(logprobs.sampled.token);
  for (TokenLogprob& t : logprobs.top) t.piece = engine_.TokenPiece(t.token);
  if (task.callbacks.on_logprobs) {
    s_.outbox.push_back([cb = task.callbacks.on_logprobs, id = task.id, lp = logprobs] { cb(id, lp); });
  }
  task.logprobs.push_back(std::move(logprobs));
}

void StepRunner::ChargePrompt(Task& task, int32_t tokens) {
  task.prompt_charge += tokens * s_.options.prompt_token_weight;
  const auto whole = static_cast<int32_t>(task.prompt_charge);
  if (whole <= 0) return;
  task.prompt_charge -= whole;
  task.turn_generated += whole;
  governor_.Charge(task.tier, whole);
}

void StepRunner::ApplyStep(StepPlan& plan, StepResult& result) {
  const double now = s_.Now();
  StepTrace trace;
  trace.start = now - result.seconds;
  trace.seconds = result.seconds;
  int64_t prefill = 0;
  int64_t decode = 0;
  bool decode_only = true;
  int64_t step_tokens = 0;
  for (const StepItem& item : plan.items) step_tokens += item.recompute + static_cast<int64_t>(item.tokens.size());
  std::array<double, kNumTiers> seconds_by_tier{};
  std::array<int64_t, kNumTiers> prefill_by_tier{};
  std::array<int64_t, kNumTiers> rider_tokens{};
  size_t lead = kNumTiers - 1;
  for (const Task* t : plan.tasks) lead = std::min(lead, static_cast<size_t>(t->tier));
  for (size_t i = 0; i < plan.items.size(); ++i) {
    Task& t = *plan.tasks[i];
    const int32_t n = plan.items[i].recompute + static_cast<int32_t>(plan.items[i].tokens.size());
    t.cut_chunk = 0;
    switch (plan.kinds[i]) {
      case StepItemKind::kRecompute: t.pending_recompute -= n; break;
      case StepItemKind::kPrefill:
        t.prompt_pos += n;
        prefill += n;
        ChargePrompt(t, n);
        break;
      case StepItemKind::kDecode: t.pending_token = -1; ++decode; break;
    }
    decode_only = decode_only && plan.kinds[i] == StepItemKind::kDecode;
    const size_t tier = static_cast<size_t>(t.tier);
    // A step's time is split by token counts: close to its cost for prompt
    // chunks, which dominate mixed steps.
    if (step_tokens > 0) seconds_by_tier[tier] += result.seconds * n / static_cast<double>(step_tokens);
    if (plan.kinds[i] == StepItemKind::kPrefill) prefill_by_tier[tier] += n;
    if (tier > lead && plan.kinds[i] != StepItemKind::kRecompute) rider_tokens[tier] += n;
    trace.items.push_back({t.id, t.tier, plan.kinds[i], n});
  }
  if (decode_only) s_.batch.ObserveDecodeStep(static_cast<int32_t>(plan.items.size()), result.seconds);
  s_.recorder.UpdateStats([&](SchedulerStats& s) {
    ++s.steps;
    s.recomputed_by_cause[static_cast<size_t>(RecomputeCause::kCutStep)] += result.cut_tokens_dropped;
    if (plan.items.size() > 1) ++s.batched_steps;
    s.prefill_tokens += prefill;
    s.decode_tokens += decode;
    s.busy_seconds += result.seconds;
    s.led_seconds_by_tier[lead] += result.seconds;
    for (size_t k = 0; k < kNumTiers; ++k) {
      s.busy_seconds_by_tier[k] += seconds_by_tier[k];
      s.prefill_by_tier[k] += prefill_by_tier[k];
      s.rider_tokens_by_tier[k] += rider_tokens[k];
    }
  });
  s_.recorder.AddStep(std::move(trace));
  // Outputs follow the sampling items in order; Finish may free a task, and
  // each task appears once per step, so look each one up by its sequence.
  std::vector<Task*> samplers;
  for (size_t i = 0; i < plan.items.size(); ++i) {
    if (plan.items[i].sample) samplers.push_back(plan.tasks[i]);
  }
  for (size_t k = 0; k < result.outputs.size() && k < samplers.size(); ++k) {
    OnToken(*samplers[k], result.outputs[k], now);
  }
}

void StepRunner::EndTurnIfDue(Task& lead) {
  if (s_.options.queue_policy != QueuePolicy::kValet) return;  // baselines run to completion
  const int32_t turn = governor_.Budget(lead.tier).turn_tokens;
  if (turn <= 0 || lead.turn_generated < turn) return;
  lead.turn_generated = 0;
  if (s_.queue.CountInTier(lead.tier) > 1) {
    lead.ticket = s_.next_ticket++;
    s_.queue.Update(lead.id, book_.KeyFor(lead));
  }
}

void StepRunner::OnStepError(const StepPlan& plan, const Status& status) {
  // Either way no sequence changed. An aborted step is planned again as it
  // was (after the arrival that raised the signal: the engine may go on from
  // where it stopped), a step without room waits;
  // any other error means the tasks of this step cannot proceed.
  if (status.code() == StatusCode::kAborted) {
    for (size_t i = 0; i < plan.items.size(); ++i) {
      plan.tasks[i]->cut_chunk = plan.items[i].recompute + static_cast<int32_t>(plan.items[i].tokens.size());
    }
    s_.recorder.UpdateStats([](SchedulerStats& s) { ++s.aborted_steps; });
    return;
  }
  if (status.code() == StatusCode::kResourceExhausted) return;  // no room even alone: the tasks wait
  std::vector<TaskId> ids;
  for (Task* t : plan.tasks) ids.push_back(t->id);
  for (TaskId id : ids) {
    if (Task* t = book_.Find(id)) book_.Finish(*t, TaskState::kFailed, status, StopReason::kNone);
  }
}

bool StepRunner::RunOneStep() {
  if (s_.options.queue_policy == QueuePolicy::kBatchAll) return RunBatchAllStep();
  Task* lead = PickLead();
  if (lead == nullptr) {
    // Nothing may run; whatever still runs belongs to a capped tier.
    memory_.ParkAllRunning(ParkReason::kStateCap);
    book_.Deliver();
    return false;
  }
  if (s_.last_lead != lead->id) {
    lead->turn_generated = 0;
    s_.last_lead = lead->id;
  }
  std::vector<Task*> riders = PlanRiders(*lead);
  DisplaceOthers(*lead, riders);
  std::vector<const Task*> keep(riders.begin(), riders.end());
  keep.push_back(lead);
  const TaskId lead_id = lead->id;
  switch (Activate(*lead, keep)) {
    case Activation::kReady: break;
    case Activation::kFinished: book_.Deliver(); return true;
    // Everything else is parked off the pool and it still does not fit: wait
    // for a finish, a cancel or new budgets (admission makes this rare).
    case Activation::kNoRoom: book_.Deliver(); return false;
  }
  // A rider is resident: resuming it is free, and a failure just leaves it out.
  std::erase_if(riders, [&](Task* r) {
    if (r->active) return false;
    Result<ResumeReport> report = engine_.Resume(r->seq);
    if (!report.ok()) return true;
    r->active = true;
    s_.recorder.Event(r->id, TimelineKind::kResumed, s_.Now(), report->kind, report->bytes, 0);
    book_.SetState(*r, r->phase());
    return false;
  });
  ApplyThreads(lead->tier);
  StepPlan plan;
  Result<StepResult> result = RunStep(*lead, riders, plan);
  if (!result.ok()) {
    OnStepError(plan, result.status());
    book_.Deliver();
    return result.status().code() != StatusCode::kResourceExhausted;
  }
  ApplyStep(plan, *result);
  if (Task* still = book_.Find(lead_id)) EndTurnIfDue(*still);
  book_.Deliver();
  return true;
}

std::vector<Task*> StepRunner::AdmitBatchMembers() {
  std::vector<Task*> candidates;
  for (TaskId id : s_.queue.Ids()) {
    Task* t = book_.Find(id);
    if (!governor_.MayRun(t->tier)) {
      book_.Hold(*t);
      s_.queue.Erase(id);
      continue;
    }
    if (book_.HoldIfConsumerBehind(*t)) continue;
    candidates.push_back(t);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Task* a, const Task* b) { return a->ticket < b->ticket; });
  std::vector<Task*> members;
  for (Task* t : candidates) {
    const bool resident = t->active || (t->seq_open && t->park_kind == ParkKind::kResident);
    if (!resident && !members.empty() && memory_.EstimateBytesNeeded(*t) > 0) continue;  // no free slot yet
    std::vector<const Task*> keep(members.begin(), members.end());
    keep.push_back(t);
    if (Activate(*t, keep) != Activation::kReady) continue;  // ended FAILED, or waits for room
    members.push_back(t);
  }
  // Whatever runs but was not admitted (a capped tier) leaves the engine.
  std::vector<Task*> others;
  for (auto& [id, task] : s_.tasks) {
    if (task->active && std::find(members.begin(), members.end(), task.get()) == members.end()) {
      others.push_back(task.get());
    }
  }
  std::sort(others.begin(), others.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  for (Task* t : others) {
    memory_.Park(*t, book_.HoldReason(t->id).value_or(ParkReason::kPressure), 0, nullptr);
  }
  return members;
}

void StepRunner::BuildBatchAllItems(const std::vector<Task*>& members, StepPlan& plan) const {
  plan = StepPlan{};
  int32_t room = engine_.max_step_tokens();
  for (Task* t : members) {
    if (!t->decode_ready() || room <= 0) continue;
    StepItemKind kind = StepItemKind::kDecode;
    const StepItem item = NextItem(*t, 1, 1, &kind);
    AddItem(*t, item, kind, plan);
    --room;
  }
  for (Task* t : members) {
    if (t->decode_ready()) continue;
    const int32_t limit = std::min(governor_.Budget(t->tier).prefill_chunk, room);
    if (limit <= 0) break;
    StepItemKind kind = StepItemKind::kPrefill;
    const StepItem item = NextItem(*t, limit, room, &kind);
    AddItem(*t, item, kind, plan);
    room -= item.recompute + static_cast<int32_t>(item.tokens.size());
  }
}

Result<StepResult> StepRunner::RunBatchAll(std::vector<Task*>& members, StepPlan& plan) {
  // Every slot advances together, so only stopping the scheduler cuts a step short.
  const ScopedAbortFlag abort_flag(engine_, arrivals_.stop);
  while (true) {
    BuildBatchAllItems(members, plan);
    Result<StepResult> result = engine_.Step(plan.items);
    if (result.ok() || result.status().code() != StatusCode::kResourceExhausted) return result;
    if (members.size() > 1) {
      Task* newest = members.back();
      members.pop_back();
      memory_.Park(*newest, ParkReason::kPressure, 0, nullptr);
      continue;
    }
    const int32_t tokens = plan.items[0].recompute + static_cast<int32_t>(plan.items[0].tokens.size());
    if (!memory_.RelievePressure({members[0]}, static_cast<size_t>(tokens) * std::max<size_t>(s_.kv_bytes_per_token, 1))) {
      return result;
    }
  }
}

bool StepRunner::RunBatchAllStep() {
  std::vector<Task*> members = AdmitBatchMembers();
  if (members.empty()) {
    memory_.ParkAllRunning(ParkReason::kStateCap);
    book_.Deliver();
    // Work may remain (a task that failed to activate); the caller steps again.
    return !s_.queue.empty();
  }
  Tier top = members.front()->tier;
  for (const Task* t : members) top = std::min(top, t->tier);
  ApplyThreads(top);
  StepPlan plan;
  Result<StepResult> result = RunBatchAll(members, plan);
  if (!result.ok()) {
    OnStepError(plan, result.status());
    book_.Deliver();
    return result.status().code() != StatusCode::kResourceExhausted;
  }
  ApplyStep(plan, *result);
  book_.Deliver();
  return true;
}

}  // namespace valet
