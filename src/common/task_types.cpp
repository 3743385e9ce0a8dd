// Names of the public task types (valet/task.h): here, below both the
// scheduler and durable tasks' journals, which use them.
#include <string>

#include "valet/task.h"

namespace valet {

const char* TierName(Tier tier) {
  switch (tier) {
    case Tier::kForegroundChat: return "FOREGROUND_CHAT";
    case Tier::kInlineSuggestion: return "INLINE_SUGGESTION";
    case Tier::kBackgroundSummary: return "BACKGROUND_SUMMARY";
    case Tier::kOfflineIndexing: return "OFFLINE_INDEXING";
  }
  return "UNKNOWN_TIER";
}

Result<Tier> TierFromInt(int value) {
  if (value < 0 || value >= kNumTiers) {
    return InvalidArgument("unknown tier " + std::to_string(value) + " (expected 0.." +
                           std::to_string(kNumTiers - 1) + ")");
  }
  return static_cast<Tier>(value);
}

const char* TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kQueued: return "QUEUED";
    case TaskState::kPrefilling: return "PREFILLING";
    case TaskState::kParked: return "PARKED";
    case TaskState::kDecoding: return "DECODING";
    case TaskState::kDone: return "DONE";
    case TaskState::kCancelled: return "CANCELLED";
    case TaskState::kFailed: return "FAILED";
  }
  return "UNKNOWN_STATE";
}

const char* ParkCauseName(ParkCause cause) {
  switch (cause) {
    case ParkCause::kNone: return "none";
    case ParkCause::kHigherTier: return "higher_tier";
    case ParkCause::kTurn: return "turn";
    case ParkCause::kBudget: return "budget";
    case ParkCause::kMemory: return "memory";
    case ParkCause::kConsumer: return "consumer";
    case ParkCause::kJournalIo: return "journal_io";
    case ParkCause::kPower: return "power";
  }
  return "unknown";
}

}  // namespace valet
