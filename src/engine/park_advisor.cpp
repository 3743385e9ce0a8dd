#include "engine/park_advisor.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>

namespace valet {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::infinity();

double Transfer(size_t bytes, double bytes_per_second) {
  if (bytes == 0) return 0.0;
  return bytes_per_second > 0.0 ? static_cast<double>(bytes) / bytes_per_second : kUnknown;
}

}  // namespace

double EstimatedResumeSeconds(ParkKind kind, const ParkAdviceInput& in) {
  switch (kind) {
    case ParkKind::kResident: return 0.0;
    case ParkKind::kSnapshotRam: return Transfer(in.snapshot_bytes, in.costs.ram_bytes_per_second);
    case ParkKind::kSnapshotDisk: return Transfer(in.snapshot_bytes, in.costs.disk_bytes_per_second);
    case ParkKind::kPartial: return in.own_tokens * in.costs.prefill_seconds_per_token;
    case ParkKind::kFull: return in.all_tokens * in.costs.prefill_seconds_per_token;
  }
  return kUnknown;
}

size_t FreedBytes(ParkKind kind, const ParkAdviceInput& in) {
  switch (kind) {
    case ParkKind::kResident: return 0;
    case ParkKind::kFull: return in.own_bytes + in.prefix_bytes;
    default: return in.own_bytes;
  }
}

ParkKind AdvisePark(const ParkAdviceInput& in) {
  if (in.bytes_needed <= in.pool_free_bytes) return ParkKind::kResident;
  const size_t shortfall = in.bytes_needed - in.pool_free_bytes;
  // Snapshots first, the faster tier to resume from (RAM on a tie or when
  // neither was measured), whatever recomputing would cost: a recomputed
  // token is compute spent twice, a snapshot's bytes are only copied.
  const auto pick = [&](std::initializer_list<ParkKind> kinds) -> std::optional<ParkKind> {
    std::optional<ParkKind> best;
    for (ParkKind kind : kinds) {
      const size_t room = kind == ParkKind::kSnapshotRam   ? in.ram_free_bytes
                          : kind == ParkKind::kSnapshotDisk ? in.disk_free_bytes
                                                            : SIZE_MAX;
      if (in.snapshot_bytes > room) continue;
      if (FreedBytes(kind, in) < shortfall) continue;
      if (!best || EstimatedResumeSeconds(kind, in) < EstimatedResumeSeconds(*best, in)) best = kind;
    }
    return best;
  };
  if (std::optional<ParkKind> kind = pick({ParkKind::kSnapshotRam, ParkKind::kSnapshotDisk})) return *kind;
  return pick({ParkKind::kPartial, ParkKind::kFull}).value_or(ParkKind::kFull);  // kFull frees the most
}

ParkKind AdviseTrimPark(const ParkAdviceInput& in) {
  return in.snapshot_bytes <= in.disk_free_bytes ? ParkKind::kSnapshotDisk : ParkKind::kPartial;
}

}  // namespace valet
