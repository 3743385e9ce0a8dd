#include "testing/bench/contention_report.h"

#include <algorithm>
#include <cstdio>

#include "common/json.h"

namespace valet::testing {

namespace {

constexpr size_t kFgTiers[] = {0, 1};
constexpr size_t kBgTiers[] = {2, 3};

int64_t Processed(const StatsMark& m, const size_t* tiers, size_t n) {
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += m.processed[tiers[i]];
  return sum;
}

double Led(const StatsMark& m, const size_t* tiers, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += m.led_s[tiers[i]];
  return sum;
}

int64_t BgBetween(const StatsMark& a, const StatsMark& b) { return Processed(b, kBgTiers, 2) - Processed(a, kBgTiers, 2); }
int64_t BgRidersBetween(const StatsMark& a, const StatsMark& b) {
  return b.riders[2] + b.riders[3] - a.riders[2] - a.riders[3];
}

std::string Fmt(const char* format, double v) {
  if (v < 0) return "–";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

struct ChatSamples {
  std::vector<double> tpot, e2e, wait, prompt;
  std::vector<double> return_wait, return_prompt;
};

bool IsReturnTurn(const ArmRun& run, const TaskRecord& t) {
  if (t.kind != TaskKind::kChat) return false;
  return std::any_of(run.excursions.begin(), run.excursions.end(),
                     [&t](const Excursion& e) { return e.return_turn == t.turn; });
}

void CollectChat(const ArmRun& run, const TaskRecord& t, ArmSummary& s, ChatSamples& chat) {
  const TaskMetrics& m = t.result.metrics;
  const bool back = IsReturnTurn(run, t);
  ++s.chat_turns;
  if (m.ttft() >= 0) {
    s.ttft_samples_ms.push_back(m.ttft() * 1e3);
    if (back) s.returns.ttft_samples_ms.push_back(m.ttft() * 1e3);
  }
  if (m.tpot() >= 0) chat.tpot.push_back(m.tpot() * 1e3);
  if (m.e2e() >= 0) chat.e2e.push_back(m.e2e() * 1e3);
  if (m.start_time >= m.submit_time && m.first_token_time >= m.start_time) {
    chat.wait.push_back((m.start_time - m.submit_time) * 1e3);
    chat.prompt.push_back((m.first_token_time - m.start_time) * 1e3);
    if (back) {
      chat.return_wait.push_back(chat.wait.back());
      chat.return_prompt.push_back(chat.prompt.back());
    }
  }
  if (t.turn == run.first_turn_after_resume) s.ttft_after_resume_ms = m.ttft() * 1e3;
}

void CollectTaskCounts(const ArmRun& run, int32_t first_turn, ArmSummary& s, ChatSamples& chat) {
  for (const TaskRecord& t : run.tasks) {
    ++s.submitted;
    TaskRow row;
    row.id = t.id;
    row.kind = t.kind;
    row.turn = t.turn < 0 ? t.turn : first_turn + t.turn;
    row.state = t.done ? t.result.state : TaskState::kQueued;
    const TaskMetrics& tm = t.result.metrics;
    row.submit_s = t.done ? tm.submit_time - run.start : -1.0;
    row.wait_ms = t.done && tm.start_time >= tm.submit_time ? (tm.start_time - tm.submit_time) * 1e3 : -1.0;
    row.ttft_ms = tm.ttft() >= 0 ? tm.ttft() * 1e3 : -1.0;
    row.e2e_ms = tm.e2e() >= 0 ? tm.e2e() * 1e3 : -1.0;
    row.prompt_tokens = tm.prompt_tokens;
    row.generated_tokens = tm.generated_tokens;
    row.parks = tm.parks;
    row.tokens_recomputed = tm.tokens_recomputed;
    row.return_turn = IsReturnTurn(run, t);
    s.tasks.push_back(row);
    if (!t.done) {
      ++s.unfinished;
      continue;
    }
    const TaskState state = t.result.state;
    if (state == TaskState::kCancelled) ++s.cancelled;
    if (state == TaskState::kFailed) ++s.failed;
    if (state != TaskState::kDone) continue;
    ++s.done;
    switch (t.kind) {
      case TaskKind::kChat: CollectChat(run, t, s, chat); break;
      case TaskKind::kDoc: ++s.docs_completed; break;
      case TaskKind::kSummary: ++s.summaries_done; break;
      case TaskKind::kSuggestion: ++s.suggestions_done; break;
    }
  }
}

void Background(const ArmRun& run, ArmSummary& s) {
  s.window_s += run.window_end - run.start;
  s.bg_tokens += BgBetween(run.at_start, run.at_window_end);
  s.bg_rider_tokens += BgRidersBetween(run.at_start, run.at_window_end);
  s.fg_led_s += Led(run.at_window_end, kFgTiers, 2) - Led(run.at_start, kFgTiers, 2);
  s.bg_led_s += Led(run.at_window_end, kBgTiers, 2) - Led(run.at_start, kBgTiers, 2);
  s.prefix_warm_tokens += run.stats.prefix_warm_tokens;
}

// Background rates in and out of the background, over every excursion of
// every block (one excursion: that excursion's rates, as before `returns`).
struct AwayTotals {
  double away_s = 0.0, window_s = 0.0;
  int64_t away_tokens = 0, tokens = 0;
};

void AddAway(const ArmRun& run, AwayTotals& a) {
  bool any = false;
  for (const Excursion& e : run.excursions) {
    if (e.at_resume.time <= e.at_stop.time) continue;
    a.away_s += e.at_resume.time - e.at_stop.time;
    a.away_tokens += BgBetween(e.at_stop, e.at_resume);
    any = true;
  }
  if (!any) return;
  a.window_s += run.window_end - run.start;
  a.tokens += BgBetween(run.at_start, run.at_window_end);
}

void FinishAway(const AwayTotals& a, ArmSummary& s) {
  if (a.away_s <= 0) return;
  s.bg_tps_background = a.away_tokens / a.away_s;
  const double front = a.window_s - a.away_s;
  if (front > 0) s.bg_tps_resumed = (a.tokens - a.away_tokens) / front;
}

void CompareReturns(const ReturnTurnStats& idle, Arm arm, ReturnTurnStats& r) {
  if (idle.ttft_ms.p50 <= 0 || r.ttft_ms.empty()) return;
  r.slowdown_p50 = r.ttft_ms.p50 / idle.ttft_ms.p50;
  r.slowdown_p99 = r.ttft_ms.p99 / idle.ttft_ms.p99;
  const uint64_t seed = 0x7e7 + static_cast<uint64_t>(arm);
  r.slowdown_p50_ci = BootstrapRatio(r.ttft_samples_ms, idle.ttft_samples_ms, 50, seed);
  if (r.ttft_ms.count >= kMinSamplesForP99 && idle.ttft_ms.count >= kMinSamplesForP99) {
    r.slowdown_p99_ci = BootstrapRatio(r.ttft_samples_ms, idle.ttft_samples_ms, 99, seed);
  }
}

void FinishBackground(const Calibration& calibration, ArmSummary& s) {
  s.bg_tokens_per_s = s.window_s > 0 ? s.bg_tokens / s.window_s : 0.0;
  s.free_s = std::max(0.0, s.window_s - s.fg_led_s);
  if (s.arm == Arm::kIdle || s.free_s <= 0 || calibration.solo_tokens_per_s <= 0) return;
  s.bg_free_rate_vs_solo = (s.bg_tokens - s.bg_rider_tokens) / s.free_s / calibration.solo_tokens_per_s;
}

Json PercentilesJson(const Percentiles& p) {
  Json out{{"count", p.count}, {"p99_is_max", p.count < kMinSamplesForP99}};
  for (auto [name, v] : {std::pair{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}, {"mean", p.mean}}) {
    out[name] = p.empty() ? Json() : Json(v);
  }
  return out;
}

Json IntervalJson(const RatioInterval& ci) { return ci.lo < 0 ? Json() : Json::array({ci.lo, ci.hi}); }

// A measure that was not taken (negative) is null.
Json Optional(double v) { return v < 0 ? Json() : Json(v); }

// "1.06 [0.92, 1.23]", or the ratio alone without an interval.
std::string WithInterval(double ratio, const RatioInterval& ci) {
  std::string out = Fmt("%.2f", ratio);
  if (ci.lo >= 0) out += " [" + Fmt("%.2f", ci.lo) + ", " + Fmt("%.2f", ci.hi) + "]";
  return out;
}

// The return turns' table, with --returns only (the single excursion's one
// turn is the background table's last column).
std::string ReturnTurnsMarkdown(const ContentionReport& r) {
  if (r.config.return_turns.empty()) return "";
  std::string trims = r.config.hide_trim_level > 0 ? "onTrimMemory(" + std::to_string(r.config.hide_trim_level) + ")"
                                                   : "no trim";
  if (r.config.deep_trim_level > 0) trims += ", " + std::to_string(r.config.deep_trim_level) + " halfway";
  std::string md;
  char line[640];
  std::snprintf(line, sizeof(line),
                "\nReturn turns: the first chat turn after each return to the foreground (%zu per arm: ON_PAUSE, "
                "ON_STOP, %s, %.1f s away, ON_START, ON_RESUME, then the turn's think time). The idle arm "
                "replays the same moments without background work; ×idle compares return turns with idle's return "
                "turns. All turns: the first table's figures.\n\n",
                r.config.return_turns.size(), trims.c_str(), r.config.background_s);
  md += line;
  md += "| arm | returns | TTFT p50 | p99 | max | ×idle p50 [95% CI] | ×idle p99 [95% CI] | wait p50 | prompt p50 | re-warmed prefix tok | all turns TTFT p50 | all ×idle p50 |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ArmSummary& a : r.arms) {
    const ReturnTurnStats& b = a.returns;
    const bool p99 = b.ttft_ms.count >= kMinSamplesForP99;
    std::snprintf(line, sizeof(line), "| %s | %lld | %s | %s | %s | %s | %s | %s | %s | %lld | %s | %s |\n",
                  ArmName(a.arm), static_cast<long long>(b.ttft_ms.count), Fmt("%.0f", b.ttft_ms.p50).c_str(),
                  p99 ? Fmt("%.0f", b.ttft_ms.p99).c_str() : "(max)", Fmt("%.0f", b.ttft_ms.max).c_str(),
                  WithInterval(b.slowdown_p50, b.slowdown_p50_ci).c_str(),
                  WithInterval(b.slowdown_p99, b.slowdown_p99_ci).c_str(), Fmt("%.1f", b.wait_ms.p50).c_str(),
                  Fmt("%.1f", b.prompt_ms.p50).c_str(), static_cast<long long>(a.prefix_warm_tokens),
                  Fmt("%.0f", a.ttft_ms.p50).c_str(), WithInterval(a.slowdown_p50, a.slowdown_p50_ci).c_str());
    md += line;
  }
  return md;
}

}  // namespace

Calibration CalibrationFrom(std::span<const ArmRun> solo_blocks) {
  Calibration c;
  for (const ArmRun& solo : solo_blocks) {
    c.seconds += solo.window_end - solo.start;
    c.tokens += BgBetween(solo.at_start, solo.at_window_end);
  }
  c.solo_tokens_per_s = c.seconds > 0 ? c.tokens / c.seconds : 0.0;
  return c;
}

ArmSummary Summarize(std::span<const ArmRun> blocks, const Calibration& calibration, const ArmSummary* idle) {
  ArmSummary s;
  if (blocks.empty()) return s;
  s.arm = blocks.front().arm;
  ChatSamples chat;
  std::vector<double> preempt;
  int32_t first_turn = 0;
  AwayTotals away;
  for (const ArmRun& run : blocks) {
    if (s.error.empty()) s.error = run.error;
    CollectTaskCounts(run, first_turn, s, chat);
    first_turn += static_cast<int32_t>(
        std::count_if(run.tasks.begin(), run.tasks.end(), [](const TaskRecord& t) { return t.kind == TaskKind::kChat; }));
    Background(run, s);
    AddAway(run, away);
    preempt.insert(preempt.end(), run.stats.preemption_latencies.begin(), run.stats.preemption_latencies.end());
    s.tokens_recomputed += run.stats.tokens_recomputed;
    for (size_t c = 0; c < s.recomputed_by_cause.size(); ++c) s.recomputed_by_cause[c] += run.stats.recomputed_by_cause[c];
    s.preemptions += run.stats.preemptions;
    for (size_t k = 0; k < s.parks_by_kind.size(); ++k) s.parks_by_kind[k] += run.stats.parks_by_kind[k];
    for (const TaskRecord& t : run.tasks) {
      for (const TimelineEvent& e : t.timeline) {
        const bool snapshot = e.park_kind == ParkKind::kSnapshotRam || e.park_kind == ParkKind::kSnapshotDisk;
        if (e.kind == TimelineKind::kParked && snapshot) s.snapshot_bytes += e.bytes;
      }
    }
    if (run.park_seconds >= 0) s.park_ms = std::max(0.0, s.park_ms) + run.park_seconds * 1e3;
    if (run.resume_seconds >= 0) s.resume_ms = std::max(0.0, s.resume_ms) + run.resume_seconds * 1e3;
  }
  s.ttft_ms = ComputePercentiles(s.ttft_samples_ms);
  s.tpot_ms = ComputePercentiles(std::move(chat.tpot));
  s.e2e_ms = ComputePercentiles(std::move(chat.e2e));
  s.wait_ms = ComputePercentiles(std::move(chat.wait));
  s.prompt_ms = ComputePercentiles(std::move(chat.prompt));
  s.preempt_ms = ComputePercentiles(std::move(preempt)).Scaled(1e3);
  s.returns.ttft_ms = ComputePercentiles(s.returns.ttft_samples_ms);
  s.returns.wait_ms = ComputePercentiles(std::move(chat.return_wait));
  s.returns.prompt_ms = ComputePercentiles(std::move(chat.return_prompt));
  FinishAway(away, s);
  if (idle != nullptr) CompareReturns(idle->returns, s.arm, s.returns);
  if (idle != nullptr && idle->ttft_ms.p50 > 0 && !s.ttft_ms.empty()) {
    s.slowdown_p50 = s.ttft_ms.p50 / idle->ttft_ms.p50;
    s.slowdown_p99 = s.ttft_ms.p99 / idle->ttft_ms.p99;
    const uint64_t seed = 0x5eed + static_cast<uint64_t>(s.arm);
    s.slowdown_p50_ci = BootstrapRatio(s.ttft_samples_ms, idle->ttft_samples_ms, 50, seed);
    if (s.ttft_ms.count >= kMinSamplesForP99 && idle->ttft_ms.count >= kMinSamplesForP99) {
      s.slowdown_p99_ci = BootstrapRatio(s.ttft_samples_ms, idle->ttft_samples_ms, 99, seed);
    }
  }
  FinishBackground(calibration, s);
  return s;
}

std::string ReportMarkdown(const ContentionReport& r) {
  std::string md;
  char line[640];
  std::snprintf(line, sizeof(line),
                "Foreground chat (%d turns per arm, interleaved in blocks of %d), milliseconds; p99 needs %lld "
                "samples, with fewer the p99 columns hold the maximum:\n\n",
                r.config.turns, r.config.block_turns, static_cast<long long>(kMinSamplesForP99));
  md += line;
  md += "| arm | TTFT p50 | p90 | p99 | max | ×idle p50 [95% CI] | ×idle p99 [95% CI] | wait p50 | prompt p50 | TPOT p50 | p99 | E2E p50 | p99 | preempt p50 | p99 |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ArmSummary& a : r.arms) {
    const bool p99 = a.ttft_ms.count >= kMinSamplesForP99;
    const std::string ci = WithInterval(a.slowdown_p50, a.slowdown_p50_ci);
    const std::string ci99 = WithInterval(a.slowdown_p99, a.slowdown_p99_ci);
    std::snprintf(line, sizeof(line), "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                  ArmName(a.arm), Fmt("%.0f", a.ttft_ms.p50).c_str(), Fmt("%.0f", a.ttft_ms.p90).c_str(),
                  p99 ? Fmt("%.0f", a.ttft_ms.p99).c_str() : "(max)", Fmt("%.0f", a.ttft_ms.max).c_str(), ci.c_str(),
                  ci99.c_str(), Fmt("%.1f", a.wait_ms.p50).c_str(),
                  Fmt("%.1f", a.prompt_ms.p50).c_str(), Fmt("%.1f", a.tpot_ms.p50).c_str(),
                  Fmt("%.1f", a.tpot_ms.p99).c_str(), Fmt("%.0f", a.e2e_ms.p50).c_str(),
                  Fmt("%.0f", a.e2e_ms.p99).c_str(), Fmt("%.1f", a.preempt_ms.p50).c_str(),
                  Fmt("%.1f", a.preempt_ms.p99).c_str());
    md += line;
  }
  std::snprintf(line, sizeof(line),
                "\nBackground (indexer solo rate %.1f tok/s, measured alone in every block: %.1f s in all; \"free-time "
                "rate\" is background tokens per second of the time no foreground step ran, over that solo rate):\n\n",
                r.calibration.solo_tokens_per_s, r.calibration.seconds);
  md += line;
  md += "| arm | bg tok/s | free-time rate ×solo | rider tok | docs | summaries | suggestions | cancelled | failed | output mismatches | recomputed cut/part/full/fallback | parks res/ram/disk/part/full | snapshot MB | save / restore ms | bg tok/s RESUMED | bg tok/s CREATED | TTFT after ON_RESUME |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n";
  for (const ArmSummary& a : r.arms) {
    std::snprintf(line, sizeof(line),
                  "| %s | %.1f | %s | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld/%lld/%lld/%lld | %lld/%lld/%lld/%lld/%lld | %.1f | %s / %s | %s | %s | %s |\n",
                  ArmName(a.arm), a.bg_tokens_per_s, Fmt("%.2f", a.bg_free_rate_vs_solo).c_str(),
                  static_cast<long long>(a.bg_rider_tokens), static_cast<long long>(a.docs_completed),
                  static_cast<long long>(a.summaries_done), static_cast<long long>(a.suggestions_done),
                  static_cast<long long>(a.cancelled), static_cast<long long>(a.failed),
                  static_cast<long long>(a.output_mismatches), static_cast<long long>(a.recomputed_by_cause[0]),
                  static_cast<long long>(a.recomputed_by_cause[1]), static_cast<long long>(a.recomputed_by_cause[2]),
                  static_cast<long long>(a.recomputed_by_cause[3]),
                  static_cast<long long>(a.parks_by_kind[0]), static_cast<long long>(a.parks_by_kind[1]),
                  static_cast<long long>(a.parks_by_kind[2]), static_cast<long long>(a.parks_by_kind[3]),
                  static_cast<long long>(a.parks_by_kind[4]), a.snapshot_bytes / 1048576.0,
                  Fmt("%.1f", a.park_ms).c_str(), Fmt("%.1f", a.resume_ms).c_str(), Fmt("%.1f", a.bg_tps_resumed).c_str(),
                  Fmt("%.1f", a.bg_tps_background).c_str(), Fmt("%.0f ms", a.ttft_after_resume_ms).c_str());
    md += line;
  }
  md += ReturnTurnsMarkdown(r);
  for (const ArmSummary& a : r.arms) {
    if (!a.error.empty()) md += "\n**" + std::string(ArmName(a.arm)) + " error:** " + a.error + "\n";
  }
  return md;
}

namespace {

Json ArmJson(const ArmSummary& a) {
  Json parks = Json::object();
  for (int k = 0; k < 5; ++k) parks[ParkKindName(static_cast<ParkKind>(k))] = a.parks_by_kind[static_cast<size_t>(k)];
  Json recomputed = Json::object();
  for (int c = 0; c < kNumRecomputeCauses; ++c) {
    recomputed[RecomputeCauseName(static_cast<RecomputeCause>(c))] = a.recomputed_by_cause[static_cast<size_t>(c)];
  }
  Json tasks = Json::array();
  for (const TaskRow& t : a.tasks) {
    tasks.push_back(Json{{"id", t.id}, {"kind", TaskKindName(t.kind)}, {"turn", t.turn},
                         {"state", TaskStateName(t.state)}, {"submit_s", t.submit_s}, {"wait_ms", Optional(t.wait_ms)},
                         {"ttft_ms", Optional(t.ttft_ms)}, {"e2e_ms", Optional(t.e2e_ms)},
                         {"prompt_tokens", t.prompt_tokens}, {"generated_tokens", t.generated_tokens},
                         {"parks", t.parks}, {"tokens_recomputed", t.tokens_recomputed},
                         {"return_turn", t.return_turn}});
  }
  const ReturnTurnStats& b = a.returns;
  Json out{{"ttft_ms", PercentilesJson(a.ttft_ms)},
           {"tpot_ms", PercentilesJson(a.tpot_ms)},
           {"e2e_ms", PercentilesJson(a.e2e_ms)},
           {"preempt_latency_ms", PercentilesJson(a.preempt_ms)},
           {"wait_ms", PercentilesJson(a.wait_ms)},
           {"prompt_ms", PercentilesJson(a.prompt_ms)},
           {"slowdown_p50", Optional(a.slowdown_p50)},
           {"slowdown_p99", Optional(a.slowdown_p99)},
           {"ratio_ci", IntervalJson(a.slowdown_p50_ci)},
           {"ratio_ci_p99", IntervalJson(a.slowdown_p99_ci)},
           {"bg_tokens_per_s", a.bg_tokens_per_s},
           {"bg_tokens", a.bg_tokens},
           {"bg_rider_tokens", a.bg_rider_tokens},
           {"bg_free_rate_vs_solo", Optional(a.bg_free_rate_vs_solo)},
           {"window_s", a.window_s},
           {"fg_led_s", a.fg_led_s},
           {"free_s", a.free_s},
           {"bg_led_s", a.bg_led_s},
           {"output_mismatches", a.output_mismatches},
           {"docs_completed", a.docs_completed},
           {"summaries_completed", a.summaries_done},
           {"suggestions_completed", a.suggestions_done},
           {"chat_turns", a.chat_turns},
           {"tasks_submitted", a.submitted},
           {"tasks_done", a.done},
           {"tasks_cancelled", a.cancelled},
           {"tasks_failed", a.failed},
           {"tasks_unfinished", a.unfinished},
           {"tokens_recomputed", a.tokens_recomputed},
           {"recomputed_by_cause", std::move(recomputed)},
           {"preemptions", a.preemptions},
           {"parks", std::move(parks)},
           {"snapshot_bytes", a.snapshot_bytes},
           {"save_ms", Optional(a.park_ms)},
           {"restore_ms", Optional(a.resume_ms)},
           {"lifecycle",
            {{"bg_tokens_per_s_resumed", Optional(a.bg_tps_resumed)},
             {"bg_tokens_per_s_background", Optional(a.bg_tps_background)},
             {"ttft_after_resume_ms", Optional(a.ttft_after_resume_ms)}}},
           {"return_turns",
            {{"ttft_ms", PercentilesJson(b.ttft_ms)},
             {"wait_ms", PercentilesJson(b.wait_ms)},
             {"prompt_ms", PercentilesJson(b.prompt_ms)},
             {"slowdown_p50", Optional(b.slowdown_p50)},
             {"slowdown_p99", Optional(b.slowdown_p99)},
             {"ratio_ci", IntervalJson(b.slowdown_p50_ci)},
             {"ratio_ci_p99", IntervalJson(b.slowdown_p99_ci)}}},
           {"prefix_warm_tokens", a.prefix_warm_tokens}};
  if (!a.error.empty()) out["error"] = a.error;
  out["tasks"] = std::move(tasks);
  return out;
}

Json ConfigJson(const ContentionReport& r) {
  const ScenarioConfig& c = r.config;
  return Json{{"model", r.model},
              {"machine", r.machine},
              {"threads", r.threads},
              {"kv_pool_bytes", r.kv_pool_bytes},
              {"seed", c.seed},
              {"turns", c.turns},
              {"block_turns", c.block_turns},
              {"system_tokens", c.system_tokens},
              {"user_tokens", c.user_tokens},
              {"answer_tokens", c.answer_tokens},
              {"doc_tokens", c.doc_tokens},
              {"doc_instruction_tokens", c.doc_instruction_tokens},
              {"indexers", c.indexers},
              {"doc_summary_tokens", c.doc_summary_tokens},
              {"summary_prompt_tokens", c.summary_prompt_tokens},
              {"summary_tokens", c.summary_tokens},
              {"suggestion_prompt_tokens", c.suggestion_prompt_tokens},
              {"suggestion_tokens", c.suggestion_tokens},
              {"think_s", Json::array({c.think_min_s, c.think_max_s})},
              {"lifecycle_after_turn", c.lifecycle_after_turn},
              {"background_s", c.background_s},
              {"returns", c.returns},
              {"return_turns", c.return_turns},
              {"hide_trim_level", c.hide_trim_level},
              {"deep_trim_level", c.deep_trim_level},
              {"low_memory_turn", c.low_memory_turn},
              {"valet_bg_chunk", c.valet_bg_chunk},
              {"baseline_chunk", c.baseline_chunk},
              {"batch_chunk", c.batch_chunk},
              {"valet_fill", c.valet_fill},
              {"slow_listener_ms", c.slow_listener_s * 1000.0}};
}

}  // namespace

std::string ReportJson(const ContentionReport& r) {
  Json arms = Json::object();
  for (const ArmSummary& a : r.arms) arms[ArmName(a.arm)] = ArmJson(a);
  return DumpJson(Json{{"arms", std::move(arms)},
                       {"config", ConfigJson(r)},
                       {"calibration",
                        {{"solo_tokens_per_s", r.calibration.solo_tokens_per_s},
                         {"tokens", r.calibration.tokens},
                         {"seconds", r.calibration.seconds}}}});
}

std::string SeedComparison(const ContentionReport& r) {
  std::string out;
  char line[256];
  for (const ArmSummary& a : r.arms) {
    const char* seed = "";
    switch (a.arm) {
      case Arm::kIdle: seed = "seed (phone): 140 ms"; break;
      case Arm::kFifo: seed = "seed (phone): 1,420 ms (10.1x)"; break;
      case Arm::kValet: seed = "seed (phone): 161 ms (1.15x)"; break;
      case Arm::kBatch:
      case Arm::kPriority:
      case Arm::kSolo: seed = "seed: not measured"; break;
    }
    std::snprintf(line, sizeof(line), "  %-9s %-32s valet (here): TTFT p50 %s ms (%sx idle), p99 %s ms (%sx)\n",
                  ArmName(a.arm), seed, Fmt("%.0f", a.ttft_ms.p50).c_str(), Fmt("%.2f", a.slowdown_p50).c_str(),
                  Fmt("%.0f", a.ttft_ms.p99).c_str(), Fmt("%.2f", a.slowdown_p99).c_str());
    out += line;
  }
  return out;
}

}  // namespace valet::testing
