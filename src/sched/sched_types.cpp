// Names and the lifecycle transition function of the public scheduler types
// (valet/scheduler.h); the task types' names are in common/task_types.cpp.
#include <string>

#include "valet/scheduler.h"

namespace valet {

const char* LifecycleEventName(LifecycleEvent event) {
  switch (event) {
    case LifecycleEvent::kOnCreate: return "ON_CREATE";
    case LifecycleEvent::kOnStart: return "ON_START";
    case LifecycleEvent::kOnResume: return "ON_RESUME";
    case LifecycleEvent::kOnPause: return "ON_PAUSE";
    case LifecycleEvent::kOnStop: return "ON_STOP";
    case LifecycleEvent::kOnDestroy: return "ON_DESTROY";
  }
  return "UNKNOWN_EVENT";
}

const char* LifecycleStateName(LifecycleState state) {
  switch (state) {
    case LifecycleState::kDestroyed: return "DESTROYED";
    case LifecycleState::kCreated: return "CREATED";
    case LifecycleState::kStarted: return "STARTED";
    case LifecycleState::kResumed: return "RESUMED";
  }
  return "UNKNOWN_LIFECYCLE_STATE";
}

const char* QueuePolicyName(QueuePolicy policy) {
  switch (policy) {
    case QueuePolicy::kValet: return "valet";
    case QueuePolicy::kFifo: return "fifo";
    case QueuePolicy::kPriorityNoPreempt: return "priority";
    case QueuePolicy::kBatchAll: return "batch";
  }
  return "unknown";
}

Result<LifecycleState> NextLifecycleState(LifecycleState state, LifecycleEvent event) {
  struct Edge {
    LifecycleEvent event;
    LifecycleState from;
    LifecycleState to;
  };
  static constexpr Edge kEdges[] = {
      {LifecycleEvent::kOnCreate, LifecycleState::kDestroyed, LifecycleState::kCreated},
      {LifecycleEvent::kOnStart, LifecycleState::kCreated, LifecycleState::kStarted},
      {LifecycleEvent::kOnResume, LifecycleState::kStarted, LifecycleState::kResumed},
      {LifecycleEvent::kOnPause, LifecycleState::kResumed, LifecycleState::kStarted},
      {LifecycleEvent::kOnStop, LifecycleState::kStarted, LifecycleState::kCreated},
      {LifecycleEvent::kOnDestroy, LifecycleState::kCreated, LifecycleState::kDestroyed},
  };
  for (const Edge& e : kEdges) {
    if (e.event == event && e.from == state) return e.to;
  }
  const int raw = static_cast<int>(event);
  if (raw < 0 || raw > static_cast<int>(LifecycleEvent::kOnDestroy)) {
    return InvalidArgument("unknown lifecycle event " + std::to_string(raw));
  }
  return InvalidArgument(std::string("lifecycle event ") + LifecycleEventName(event) +
                         " is out of order in state " + LifecycleStateName(state));
}

Result<LifecycleState> NextLifecycleState(LifecycleState state, LifecycleEvent event, LifecycleHistory history) {
  if (history == LifecycleHistory::kNoEventYet && event == LifecycleEvent::kOnCreate) return LifecycleState::kCreated;
  return NextLifecycleState(state, event);
}

const char* ThermalStatusName(ThermalStatus status) {
  switch (status) {
    case ThermalStatus::kNone: return "NONE";
    case ThermalStatus::kLight: return "LIGHT";
    case ThermalStatus::kModerate: return "MODERATE";
    case ThermalStatus::kSevere: return "SEVERE";
    case ThermalStatus::kCritical: return "CRITICAL";
    case ThermalStatus::kEmergency: return "EMERGENCY";
    case ThermalStatus::kShutdown: return "SHUTDOWN";
  }
  return "UNKNOWN_THERMAL_STATUS";
}

Status CheckPowerState(const PowerState& power) {
  if (power.battery_percent < -1 || power.battery_percent > 100) {
    return InvalidArgument("battery_percent " + std::to_string(power.battery_percent) + " is outside -1..100");
  }
  return Status::Ok();
}

Result<ThermalStatus> ThermalStatusFromInt(int value) {
  if (value < 0 || value >= kNumThermalStatuses) {
    return InvalidArgument("unknown thermal status " + std::to_string(value) + " (expected 0.." +
                           std::to_string(kNumThermalStatuses - 1) + ")");
  }
  return static_cast<ThermalStatus>(value);
}

ThermalStatus EffectiveThermalStatus(ThermalStatus status, float headroom) {
  // NaN compares false, so it is unknown like a negative value.
  if (headroom >= 1.0f && status < ThermalStatus::kSevere) return ThermalStatus::kSevere;
  return status;
}

const char* RecomputeCauseName(RecomputeCause cause) {
  switch (cause) {
    case RecomputeCause::kCutStep: return "cut_step";
    case RecomputeCause::kPartialEviction: return "partial_eviction";
    case RecomputeCause::kFullEviction: return "full_eviction";
    case RecomputeCause::kSnapshotFallback: return "snapshot_fallback";
  }
  return "unknown";
}

const char* TimelineKindName(TimelineKind kind) {
  switch (kind) {
    case TimelineKind::kSubmitted: return "submitted";
    case TimelineKind::kStarted: return "started";
    case TimelineKind::kFirstToken: return "first_token";
    case TimelineKind::kParked: return "parked";
    case TimelineKind::kResumed: return "resumed";
    case TimelineKind::kDone: return "done";
    case TimelineKind::kCancelled: return "cancelled";
    case TimelineKind::kFailed: return "failed";
  }
  return "unknown";
}

}  // namespace valet
