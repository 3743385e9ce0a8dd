#include "sched/recorder.h"

#include <algorithm>
#include <utility>

#include "common/json.h"

namespace valet {

TaskId Recorder::Register(Tier tier, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  const TaskId id = next_id_++;
  TaskRecord& r = tasks_[id];
  r.metrics.tier = tier;
  r.metrics.submit_time = now;
  r.events.push_back({now, id, TimelineKind::kSubmitted, ParkKind::kResident, 0, 0});
  ++stats_.submitted;
  return id;
}

void Recorder::Event(TaskId id, TimelineKind kind, double time, ParkKind park_kind, size_t bytes,
                     int32_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  TaskRecord& r = it->second;
  r.events.push_back({time, id, kind, park_kind, bytes, tokens});
  TaskMetrics& m = r.metrics;
  switch (kind) {
    case TimelineKind::kSubmitted: break;
    case TimelineKind::kStarted: m.start_time = time; break;
    case TimelineKind::kFirstToken: m.first_token_time = time; break;
    case TimelineKind::kParked:
      ++m.parks;
      ++m.parks_by_kind[static_cast<size_t>(park_kind)];
      m.park_bytes += bytes;
      break;
    case TimelineKind::kResumed: m.tokens_recomputed += tokens; break;
    case TimelineKind::kDone:
    case TimelineKind::kCancelled:
    case TimelineKind::kFailed: m.end_time = time; break;
  }
}

void Recorder::Tokens(TaskId id, int32_t count, double time) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  it->second.metrics.generated_tokens += count;
  it->second.metrics.last_token_time = time;
}

void Recorder::SetPromptTokens(TaskId id, int32_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it != tasks_.end()) it->second.metrics.prompt_tokens = count;
}

void Recorder::SetCachedPromptTokens(TaskId id, int32_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it != tasks_.end()) it->second.metrics.cached_prompt_tokens = count;
}

void Recorder::SetState(TaskId id, TaskState state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  const bool finishing = IsTerminal(state) && !IsTerminal(it->second.state);
  it->second.state = state;
  if (state != TaskState::kParked) it->second.park_cause = ParkCause::kNone;
  if (!finishing) return;
  finished_.push_back(id);
  Forget();
}

void Recorder::Forget() {
  while (finished_.size() > limits_.finished_tasks) {
    tasks_.erase(finished_.front());
    finished_.pop_front();
  }
}

bool Recorder::Registered(TaskId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id >= 1 && id < next_id_;
}

void Recorder::SetParkCause(TaskId id, ParkCause cause) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it != tasks_.end()) it->second.park_cause = cause;
}

std::optional<TaskState> Recorder::State(TaskId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return std::nullopt;
  return it->second.state;
}

Result<TaskInfo> Recorder::Info(TaskId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return NotFound(UnknownTask(id));
  return TaskInfo{it->second.state, it->second.state == TaskState::kParked ? it->second.park_cause : ParkCause::kNone};
}

std::string Recorder::UnknownTask(TaskId id) const {
  if (id >= 1 && id < next_id_) {
    return "task " + std::to_string(id) + " finished and its record was dropped (the last " +
           std::to_string(limits_.finished_tasks) + " finished tasks are kept)";
  }
  return "unknown task " + std::to_string(id);
}

Result<TaskMetrics> Recorder::Metrics(TaskId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return NotFound(UnknownTask(id));
  return it->second.metrics;
}

Result<std::vector<TimelineEvent>> Recorder::Timeline(TaskId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return NotFound(UnknownTask(id));
  return it->second.events;
}

void Recorder::UpdateStats(const std::function<void(SchedulerStats&)>& update) {
  std::lock_guard<std::mutex> lock(mu_);
  update(stats_);
  std::vector<double>& l = stats_.preemption_latencies;
  if (l.size() > 2 * limits_.latencies) l.erase(l.begin(), l.end() - static_cast<std::ptrdiff_t>(limits_.latencies));
}

SchedulerStats Recorder::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Recorder::AddStep(StepTrace step) {
  std::lock_guard<std::mutex> lock(mu_);
  steps_.push_back(std::move(step));
  if (steps_.size() > limits_.steps) steps_.pop_front();
}

std::vector<StepTrace> Recorder::Steps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {steps_.begin(), steps_.end()};
}

namespace {

const char* ItemKindName(StepItemKind kind) {
  switch (kind) {
    case StepItemKind::kPrefill: return "prefill";
    case StepItemKind::kRecompute: return "recompute";
    case StepItemKind::kDecode: return "decode";
  }
  return "unknown";
}

double Micros(double seconds) { return seconds * 1e6; }

// Row 0 is the engine; row 1 + tier shows each tier's work.
int64_t RowOf(Tier tier) { return 1 + static_cast<int64_t>(tier); }

Json ThreadName(int64_t tid, const char* name) {
  return Json{{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", name}}}};
}

// One complete ("X") event of `s` on row `tid`.
Json Span(const StepTrace& s, std::string name, int64_t tid, Json args) {
  return Json{{"name", std::move(name)}, {"ph", "X"},  {"pid", 1}, {"tid", tid}, {"ts", Micros(s.start)},
              {"dur", Micros(s.seconds)}, {"args", std::move(args)}};
}

}  // namespace

std::string Recorder::ChromeTraceJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  Json events = Json::array();
  events.push_back(ThreadName(0, "engine steps"));
  for (int t = 0; t < kNumTiers; ++t) {
    events.push_back(ThreadName(RowOf(static_cast<Tier>(t)), TierName(static_cast<Tier>(t))));
  }
  for (const StepTrace& s : steps_) {
    events.push_back(Span(s, "step", 0, {{"items", s.items.size()}}));
    for (const StepTraceItem& item : s.items) {
      events.push_back(Span(s, "task " + std::to_string(item.task) + " " + ItemKindName(item.kind), RowOf(item.tier),
                            {{"task", item.task}, {"tokens", item.tokens}}));
    }
  }
  std::vector<std::pair<TaskId, const TaskRecord*>> ordered;
  for (const auto& [id, r] : tasks_) ordered.emplace_back(id, &r);
  std::sort(ordered.begin(), ordered.end());
  for (const auto& [id, r] : ordered) {
    for (const TimelineEvent& e : r->events) {
      std::string name = "task " + std::to_string(id) + " " + TimelineKindName(e.kind);
      if (e.kind == TimelineKind::kParked || e.kind == TimelineKind::kResumed) {
        name += std::string(" ") + ParkKindName(e.park_kind);
      }
      events.push_back(Json{{"name", std::move(name)}, {"ph", "i"}, {"s", "t"}, {"pid", 1},
                            {"tid", RowOf(r->metrics.tier)}, {"ts", Micros(e.time)},
                            {"args", {{"bytes", e.bytes}, {"tokens", e.tokens}}}});
    }
  }
  return DumpJson(Json{{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}});
}

}  // namespace valet
