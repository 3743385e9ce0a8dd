#include "server/server_metrics.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "common/proc_status.h"
#include "engine/engine_interface.h"
#include "server/completion_request.h"

namespace valet {

namespace {

const std::vector<double> kTtftBounds = {0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60};
const std::vector<double> kTpotBounds = {0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1};
constexpr TaskState kUnfinishedStates[] = {TaskState::kQueued, TaskState::kPrefilling, TaskState::kParked,
                                           TaskState::kDecoding};

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string TierLabel(int t) { return std::string("tier=\"") + TierApiName(static_cast<Tier>(t)) + "\""; }

void Header(const char* name, const char* type, const char* help, std::string* out) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void Sample(const std::string& name, const std::string& labels, double value, std::string* out) {
  *out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + Num(value) + "\n";
}

void PerTier(const char* name, const char* type, const char* help, const std::array<int64_t, kNumTiers>& v,
             std::string* out) {
  Header(name, type, help, out);
  for (int t = 0; t < kNumTiers; ++t) Sample(name, TierLabel(t), static_cast<double>(v[t]), out);
}

void RenderSchedulerCounters(const SchedulerStats& s, std::string* out) {
  Header("valet_parks_total", "counter", "Parks of lower-tier work, by kind.", out);
  for (int k = 0; k < static_cast<int>(s.parks_by_kind.size()); ++k) {
    Sample("valet_parks_total", std::string("kind=\"") + ParkKindName(static_cast<ParkKind>(k)) + "\"",
           static_cast<double>(s.parks_by_kind[k]), out);
  }
  Header("valet_recomputed_tokens_total", "counter", "Tokens run through the model again, by cause.", out);
  for (int c = 0; c < kNumRecomputeCauses; ++c) {
    Sample("valet_recomputed_tokens_total", std::string("cause=\"") + RecomputeCauseName(static_cast<RecomputeCause>(c)) + "\"",
           static_cast<double>(s.recomputed_by_cause[static_cast<size_t>(c)]), out);
  }
  Header("valet_park_bytes_total", "counter", "Bytes snapshotted or freed by parks.", out);
  Sample("valet_park_bytes_total", "", static_cast<double>(s.park_bytes), out);
  Header("valet_resume_bytes_total", "counter", "Bytes restored by resumes.", out);
  Sample("valet_resume_bytes_total", "", static_cast<double>(s.resume_bytes), out);
  PerTier("valet_generated_tokens_total", "counter", "Generated tokens.", s.generated_by_tier, out);
  PerTier("valet_prompt_tokens_total", "counter", "Prompt tokens prefilled.", s.prefill_by_tier, out);
  Header("valet_tokens_per_second", "gauge", "Generated tokens per second of engine busy time.", out);
  int64_t generated = 0;
  for (int64_t g : s.generated_by_tier) generated += g;
  Sample("valet_tokens_per_second", "", s.busy_seconds > 0 ? generated / s.busy_seconds : 0.0, out);
}

// The engine's memory by part, and what the process holds resident by kind
// (/proc/self/status: file-backed pages the system drops under pressure,
// anonymous ones it must keep, compress or kill for).
void RenderMemory(const MemoryStats& m, std::string* out) {
  Header("valet_memory_bytes", "gauge", "The engine's memory, by part (as of the last step).", out);
  const std::pair<const char*, size_t> parts[] = {
      {"kv_pool_used", m.pool_used_bytes},          {"kv_pool_capacity", m.pool_capacity_bytes},
      {"snapshot_ram", m.snapshot_ram_bytes},       {"snapshot_disk", m.snapshot_disk_bytes},
      {"weights_file_backed", m.weights_file_backed_bytes}, {"weights_anonymous", m.weights_anonymous_bytes},
      {"scratch", m.scratch_bytes}};
  for (const auto& [part, bytes] : parts) {
    Sample("valet_memory_bytes", std::string("part=\"") + part + "\"", static_cast<double>(bytes), out);
  }
  Header("valet_process_resident_bytes", "gauge", "Resident memory of the process, by kind.", out);
  for (const char* kind : {"RssFile", "RssAnon"}) {
    Sample("valet_process_resident_bytes", std::string("kind=\"") + (kind[3] == 'F' ? "file" : "anon") + "\"",
           static_cast<double>(ProcStatusBytes(kind)), out);
  }
}

// The battery as the app last reported it (POST /v1/power).
void RenderPower(const PowerState& p, std::string* out) {
  const std::pair<const char*, double> gauges[] = {
      {"valet_power_charging", p.charging ? 1.0 : 0.0},
      {"valet_power_save", p.power_save ? 1.0 : 0.0},
      {"valet_battery_low", p.battery_low ? 1.0 : 0.0},
      {"valet_battery_percent", static_cast<double>(p.battery_percent)}};
  for (const auto& [name, value] : gauges) {
    Header(name, "gauge", "The battery as last reported (POST /v1/power); battery_percent -1: unknown.", out);
    Sample(name, "", value, out);
  }
}

void RenderLifecycle(LifecycleState current, std::string* out) {
  Header("valet_lifecycle_state", "gauge", "1 for the app's current lifecycle state.", out);
  for (int i = 0; i < kNumLifecycleStates; ++i) {
    const auto state = static_cast<LifecycleState>(i);
    Sample("valet_lifecycle_state", std::string("state=\"") + LifecycleStateName(state) + "\"",
           state == current ? 1.0 : 0.0, out);
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[i];
  ++count_;
  sum_ += value;
}

void Histogram::Render(const std::string& name, const std::string& labels, std::string* out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? Num(bounds_[i]) : "+Inf";
    Sample(name + "_bucket", labels + ",le=\"" + le + "\"", static_cast<double>(cumulative), out);
  }
  Sample(name + "_sum", labels, sum_, out);
  Sample(name + "_count", labels, static_cast<double>(count_), out);
}

ServerMetrics::ServerMetrics() : ttft_(kNumTiers, Histogram(kTtftBounds)), tpot_(kNumTiers, Histogram(kTpotBounds)) {}

void ServerMetrics::ObserveFinished(const TaskResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  switch (result.state) {
    case TaskState::kDone: ++finished_[0]; break;
    case TaskState::kCancelled: ++finished_[1]; break;
    default: ++finished_[2]; break;
  }
  if (result.state != TaskState::kDone) return;
  const auto tier = static_cast<size_t>(result.metrics.tier);
  if (result.metrics.ttft() >= 0) ttft_[tier].Observe(result.metrics.ttft());
  if (result.metrics.tpot() >= 0) tpot_[tier].Observe(result.metrics.tpot());
}

void ServerMetrics::CountDisconnect() {
  std::lock_guard<std::mutex> lock(mu_);
  ++disconnects_;
}

void ServerMetrics::CountHttpError(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_errors_[status];
}

std::string ServerMetrics::Render(const MetricsInputs& in) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Header("valet_ttft_seconds", "histogram", "Time to first token of finished tasks.", &out);
    for (int t = 0; t < kNumTiers; ++t) ttft_[t].Render("valet_ttft_seconds", TierLabel(t), &out);
    Header("valet_tpot_seconds", "histogram", "Time per output token after the first.", &out);
    for (int t = 0; t < kNumTiers; ++t) tpot_[t].Render("valet_tpot_seconds", TierLabel(t), &out);
    Header("valet_tasks_finished_total", "counter", "Tasks finished, by final state.", &out);
    const char* names[] = {"DONE", "CANCELLED", "FAILED"};
    for (int i = 0; i < 3; ++i) {
      Sample("valet_tasks_finished_total", std::string("state=\"") + names[i] + "\"",
             static_cast<double>(finished_[i]), &out);
    }
    Header("valet_client_disconnects_total", "counter", "Requests cancelled because the client went away.", &out);
    Sample("valet_client_disconnects_total", "", static_cast<double>(disconnects_), &out);
    Header("valet_http_errors_total", "counter", "Error responses, by HTTP status.", &out);
    for (const auto& [status, n] : http_errors_) {
      Sample("valet_http_errors_total", "status=\"" + std::to_string(status) + "\"", static_cast<double>(n), &out);
    }
  }
  PerTier("valet_queue_depth", "gauge", "Tasks waiting to start.", in.unfinished_by_state[0], &out);
  Header("valet_tasks", "gauge", "Unfinished tasks, by tier and state.", &out);
  for (size_t s = 0; s < std::size(kUnfinishedStates); ++s) {
    for (int t = 0; t < kNumTiers; ++t) {
      Sample("valet_tasks", TierLabel(t) + ",state=\"" + TaskStateName(kUnfinishedStates[s]) + "\"",
             static_cast<double>(in.unfinished_by_state[s][t]), &out);
    }
  }
  RenderSchedulerCounters(in.stats, &out);
  RenderMemory(in.stats.memory, &out);
  RenderLifecycle(in.lifecycle, &out);
  RenderPower(in.power, &out);
  return out;
}

}  // namespace valet
