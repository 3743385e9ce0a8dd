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
  in.disk_available = true;
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

TEST(ParkAdvisorTest, PicksTheCheapestResumeThatFreesEnough) {
  ParkAdviceInput in = Base();
  in.bytes_needed = 500'000;
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotRam);
  in.ram_free_bytes = 0;  // RAM tier full
  EXPECT_EQ(AdvisePark(in), ParkKind::kSnapshotDisk);
  in.costs.disk_bytes_per_second = 1e6;  // 1 s: slower than recomputing 100 tokens
  EXPECT_EQ(AdvisePark(in), ParkKind::kPartial);
  in.disk_available = false;
  in.costs.prefill_seconds_per_token = 1e-6;  // recompute now beats even RAM
  in.ram_free_bytes = 10'000'000;
  EXPECT_EQ(AdvisePark(in), ParkKind::kPartial);
}

TEST(ParkAdvisorTest, DropsThePrefixOnlyWhenOwnBlocksAreNotEnough) {
  ParkAdviceInput in = Base();
  in.bytes_needed = 1'200'000;  // more than own blocks free
  EXPECT_EQ(AdvisePark(in), ParkKind::kFull);
  in.bytes_needed = 10'000'000;  // nothing frees enough: free the most
  EXPECT_EQ(AdvisePark(in), ParkKind::kFull);
}

TEST(ParkAdvisorTest, UnmeasuredBandwidthIsNeverAssumedFast) {
  ParkAdviceInput in = Base();
  in.bytes_needed = 1;
  in.costs.ram_bytes_per_second = 0;
  in.costs.disk_bytes_per_second = 0;
  EXPECT_TRUE(std::isinf(EstimatedResumeSeconds(ParkKind::kSnapshotRam, in)));
  EXPECT_EQ(AdvisePark(in), ParkKind::kPartial);
  EXPECT_DOUBLE_EQ(EstimatedResumeSeconds(ParkKind::kFull, in), 0.15);
}

}  // namespace
}  // namespace valet
