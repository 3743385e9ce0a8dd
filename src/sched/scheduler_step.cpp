// SchedulerCore::RunOneStep and its parts: pick the lead, plan riders, park
// the displaced, activate, run one engine step, deliver its tokens.
#include <algorithm>
#include <array>
#include <thread>

#include "sched/scheduler_core.h"

namespace valet {

Task* SchedulerCore::PickLead() {
  if (RunsToCompletion() && last_lead_ != 0) {
    Task* current = Find(last_lead_);
    if (current != nullptr && queue_.Contains(current->id) && governor_.MayRun(current->tier) &&
        !HoldIfConsumerBehind(*current)) {
      return current;
    }
  }
  while (!queue_.empty()) {
    Task* task = Find(queue_.Top());
    if (!governor_.MayRun(task->tier)) {
      Hold(*task);
      queue_.Pop();
      continue;
    }
    if (HoldIfConsumerBehind(*task)) continue;
    return task;
  }
  return nullptr;
}

bool SchedulerCore::HoldIfConsumerBehind(Task& task) {
  if (!hooks_.consumer_behind || !hooks_.consumer_behind(task.id)) return false;
  queue_.Erase(task.id);
  behind_.insert(task.id);
  recorder_.UpdateStats([](SchedulerStats& s) { ++s.consumer_waits; });
  return true;
}

std::vector<Task*> SchedulerCore::PlanRiders(const Task& lead) {
  if (options_.batch_mode != BatchMode::kFill) return {};
  const bool lead_resident = lead.active || (lead.seq_open && lead.park_kind == ParkKind::kResident);
  std::vector<Task*> candidates;
  for (TaskId id : queue_.Ids()) {
    Task* t = Find(id);
    if (t == &lead || t->tier <= lead.tier || !t->decode_ready() || !t->seq_open) continue;
    if (!t->active && t->park_kind != ParkKind::kResident) continue;  // riders must not cost a restore
    if (hooks_.consumer_behind && hooks_.consumer_behind(id)) continue;  // held when it leads
    candidates.push_back(t);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Task* a, const Task* b) {
    return QueueKey{a->tier, a->ticket} < QueueKey{b->tier, b->ticket};
  });
  BatchPlanInput input;
  input.lead_decoding = lead.decode_ready() && lead_resident;
  input.candidates = static_cast<int32_t>(candidates.size());
  input.max_riders = engine_.max_step_tokens() - 1;
  candidates.resize(static_cast<size_t>(batch_.Plan(input)));
  return candidates;
}

void SchedulerCore::DisplaceOthers(const Task& lead, const std::vector<Task*>& riders) {
  std::vector<Task*> displaced;
  for (auto& [id, task] : tasks_) {
    Task* t = task.get();
    if (!t->active || t == &lead || std::find(riders.begin(), riders.end(), t) != riders.end()) continue;
    displaced.push_back(t);
  }
  if (displaced.empty()) return;
  std::sort(displaced.begin(), displaced.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  const size_t bytes_needed = EstimateBytesNeeded(lead);
  for (Task* t : displaced) {
    const ParkReason reason = HoldReason(t->id).value_or(t->tier > lead.tier ? ParkReason::kPreempted : ParkReason::kTurnEnded);
    Park(*t, reason, bytes_needed, &lead);
  }
}

SchedulerCore::Activation SchedulerCore::OpenSequence(Task& task, const std::vector<const Task*>& keep) {
  Result<SequenceId> seq = engine_.OpenSequence(task.spec);
  while (!seq.ok() && seq.status().code() == StatusCode::kResourceExhausted && RelievePressure(keep, 0)) {
    seq = engine_.OpenSequence(task.spec);
  }
  if (!seq.ok()) {
    if (seq.status().code() == StatusCode::kResourceExhausted) return Activation::kNoRoom;
    Finish(task, TaskState::kFailed, seq.status(), StopReason::kNone);
    return Activation::kFinished;
  }
  task.seq = *seq;
  task.seq_open = true;
  task.active = true;
  if (task.restore_checkpoint) RestoreCheckpoint(task);
  if (task.tier == Tier::kForegroundChat && !task.spec.shared_prefix.empty()) {
    foreground_prefix_ = task.spec.shared_prefix;
  }
  if (Result<SequenceInfo> info = engine_.Info(task.seq); info.ok()) {
    task.pending_recompute = info->pending_recompute;
    recorder_.SetCachedPromptTokens(task.id, info->n_cached);
  }
  recorder_.Event(task.id, TimelineKind::kStarted, Now());
  SetState(task, task.phase());
  return Activation::kReady;
}

SchedulerCore::Activation SchedulerCore::ResumeTask(Task& task, const std::vector<const Task*>& keep) {
  Result<ResumeReport> report = engine_.Resume(task.seq);
  while (!report.ok() && report.status().code() == StatusCode::kResourceExhausted &&
         RelievePressure(keep, EstimateBytesNeeded(task))) {
    report = engine_.Resume(task.seq);
  }
  if (!report.ok()) {
    if (report.status().code() == StatusCode::kResourceExhausted) return Activation::kNoRoom;
    Finish(task, TaskState::kFailed, report.status(), StopReason::kNone);
    return Activation::kFinished;
  }
  task.active = true;
  task.pending_recompute = report->tokens_to_recompute;
  if (Result<SequenceInfo> info = engine_.Info(task.seq); info.ok()) task.pending_recompute = info->pending_recompute;
  recorder_.Event(task.id, TimelineKind::kResumed, Now(), report->kind, report->bytes, report->tokens_to_recompute);
  recorder_.UpdateStats([&](SchedulerStats& s) {
    s.resume_bytes += report->bytes;
    s.tokens_recomputed += report->tokens_to_recompute;
    s.busy_seconds += report->seconds;
    s.busy_seconds_by_tier[static_cast<size_t>(task.tier)] += report->seconds;
    s.led_seconds_by_tier[static_cast<size_t>(task.tier)] += report->seconds;
    if (report->fell_back) ++s.resume_fallbacks;
  });
  SetState(task, task.phase());
  return Activation::kReady;
}

SchedulerCore::Activation SchedulerCore::Activate(Task& task, const std::vector<const Task*>& keep) {
  if (!task.seq_open) return OpenSequence(task, keep);
  if (task.active) return Activation::kReady;
  return ResumeTask(task, keep);
}

void SchedulerCore::ApplyThreads(Tier tier) {
  const TierBudget& b = governor_.Budget(tier);
  const StepThreads want{b.threads, b.nice, b.cores};
  if (want == applied_threads_) return;
  // An engine that refuses keeps what it has, and we do not ask again until
  // the budget changes.
  (void)engine_.SetThreads(want).ok();
  applied_threads_ = want;
}

StepItem SchedulerCore::NextItem(Task& task, int32_t limit, StepItemKind* kind) const {
  StepItem item;
  item.seq = task.seq;
  if (task.pending_recompute > 0) {
    item.recompute = std::min(task.pending_recompute, limit);
    *kind = StepItemKind::kRecompute;
  } else if (!task.prompt_done()) {
    const int32_t n = std::min(static_cast<int32_t>(task.prompt.size()) - task.prompt_pos, limit);
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

void SchedulerCore::AddItem(Task& task, const StepItem& item, StepItemKind kind, StepPlan& plan) const {
  plan.tasks.push_back(&task);
  plan.items.push_back(item);
  plan.kinds.push_back(kind);
}

void SchedulerCore::BuildItems(Task& lead, const std::vector<Task*>& riders, StepPlan& plan) const {
  plan = StepPlan{};
  const int32_t limit = std::max(1, std::min(governor_.Budget(lead.tier).prefill_chunk, engine_.max_step_tokens()));
  StepItemKind kind = StepItemKind::kDecode;
  const StepItem item = NextItem(lead, limit, &kind);  // sets `kind`: evaluate before AddItem reads it
  AddItem(lead, item, kind, plan);
  if (kind != StepItemKind::kDecode) return;  // riders join decode steps only
  for (Task* r : riders) {
    StepItemKind rider_kind = StepItemKind::kDecode;
    const StepItem ride = NextItem(*r, 1, &rider_kind);
    AddItem(*r, ride, rider_kind, plan);
  }
}

Result<StepResult> SchedulerCore::RunStep(Task& lead, std::vector<Task*>& riders, StepPlan& plan) {
  // Every tier below the chat yields mid-step to an arrival that would
  // preempt it: suggestions to a chat, background work to a chat or a
  // suggestion. A chat's own steps finish unless the scheduler stops.
  const std::atomic<bool>* abort = arrivals_.stop;
  if (options_.queue_policy == QueuePolicy::kValet) {
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
    if (!RelievePressure({&lead}, static_cast<size_t>(tokens) * std::max<size_t>(kv_bytes_per_token_, 1))) {
      return result;
    }
  }
}

void SchedulerCore::OnToken(Task& task, StepOutput& output, double now) {
  const int32_t token = output.token;
  task.tokens.push_back(token);
  JournalToken(task, token, output.rng_state);
  if (output.logprobs) DeliverLogprobs(task, std::move(*output.logprobs));
  ++task.turn_generated;
  governor_.Charge(task.tier, 1);
  const StopDecision decision = task.stop->Feed(token, engine_.TokenPiece(token));
  task.text += decision.text;
  if (!task.first_token_seen) {
    task.first_token_seen = true;
    recorder_.Event(task.id, TimelineKind::kFirstToken, now);
  }
  recorder_.Tokens(task.id, 1, now);
  recorder_.UpdateStats([&](SchedulerStats& s) { ++s.generated_by_tier[static_cast<size_t>(task.tier)]; });
  if (task.callbacks.on_token) {
    outbox_.push_back([cb = task.callbacks.on_token, id = task.id, token, text = decision.text] { cb(id, token, text); });
  }
  if (decision.stopped()) {
    Finish(task, TaskState::kDone, Status::Ok(), decision.reason);
    return;
  }
  task.pending_token = token;
  SetState(task, task.phase());
}

void SchedulerCore::DeliverLogprobs(Task& task, TokenLogprobs logprobs) {
  logprobs.sampled.piece = engine_.TokenPiece(logprobs.sampled.token);
  for (TokenLogprob& t : logprobs.top) t.piece = engine_.TokenPiece(t.token);
  if (task.callbacks.on_logprobs) {
    outbox_.push_back([cb = task.callbacks.on_logprobs, id = task.id, lp = logprobs] { cb(id, lp); });
  }
  task.logprobs.push_back(std::move(logprobs));
}

void SchedulerCore::ChargePrompt(Task& task, int32_t tokens) {
  task.prompt_charge += tokens * options_.prompt_token_weight;
  const auto whole = static_cast<int32_t>(task.prompt_charge);
  if (whole <= 0) return;
  task.prompt_charge -= whole;
  task.turn_generated += whole;
  governor_.Charge(task.tier, whole);
}

void SchedulerCore::ApplyStep(StepPlan& plan, StepResult& result) {
  const double now = Now();
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
  if (decode_only) batch_.ObserveDecodeStep(static_cast<int32_t>(plan.items.size()), result.seconds);
  recorder_.UpdateStats([&](SchedulerStats& s) {
    ++s.steps;
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
  recorder_.AddStep(std::move(trace));
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

void SchedulerCore::EndTurnIfDue(Task& lead) {
  if (options_.queue_policy != QueuePolicy::kValet) return;  // baselines run to completion
  const int32_t turn = governor_.Budget(lead.tier).turn_tokens;
  if (turn <= 0 || lead.turn_generated < turn) return;
  lead.turn_generated = 0;
  if (queue_.CountInTier(lead.tier) > 1) {
    lead.ticket = next_ticket_++;
    queue_.Update(lead.id, KeyFor(lead));
  }
}

void SchedulerCore::ParkAllRunning(ParkReason reason) {
  std::vector<Task*> running;
  for (auto& [id, task] : tasks_) {
    if (task->active) running.push_back(task.get());
  }
  std::sort(running.begin(), running.end(), [](const Task* a, const Task* b) { return a->id < b->id; });
  for (Task* t : running) Park(*t, HoldReason(t->id).value_or(reason), 0, nullptr);
}

void SchedulerCore::Hold(const Task& task) {
  held_.insert(task.id);  // back in the queue on the next lifecycle, thermal or power event
  // A parked task now waits for its budget or the battery, whatever parked it.
  recorder_.SetParkCause(task.id, CauseOf(*HoldReason(task.id)));
}

std::optional<ParkReason> SchedulerCore::HoldReason(TaskId id) const {
  if (journal_waiting_.count(id) != 0) return ParkReason::kJournalIo;
  if (behind_.count(id) != 0) return ParkReason::kConsumerBehind;
  if (held_.count(id) != 0) {
    const Task* task = tasks_.at(id).get();
    return governor_.PowerAllows(task->tier) ? ParkReason::kStateCap : ParkReason::kPower;
  }
  return std::nullopt;
}

void SchedulerCore::OnStepError(const StepPlan& plan, const Status& status) {
  // Either way no sequence changed. An aborted step is simply planned again
  // (after the arrival that raised the signal), a step without room waits;
  // any other error means the tasks of this step cannot proceed.
  if (status.code() == StatusCode::kAborted) {
    recorder_.UpdateStats([](SchedulerStats& s) { ++s.aborted_steps; });
    return;
  }
  if (status.code() == StatusCode::kResourceExhausted) return;  // no room even alone: the tasks wait
  std::vector<TaskId> ids;
  for (Task* t : plan.tasks) ids.push_back(t->id);
  for (TaskId id : ids) {
    if (Task* t = Find(id)) Finish(*t, TaskState::kFailed, status, StopReason::kNone);
  }
}

bool SchedulerCore::RunOneStep() {
  if (options_.queue_policy == QueuePolicy::kBatchAll) return RunBatchAllStep();
  Task* lead = PickLead();
  if (lead == nullptr) {
    // Nothing may run; whatever still runs belongs to a capped tier.
    ParkAllRunning(ParkReason::kStateCap);
    Deliver();
    return false;
  }
  if (last_lead_ != lead->id) {
    lead->turn_generated = 0;
    last_lead_ = lead->id;
  }
  std::vector<Task*> riders = PlanRiders(*lead);
  DisplaceOthers(*lead, riders);
  std::vector<const Task*> keep(riders.begin(), riders.end());
  keep.push_back(lead);
  const TaskId lead_id = lead->id;
  switch (Activate(*lead, keep)) {
    case Activation::kReady: break;
    case Activation::kFinished: Deliver(); return true;
    // Everything else is parked off the pool and it still does not fit: wait
    // for a finish, a cancel or new budgets (admission makes this rare).
    case Activation::kNoRoom: Deliver(); return false;
  }
  // A rider is resident: resuming it is free, and a failure just leaves it out.
  std::erase_if(riders, [&](Task* r) {
    if (r->active) return false;
    Result<ResumeReport> report = engine_.Resume(r->seq);
    if (!report.ok()) return true;
    r->active = true;
    recorder_.Event(r->id, TimelineKind::kResumed, Now(), report->kind, report->bytes, 0);
    SetState(*r, r->phase());
    return false;
  });
  ApplyThreads(lead->tier);
  StepPlan plan;
  Result<StepResult> result = RunStep(*lead, riders, plan);
  if (!result.ok()) {
    OnStepError(plan, result.status());
    Deliver();
    return result.status().code() != StatusCode::kResourceExhausted;
  }
  ApplyStep(plan, *result);
  if (Task* still = Find(lead_id)) EndTurnIfDue(*still);
  Deliver();
  return true;
}

}  // namespace valet
