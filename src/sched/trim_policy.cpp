#include "sched/trim_policy.h"

#include <array>

namespace valet {

namespace {

constexpr std::array<TrimLevel, 7> kLevels = {TrimLevel::kRunningModerate, TrimLevel::kRunningLow,
                                              TrimLevel::kRunningCritical, TrimLevel::kUiHidden,
                                              TrimLevel::kBackground,      TrimLevel::kModerate,
                                              TrimLevel::kComplete};

}  // namespace

const char* TrimLevelName(TrimLevel level) {
  switch (level) {
    case TrimLevel::kRunningModerate: return "RUNNING_MODERATE";
    case TrimLevel::kRunningLow: return "RUNNING_LOW";
    case TrimLevel::kRunningCritical: return "RUNNING_CRITICAL";
    case TrimLevel::kUiHidden: return "UI_HIDDEN";
    case TrimLevel::kBackground: return "BACKGROUND";
    case TrimLevel::kModerate: return "MODERATE";
    case TrimLevel::kComplete: return "COMPLETE";
  }
  return "UNKNOWN";
}

Result<TrimLevel> TrimLevelFromInt(int value) {
  if (value < static_cast<int>(kLevels.front())) {
    return InvalidArgument("trim-memory level " + std::to_string(value) + " is below TRIM_MEMORY_RUNNING_MODERATE (5)");
  }
  TrimLevel level = kLevels.front();
  for (TrimLevel l : kLevels) {
    if (static_cast<int>(l) <= value) level = l;
  }
  return level;
}

TrimActions TrimActionsFor(TrimLevel level) {
  TrimActions a;
  a.demote_snapshots = true;
  // The device is low on memory, or the UI is gone and nobody waits for a
  // parked task: parked KV is the cheapest memory to give back.
  a.evict_parked = level >= TrimLevel::kRunningLow;
  a.parked_to_disk = level >= TrimLevel::kUiHidden;
  // Critical while running, or in the background LRU list: give back the pool.
  a.shrink = level == TrimLevel::kRunningCritical || level >= TrimLevel::kBackground;
  // Giving the pool back: a prefix only parked work holds is parked memory too.
  a.drop_parked_prefixes = a.shrink;
  // Next to be killed: keep nothing but what the history can rebuild.
  a.park_running = level >= TrimLevel::kComplete;
  // Critical while running: the weights are the first pages to reclaim, but
  // the chat may still need them. Next to be killed, with nothing running:
  // clean file pages cost the system nothing to drop now.
  if (level == TrimLevel::kRunningCritical) a.weights = WeightsAdvice::kCold;
  if (level >= TrimLevel::kComplete) a.weights = WeightsAdvice::kPageOut;
  return a;
}

}  // namespace valet
