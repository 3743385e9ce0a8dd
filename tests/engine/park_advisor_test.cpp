#include "engine/park_advisor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace valet {
namespace {

// A sequence with 1 MB of own KV (100 tokens) behind a 0.5 MB shared prefix (50 tokens).
ParkAdviceInput Base() {
  ParkAdviceInput in;
  in.pool_free_bytes = 0;
  in.own_bytes = 1'000'000;
  in.prefix_bytes = 500'000;
  in.snapshot_bytes = 1'000'000;
  in.own_tokens = 100;
  in.all_tokens = 150;
  in.ram_free_bytes = 10'000'000;
  in.disk_free_bytes = 100'000'000;
  in.costs.prefill_seconds_per_token = 1e-3;  // partial: 0.1 s, full: 0.15 s
  in.costs.ram_bytes_per_second = 1e9;        // 1 ms
  in.costs.disk_bytes_per_second = 1e8;       // 10 ms
  return in;
}

TEST(ParkAdvisorTest, NoPressureStaysResident) {
  ParkAdviceInput in = Base();
  in.bytes_needed = 0;
  EXPECT_EQ(AdvisePark(in), ParkKind::kResident);
  in.bytes_needed = 100;
  in.pool_free_bytes = 100;
  EXPECT_EQ(AdvisePark(in), ParkKind::kResident);
}

TEST(ParkAdvisorTest, PicksTheCheapestSnapshotThatFreesEnough) {
  ParkAdviceInput in = Base();
  in.bytes_needed = 500'000;
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotRam);
  in.ram_free_bytes = 0;  // RAM tier full
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotDisk);
  in.costs.ram_bytes_per_second = 1e7;  // RAM slower than disk: the faster tier
  in.ram_free_bytes = 10'000'000;
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotDisk);
}

TEST(ParkAdvisorTest, EvictsOnlyWhenNoTierHasRoom) {
  ParkAdviceInput in = Base();
  in.bytes_needed = 500'000;
  in.costs.prefill_seconds_per_token = 1e-9;  // recomputing would be faster than either tier
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotRam);
  in.ram_free_bytes = in.snapshot_bytes - 1;
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotDisk);
  in.disk_free_bytes = in.snapshot_bytes - 1;  // the disk tier's budget is spent
  EXPECT_EQ(AdvisePark(in), ParkKind::kPartial);
  in.disk_free_bytes = 0;  // no disk tier
  EXPECT_EQ(AdvisePark(in), ParkKind::kPartial);
}

TEST(ParkAdvisorTest, DropsThePrefixOnlyWhenOwnBlocksAreNotEnough) {
  ParkAdviceInput in = Base();
  in.bytes_needed = 1'200'000;  // more than own blocks free
  EXPECT_EQ(AdvisePark(in), ParkKind::kFull);
  in.bytes_needed = 10'000'000;  // nothing frees enough: free the most
  EXPECT_EQ(AdvisePark(in), ParkKind::kFull);
}

TEST(ParkAdvisorTest, TrimmingGoesToDiskWhileItHasRoom) {
  ParkAdviceInput in = Base();
  in.costs.prefill_seconds_per_token = 1e-9;
  EXPECT_EQ(AdviseTrimPark(in), ParkKind::kSnapshotDisk);  // never the RAM tier: RAM is what is asked for
  in.disk_free_bytes = in.snapshot_bytes;
  EXPECT_EQ(AdviseTrimPark(in), ParkKind::kSnapshotDisk);
  in.disk_free_bytes = in.snapshot_bytes - 1;
  EXPECT_EQ(AdviseTrimPark(in), ParkKind::kPartial);
}

TEST(ParkAdvisorTest, UnmeasuredBandwidthIsNeverAssumedFast) {
  ParkAdviceInput in = Base();
  in.bytes_needed = 1;
  in.costs.ram_bytes_per_second = 0;
  EXPECT_TRUE(std::isinf(EstimatedResumeSeconds(ParkKind::kSnapshotRam, in)));
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotDisk);  // the measured tier
  in.costs.disk_bytes_per_second = 0;
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotRam);  // neither measured: RAM, still no recompute
  EXPECT_DOUBLE_EQ(EstimatedResumeSeconds(ParkKind::kFull, in), 0.15);
}

}  // namespace
}  // namespace valet
