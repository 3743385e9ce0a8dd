// Choosing how to park a sequence: a cost model over measured speeds.
//
// Resuming costs either moving bytes back (a snapshot: bytes / measured
// round-trip bandwidth of its tier) or recomputing tokens (tokens x measured
// prefill seconds per token). Parking has to free enough of the pool for the
// work that needs it; among the ways that do, a snapshot whose tier has room
// wins over recomputing, and then the cheapest resume.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/engine_interface.h"

namespace valet {

struct ParkAdviceInput {
  size_t bytes_needed = 0;     // pool bytes others need (0: no pressure)
  size_t pool_free_bytes = 0;  // free now
  size_t own_bytes = 0;        // pool bytes freed by dropping the sequence's own blocks
  size_t prefix_bytes = 0;     // shared-prefix bytes that only `full` lets the cache give back
  size_t snapshot_bytes = 0;   // bytes a snapshot of the own blocks takes
  int32_t own_tokens = 0;      // tokens `partial` recomputes
  int32_t all_tokens = 0;      // tokens `full` recomputes
  size_t ram_free_bytes = 0;   // room in the snapshot store's RAM tier
  size_t disk_free_bytes = 0;  // room in its disk tier's budget (0: no disk tier)
  EngineCosts costs;
};

// Seconds to bring the sequence back after parking it as `kind`; +inf when
// the needed speed has not been measured.
double EstimatedResumeSeconds(ParkKind kind, const ParkAdviceInput& in);
// Pool bytes parking as `kind` frees.
size_t FreedBytes(ParkKind kind, const ParkAdviceInput& in);

// kResident without pressure; otherwise the cheapest-to-resume snapshot
// whose tier has room for it (one the store would refuse falls back to
// recomputing), else the cheapest eviction that frees enough, else kFull.
ParkKind AdvisePark(const ParkAdviceInput& in);
// Out of RAM for onTrimMemory: kSnapshotDisk when the disk tier has room for
// the snapshot, else kPartial.
ParkKind AdviseTrimPark(const ParkAdviceInput& in);

}  // namespace valet
