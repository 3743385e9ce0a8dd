// Chooses how a task leaves the engine when it must stop running. The KV
// state cost model lives in the engine (AdvisePark, from measured costs); the
// controller adds the scheduler's view: no pressure keeps KV resident, app
// destruction writes everything to disk, and a benchmark arm may force a kind.
#pragma once

#include <cstddef>

#include "engine/engine_interface.h"
#include "valet/scheduler.h"

namespace valet {

enum class ParkReason {
  kPreempted,  // a higher tier needs the engine
  kTurnEnded,  // an equal-tier task takes its turn
  kStateCap,   // the tier used its budget in this lifecycle state
  kPower,      // the battery does not let the tier run (the power column)
  kPressure,   // the pool is full: memory must be freed now
  kDestroy,    // ON_DESTROY: keep everything, off the pool, on disk
  kTrim,       // the app was asked to trim memory: KV down to the shared prefix (or to disk: TrimActions)
  kConsumerBehind,  // the task's callbacks fell behind: it waits for its consumer
  kJournalIo,       // its journal cannot take a record: it waits for a retry
};
const char* ParkReasonName(ParkReason reason);
// What the app is told (TaskInfo::park_cause).
ParkCause CauseOf(ParkReason reason);

struct ParkRequest {
  SequenceId seq = 0;
  ParkReason reason = ParkReason::kPreempted;
  size_t bytes_needed = 0;  // pool bytes the work about to run is expected to lack
};

class PreemptionController {
 public:
  explicit PreemptionController(ParkPolicy policy) : policy_(policy) {}

  ParkKind Decide(const EngineInterface& engine, const ParkRequest& request) const;

 private:
  ParkPolicy policy_;
};

}  // namespace valet
