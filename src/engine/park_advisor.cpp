#include "engine/park_advisor.h"

#include <limits>

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
  bool allowed[5] = {false, in.snapshot_bytes <= in.ram_free_bytes, in.disk_available, true, true};
  ParkKind best = ParkKind::kFull;
  double best_cost = kUnknown;
  bool best_frees_enough = false;
  for (ParkKind kind : {ParkKind::kSnapshotRam, ParkKind::kSnapshotDisk, ParkKind::kPartial, ParkKind::kFull}) {
    if (!allowed[static_cast<int>(kind)]) continue;
    const bool enough = FreedBytes(kind, in) >= shortfall;
    const double cost = EstimatedResumeSeconds(kind, in);
    if (enough && (!best_frees_enough || cost < best_cost)) {
      best = kind;
      best_cost = cost;
      best_frees_enough = true;
    }
  }
  return best;  // kFull frees the most when nothing frees enough
}

}  // namespace valet
