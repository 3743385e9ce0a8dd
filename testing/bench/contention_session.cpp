#include "testing/bench/contention_session.h"

#include <algorithm>
#include <chrono>

namespace valet::testing {

ContentionSession::ContentionSession(const Workload& workload, const ScenarioConfig& config, Arm arm,
                                     ScenarioSink& sink)
    : workload_(workload), config_(config), sink_(sink) {
  run_.arm = arm;
  chat_on_ = arm != Arm::kSolo;
  indexer_on_ = arm != Arm::kIdle;
  side_on_ = arm != Arm::kIdle && arm != Arm::kSolo;
}

void ContentionSession::Start(double now) {
  run_.start = now;
  run_.at_start = MarkFrom(sink_.Stats(), now);
  if (indexer_on_) {
    const int32_t docs = run_.arm == Arm::kSolo ? 1 : std::max(1, config_.indexers);
    for (int32_t i = 0; i < docs; ++i) SubmitDoc();
  }
  if (chat_on_ && !workload_.turns.empty()) {
    ScheduleTurn(0, now);
  } else if (!indexer_on_) {
    Close(now);
  }
}

double ContentionSession::NextWake() const {
  double next = kNever;
  for (const Timer& t : timers_) next = std::min(next, t.at);
  return next;
}

void ContentionSession::OnTime(double now) {
  while (true) {
    auto due = std::min_element(timers_.begin(), timers_.end(),
                                [](const Timer& a, const Timer& b) { return a.at < b.at; });
    if (due == timers_.end() || due->at > now) return;
    const Timer timer = *due;
    timers_.erase(due);
    Fire(timer, now);
  }
}

void ContentionSession::ScheduleTurn(int32_t turn, double now) {
  const TurnPlan& plan = workload_.turns[static_cast<size_t>(turn)];
  timers_.push_back({now + plan.think_s, TimerKind::kTurn, turn, 0});
  if (!side_on_) return;
  for (size_t j = 0; j < plan.side.size(); ++j) {
    timers_.push_back({now + plan.think_s * plan.side[j].fraction, TimerKind::kSide, turn, static_cast<int32_t>(j)});
  }
}

void ContentionSession::Fire(const Timer& timer, double now) {
  switch (timer.kind) {
    case TimerKind::kTurn:
      SubmitChat(timer.turn);
      if (timer.turn == config_.low_memory_turn) {
        timers_.push_back({now + config_.low_memory_delay_s, TimerKind::kLowMemory, timer.turn, 0});
      }
      break;
    case TimerKind::kLowMemory: Trim(static_cast<int32_t>(TrimLevel::kRunningCritical)); break;
    case TimerKind::kDeepTrim: Trim(config_.deep_trim_level); break;
    case TimerKind::kSide: SubmitSide(timer.turn, timer.side); break;
    case TimerKind::kResumeApp: BackToForeground(timer.turn, now); break;
  }
}

void ContentionSession::Trim(int32_t level) {
  if (level <= 0) return;
  if (Status s = sink_.TrimMemory(static_cast<TrimLevel>(level)); !s.ok() && run_.error.empty()) {
    run_.error = s.ToString();
  }
}

bool ContentionSession::LeavesAfter(int32_t turn) const {
  const std::vector<int32_t>& r = config_.return_turns;
  return turn == config_.lifecycle_after_turn || std::binary_search(r.begin(), r.end(), turn + 1);
}

void ContentionSession::ToBackground(int32_t next_turn, double now) {
  // RESUMED -> STARTED -> CREATED, what Android sends as the UI goes away,
  // and back later.
  Lifecycle(LifecycleEvent::kOnPause);
  Lifecycle(LifecycleEvent::kOnStop);
  Trim(config_.hide_trim_level);
  Excursion e;
  e.at_stop = MarkFrom(sink_.Stats(), now);
  e.return_turn = next_turn;
  run_.excursions.push_back(e);
  if (!run_.had_lifecycle) run_.at_stop = e.at_stop;
  run_.had_lifecycle = true;
  if (config_.deep_trim_level > 0) timers_.push_back({now + config_.background_s / 2, TimerKind::kDeepTrim, next_turn, 0});
  timers_.push_back({now + config_.background_s, TimerKind::kResumeApp, next_turn, 0});
}

void ContentionSession::BackToForeground(int32_t turn, double now) {
  Lifecycle(LifecycleEvent::kOnStart);
  Lifecycle(LifecycleEvent::kOnResume);
  Excursion& e = run_.excursions.back();
  e.at_resume = MarkFrom(sink_.Stats(), now);
  if (run_.first_turn_after_resume < 0) {
    run_.at_resume = e.at_resume;
    run_.first_turn_after_resume = turn;
  }
  // The user types after coming back: the turn's own think time, not zero.
  ScheduleTurn(turn, now);
}

void ContentionSession::Submit(TaskRequest request, TaskKind kind, int32_t turn) {
  TaskRecord record;
  record.kind = kind;
  record.tier = request.tier;
  record.turn = turn;
  Result<TaskId> id = sink_.Submit(std::move(request));
  if (!id.ok()) {
    if (run_.error.empty()) run_.error = std::string(TaskKindName(kind)) + ": " + id.status().ToString();
    // The closed loop cannot go on; nor can the calibration, which is one document.
    if (kind == TaskKind::kChat || (kind == TaskKind::kDoc && run_.arm == Arm::kSolo)) Close(run_.start);
    return;
  }
  record.id = *id;
  index_[*id] = run_.tasks.size();
  run_.tasks.push_back(std::move(record));
  ++outstanding_;
}

void ContentionSession::SubmitChat(int32_t turn) {
  Submit(ChatTurnRequest(workload_, config_, turn), TaskKind::kChat, turn);
}

void ContentionSession::SubmitSide(int32_t turn, int32_t side) {
  const SideEvent& e = workload_.turns[static_cast<size_t>(turn)].side[static_cast<size_t>(side)];
  const bool summary = e.tier == Tier::kBackgroundSummary;
  TaskRequest r;
  r.tier = e.tier;
  r.prompt = summary ? workload_.summary_texts[static_cast<size_t>(e.text)]
                     : workload_.suggestion_texts[static_cast<size_t>(e.text)];
  r.max_tokens = summary ? config_.summary_tokens : config_.suggestion_tokens;
  r.sampling.temperature = 0.8f;
  r.sampling.seed = config_.seed * 1000 + 500 + static_cast<uint64_t>(turn * 8 + side);
  Submit(std::move(r), summary ? TaskKind::kSummary : TaskKind::kSuggestion, turn);
}

void ContentionSession::SubmitDoc() {
  TaskRequest r;
  r.tier = Tier::kOfflineIndexing;
  r.system_prompt = workload_.doc_instruction;
  r.prompt = workload_.doc_texts[static_cast<size_t>(docs_submitted_) % workload_.doc_texts.size()];
  r.max_tokens = config_.doc_summary_tokens;
  r.sampling.temperature = 0.8f;
  r.sampling.seed = config_.seed * 1000 + 900 + static_cast<uint64_t>(docs_submitted_);
  ++docs_submitted_;
  Submit(std::move(r), TaskKind::kDoc, -1);
}

void ContentionSession::Lifecycle(LifecycleEvent event) {
  if (Status s = sink_.Lifecycle(event); !s.ok() && run_.error.empty()) run_.error = s.ToString();
}

void ContentionSession::OnDone(TaskId id, const TaskResult& result, double now) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  TaskRecord& record = run_.tasks[it->second];
  if (record.done) return;
  record.done = true;
  record.result = result;
  --outstanding_;
  if (record.kind == TaskKind::kChat) {
    ChatDone(record.turn, now);
  } else if (record.kind == TaskKind::kDoc) {
    if (result.state == TaskState::kFailed) {
      // A failed document would fail again: stop the indexer, report why.
      if (run_.error.empty()) run_.error = "doc: " + result.status.ToString();
      if (run_.arm == Arm::kSolo) Close(now);
      return;
    }
    ++docs_done_;
    if (run_.arm == Arm::kSolo && docs_done_ >= config_.calibration_docs) {
      Close(now);
    } else if (!closed_) {
      SubmitDoc();
    }
  }
}

void ContentionSession::ChatDone(int32_t turn, double now) {
  const int32_t next = turn + 1;
  if (next >= static_cast<int32_t>(workload_.turns.size())) {
    Close(now);
    return;
  }
  if (LeavesAfter(turn)) {
    ToBackground(next, now);
    return;
  }
  ScheduleTurn(next, now);
}

void ContentionSession::Close(double now) {
  if (closed_) return;
  closed_ = true;
  timers_.clear();
  run_.window_end = now;
  run_.at_window_end = MarkFrom(sink_.Stats(), now);
}

double SteadySeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void CompletionQueue::Push(TaskId id, const TaskResult& result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_.emplace_back(id, result);
  }
  cv_.notify_one();
}

std::deque<std::pair<TaskId, TaskResult>> CompletionQueue::WaitUntil(double deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (deadline == ContentionSession::kNever) {
    cv_.wait(lock, [&] { return !done_.empty(); });
  } else {
    const auto until = std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(deadline)));
    cv_.wait_until(lock, until, [&] { return !done_.empty(); });
  }
  std::deque<std::pair<TaskId, TaskResult>> out;
  out.swap(done_);
  return out;
}

void DriveRealTime(ContentionSession& session, CompletionQueue& done) {
  session.Start(SteadySeconds());
  while (!session.Finished()) {
    for (auto& [id, result] : done.WaitUntil(session.NextWake())) session.OnDone(id, result, SteadySeconds());
    session.OnTime(SteadySeconds());
  }
}

}  // namespace valet::testing
