// The governor's default budget table and its JSON form.
#include <cmath>
#include <string>

#include "common/json.h"
#include "valet/scheduler.h"

namespace valet {

namespace {

constexpr const char* kStateKeys[kNumLifecycleStates] = {"DESTROYED", "CREATED", "STARTED", "RESUMED"};
constexpr const char* kTierKeys[kNumTiers] = {"FOREGROUND_CHAT", "INLINE_SUGGESTION", "BACKGROUND_SUMMARY",
                                              "OFFLINE_INDEXING"};
constexpr const char* kThermalKeys[kNumThermalStatuses] = {"NONE",     "LIGHT",     "MODERATE", "SEVERE",
                                                           "CRITICAL", "EMERGENCY", "SHUTDOWN"};
constexpr const char* kThermalKey = "thermal";
constexpr const char* kPowerKey = "power";

int IndexOf(const char* const* names, int n, const std::string& key) {
  for (int i = 0; i < n; ++i) {
    if (key == names[i]) return i;
  }
  return -1;
}

Result<int64_t> IntegerField(const Json& v, const std::string& where, int64_t min, int64_t max) {
  if (!v.is_number()) return InvalidArgument(where + " must be a number");
  const double d = v.get<double>();
  if (d != std::floor(d) || d < static_cast<double>(min) || d > static_cast<double>(max)) {
    return InvalidArgument(where + " must be an integer in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "]");
  }
  return static_cast<int64_t>(d);
}

Status ParseTierBudget(const Json& obj, const std::string& where, TierBudget& out) {
  if (!obj.is_object()) return InvalidArgument(where + " must be an object");
  for (const auto& [key, v] : obj.items()) {
    const std::string field = where + "." + key;
    if (key == "turn_tokens") {
      VALET_ASSIGN_OR_RETURN(int64_t x, IntegerField(v, field, 0, 1 << 30));
      out.turn_tokens = static_cast<int32_t>(x);
    } else if (key == "state_cap_tokens") {
      VALET_ASSIGN_OR_RETURN(int64_t x, IntegerField(v, field, kUnlimitedTokens, int64_t{1} << 50));
      out.state_cap_tokens = x;
    } else if (key == "prefill_chunk") {
      VALET_ASSIGN_OR_RETURN(int64_t x, IntegerField(v, field, 1, 1 << 20));
      out.prefill_chunk = static_cast<int32_t>(x);
    } else if (key == "threads") {
      VALET_ASSIGN_OR_RETURN(int64_t x, IntegerField(v, field, 0, 1024));
      out.threads = static_cast<int32_t>(x);
    } else if (key == "nice") {
      VALET_ASSIGN_OR_RETURN(int64_t x, IntegerField(v, field, 0, kMaxStepNice));
      out.nice = static_cast<int32_t>(x);
    } else if (key == "cores") {
      Result<CoreClass> cores = v.is_string() ? CoreClassFromName(v.get<std::string>().c_str())
                                              : Result<CoreClass>(InvalidArgument("must be a string"));
      if (!cores.ok()) return InvalidArgument(field + ": " + cores.status().message());
      out.cores = *cores;
    } else if (key == "policy") {
      Result<SchedPolicy> policy = v.is_string() ? SchedPolicyFromName(v.get<std::string>().c_str())
                                                 : Result<SchedPolicy>(InvalidArgument("must be a string"));
      if (!policy.ok()) return InvalidArgument(field + ": " + policy.status().message());
      out.policy = *policy;
    } else {
      return InvalidArgument("unknown budget field " + field);
    }
  }
  return Status::Ok();
}

Status ParseThermalCaps(const Json& obj, const std::string& where, ThermalCaps& out) {
  if (!obj.is_object()) return InvalidArgument(where + " must be an object");
  for (const auto& [key, v] : obj.items()) {
    const std::string field = where + "." + key;
    if (key == "threads" || key == "background_threads") {
      VALET_ASSIGN_OR_RETURN(int64_t x, IntegerField(v, field, 0, 1024));
      (key == "threads" ? out.threads : out.background_threads) = static_cast<int32_t>(x);
    } else if (key == "lowest_running_tier") {
      const int tier = v.is_string() ? IndexOf(kTierKeys, kNumTiers, v.get<std::string>()) : -1;
      if (tier < 0) return InvalidArgument(field + " must be a tier name");
      out.lowest_running_tier = static_cast<Tier>(tier);
    } else {
      return InvalidArgument("unknown thermal field " + field);
    }
  }
  return Status::Ok();
}

Status ParseThermalColumn(const Json& obj, BudgetTable& table) {
  if (!obj.is_object()) return InvalidArgument("budget table: thermal must be an object");
  for (const auto& [key, caps] : obj.items()) {
    const int status = IndexOf(kThermalKeys, kNumThermalStatuses, key);
    if (status < 0) return InvalidArgument("budget table: unknown thermal status " + key);
    VALET_RETURN_IF_ERROR(ParseThermalCaps(caps, "budget table: thermal." + key,
                                           table.caps(static_cast<ThermalStatus>(status))));
  }
  return Status::Ok();
}

Status ParsePowerNeeds(const Json& obj, const std::string& where, PowerNeeds& out) {
  if (!obj.is_object()) return InvalidArgument(where + " must be an object");
  for (const auto& [key, v] : obj.items()) {
    bool* field = key == "requires_charging"          ? &out.requires_charging
                  : key == "requires_battery_not_low" ? &out.requires_battery_not_low
                  : key == "requires_power_save_off"  ? &out.requires_power_save_off
                                                      : nullptr;
    if (field == nullptr) return InvalidArgument("unknown power field " + where + "." + key);
    if (!v.is_boolean()) return InvalidArgument(where + "." + key + " must be true or false");
    *field = v.get<bool>();
  }
  return Status::Ok();
}

Status ParsePowerColumn(const Json& obj, BudgetTable& table) {
  if (!obj.is_object()) return InvalidArgument("budget table: power must be an object");
  for (const auto& [key, needs] : obj.items()) {
    const int tier = IndexOf(kTierKeys, kNumTiers, key);
    if (tier < 0) return InvalidArgument("budget table: unknown tier power." + key);
    PowerNeeds& out = table.needs(static_cast<Tier>(tier));
    VALET_RETURN_IF_ERROR(ParsePowerNeeds(needs, "budget table: power." + key, out));
  }
  const PowerNeeds& chat = table.needs(Tier::kForegroundChat);
  if (chat.requires_charging || chat.requires_battery_not_low || chat.requires_power_save_off) {
    return InvalidArgument("budget table: power.FOREGROUND_CHAT cannot require anything: the user is waiting");
  }
  return Status::Ok();
}

// Heat throttles background tiers first: fewer threads, then parked from the
// bottom tier up; the foreground chat keeps running at any status.
void SetThermalDefaults(BudgetTable& t) {
  constexpr ThermalCaps kDefaults[kNumThermalStatuses] = {
      {0, 0, Tier::kOfflineIndexing},     // NONE
      {0, 1, Tier::kOfflineIndexing},     // LIGHT
      {0, 1, Tier::kBackgroundSummary},   // MODERATE
      {2, 1, Tier::kInlineSuggestion},    // SEVERE
      {1, 1, Tier::kInlineSuggestion},    // CRITICAL
      {1, 1, Tier::kForegroundChat},      // EMERGENCY
      {1, 1, Tier::kForegroundChat},      // SHUTDOWN
  };
  for (int i = 0; i < kNumThermalStatuses; ++i) t.thermal[static_cast<size_t>(i)] = kDefaults[i];
}

}  // namespace

BudgetTable BudgetTable::Defaults() {
  BudgetTable t;
  // RESUMED: the user is waiting on foreground tiers. Short chunks everywhere
  // bound how long an arriving chat request waits behind a running step.
  for (int tier = 0; tier < kNumTiers; ++tier) {
    const bool foreground = tier <= static_cast<int>(Tier::kInlineSuggestion);
    TierBudget& b = t.at(LifecycleState::kResumed, static_cast<Tier>(tier));
    b.turn_tokens = foreground ? 0 : 16;
    b.prefill_chunk = foreground ? 64 : 32;
    TierBudget& s = t.at(LifecycleState::kStarted, static_cast<Tier>(tier));
    s.turn_tokens = foreground ? 0 : 32;
    s.prefill_chunk = foreground ? 64 : 64;
    TierBudget& c = t.at(LifecycleState::kCreated, static_cast<Tier>(tier));
    c.turn_tokens = foreground ? 0 : 64;
    c.prefill_chunk = 256;
    TierBudget& d = t.at(LifecycleState::kDestroyed, static_cast<Tier>(tier));
    d.state_cap_tokens = 0;
    d.prefill_chunk = 256;
    d.threads = 1;
    // The UI thread comes first: background steps only on cores the app
    // leaves idle (SCHED_IDLE; at nice 10 alone, bench-jank measured 3% of
    // frames missed against 0.2% idle), on the little cores, whatever the state.
    for (TierBudget* each : {&b, &s, &c, &d}) {
      each->nice = foreground ? 0 : kBackgroundNice;
      each->policy = foreground ? SchedPolicy::kNormal : SchedPolicy::kIdle;
      each->cores = foreground ? CoreClass::kPerformance : CoreClass::kEfficiency;
    }
  }
  SetThermalDefaults(t);
  // WorkManager's constraints for background work: battery saver stops the
  // background tiers, a low battery (not charging) the offline indexer too.
  t.needs(Tier::kBackgroundSummary).requires_power_save_off = true;
  t.needs(Tier::kOfflineIndexing).requires_power_save_off = true;
  t.needs(Tier::kOfflineIndexing).requires_battery_not_low = true;
  return t;
}

namespace {

Result<BudgetTable> BudgetTableFromJson(const Json& root) {
  if (!root.is_object()) return InvalidArgument("budget table: the document must be an object");
  BudgetTable table = BudgetTable::Defaults();
  for (const auto& [state_key, tiers] : root.items()) {
    if (state_key == kThermalKey) {
      VALET_RETURN_IF_ERROR(ParseThermalColumn(tiers, table));
      continue;
    }
    if (state_key == kPowerKey) {
      VALET_RETURN_IF_ERROR(ParsePowerColumn(tiers, table));
      continue;
    }
    const int state = IndexOf(kStateKeys, kNumLifecycleStates, state_key);
    if (state < 0) return InvalidArgument("budget table: unknown lifecycle state " + state_key);
    if (!tiers.is_object()) return InvalidArgument("budget table: " + state_key + " must be an object");
    for (const auto& [tier_key, budget] : tiers.items()) {
      const int tier = IndexOf(kTierKeys, kNumTiers, tier_key);
      if (tier < 0) return InvalidArgument("budget table: unknown tier " + tier_key);
      TierBudget& b = table.at(static_cast<LifecycleState>(state), static_cast<Tier>(tier));
      VALET_RETURN_IF_ERROR(ParseTierBudget(budget, "budget table: " + state_key + "." + tier_key, b));
    }
  }
  return table;
}

}  // namespace

Result<BudgetTable> ParseBudgetTable(std::string_view json) {
  VALET_ASSIGN_OR_RETURN(Json root, ParseJson(json));
  return BudgetTableFromJson(root);
}

Result<BudgetTable> LoadBudgetTable(const std::string& path) {
  VALET_ASSIGN_OR_RETURN(Json root, ReadJsonFile(path));
  Result<BudgetTable> table = BudgetTableFromJson(root);
  if (!table.ok()) return Status(table.status().code(), path + ": " + table.status().message());
  return table;
}

}  // namespace valet
