#include "sched/preemption_controller.h"

#include <algorithm>

namespace valet {

const char* ParkReasonName(ParkReason reason) {
  switch (reason) {
    case ParkReason::kPreempted: return "preempted";
    case ParkReason::kTurnEnded: return "turn_ended";
    case ParkReason::kStateCap: return "state_cap";
    case ParkReason::kPower: return "power";
    case ParkReason::kPressure: return "pressure";
    case ParkReason::kDestroy: return "destroy";
    case ParkReason::kTrim: return "trim";
    case ParkReason::kConsumerBehind: return "consumer_behind";
    case ParkReason::kJournalIo: return "journal_io";
  }
  return "unknown";
}

ParkCause CauseOf(ParkReason reason) {
  switch (reason) {
    case ParkReason::kPreempted: return ParkCause::kHigherTier;
    case ParkReason::kTurnEnded: return ParkCause::kTurn;
    case ParkReason::kStateCap: return ParkCause::kBudget;
    case ParkReason::kPower: return ParkCause::kPower;
    case ParkReason::kPressure:
    case ParkReason::kDestroy:
    case ParkReason::kTrim: return ParkCause::kMemory;
    case ParkReason::kConsumerBehind: return ParkCause::kConsumer;
    case ParkReason::kJournalIo: return ParkCause::kJournalIo;
  }
  return ParkCause::kNone;
}

namespace {

bool Forced(ParkPolicy policy, ParkKind* kind) {
  switch (policy) {
    case ParkPolicy::kAuto: return false;
    case ParkPolicy::kForceResident: *kind = ParkKind::kResident; return true;
    case ParkPolicy::kForceSnapshotRam: *kind = ParkKind::kSnapshotRam; return true;
    case ParkPolicy::kForceSnapshotDisk: *kind = ParkKind::kSnapshotDisk; return true;
    case ParkPolicy::kForcePartial: *kind = ParkKind::kPartial; return true;
    case ParkPolicy::kForceFull: *kind = ParkKind::kFull; return true;
  }
  return false;
}

}  // namespace

ParkKind PreemptionController::Decide(const EngineInterface& engine, const ParkRequest& request) const {
  if (request.reason == ParkReason::kDestroy) return ParkKind::kSnapshotDisk;
  if (request.reason == ParkReason::kTrim) return ParkKind::kPartial;
  ParkKind forced = ParkKind::kResident;
  const bool is_forced = Forced(policy_, &forced);
  if (request.reason == ParkReason::kPressure) {
    // Memory must actually be freed: a forced "resident" cannot honour that.
    if (is_forced && forced != ParkKind::kResident) return forced;
    const ParkKind advised = engine.AdvisePark(request.seq, std::max<size_t>(request.bytes_needed, 1));
    return advised == ParkKind::kResident ? ParkKind::kSnapshotRam : advised;
  }
  if (is_forced) return forced;
  if (request.bytes_needed == 0) return ParkKind::kResident;
  return engine.AdvisePark(request.seq, request.bytes_needed);
}

}  // namespace valet
