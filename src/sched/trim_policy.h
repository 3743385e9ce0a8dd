// What each Android trim-memory level makes the scheduler free. The levels
// (ComponentCallbacks2) grow with the system's need; so do the actions, and
// none of them cancels a task: parked work stays resumable, only its cost of
// resuming grows.
#pragma once

#include <optional>

#include "valet/engine_interface.h"
#include "valet/scheduler.h"

namespace valet {

struct TrimActions {
  bool demote_snapshots = false;      // RAM-tier snapshots move to disk
  bool evict_parked = false;          // parked KV dropped down to the shared prefix; unused cached prefixes dropped
  // With evict_parked: parked KV goes to a disk snapshot instead wherever the
  // disk tier has room (EngineInterface::AdviseTrimPark), so nothing is
  // recomputed. Only with the UI gone: nobody waits on the write.
  bool parked_to_disk = false;
  bool drop_parked_prefixes = false;  // partially evicted tasks drop their shared prefix too (full eviction)
  bool shrink = false;                // pool down to what is in use (never below the largest live task), no RAM snapshots
  bool park_running = false;          // running tasks parked as well (they resume at their next step)
  std::optional<WeightsAdvice> weights;  // told to the OS about the weights (EngineInterface::AdviseWeights)
};

TrimActions TrimActionsFor(TrimLevel level);

}  // namespace valet
