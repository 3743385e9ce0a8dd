// The cores of each class, read from fake sysfs trees of phones.
#include "common/cpu_topology.h"

#include <gtest/gtest.h>

#include <vector>

#include "support/fake_sysfs.h"

namespace valet {
namespace {

// A 1+3+4 phone as arm64 kernels describe it: four little cores first, three
// big ones, one prime core.
TEST(CpuTopologyTest, APhoneWithThreeClustersFromCpuCapacity) {
  FakeSysfs sysfs({160, 160, 160, 160, 840, 840, 840, 1024});
  const CpuTopology t = CpuTopology::Read(sysfs.root());
  ASSERT_EQ(t.n_cpus(), 8);
  EXPECT_TRUE(t.heterogeneous());
  EXPECT_EQ(t.capacity(7), 1024u);
  EXPECT_EQ(t.Cores(CoreClass::kEfficiency), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.Cores(CoreClass::kPerformance), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t.Cores(CoreClass::kAll), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// Kernels without cpu_capacity still list each core's highest frequency; the
// little cores need not come first.
TEST(CpuTopologyTest, FallsBackToTheHighestFrequency) {
  FakeSysfs sysfs({2400000, 2400000, 1800000, 1800000, 1800000, 1800000}, /*cpufreq=*/true);
  const CpuTopology t = CpuTopology::Read(sysfs.root());
  ASSERT_EQ(t.n_cpus(), 6);
  EXPECT_EQ(t.Cores(CoreClass::kEfficiency), (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(t.Cores(CoreClass::kPerformance), (std::vector<int>{0, 1}));
}

TEST(CpuTopologyTest, AlikeCoresAreEveryClass) {
  FakeSysfs sysfs({1024, 1024, 1024, 1024});
  const CpuTopology t = CpuTopology::Read(sysfs.root());
  EXPECT_FALSE(t.heterogeneous());
  for (CoreClass c : {CoreClass::kAll, CoreClass::kPerformance, CoreClass::kEfficiency}) {
    EXPECT_EQ(t.Cores(c), (std::vector<int>{0, 1, 2, 3})) << CoreClassName(c);
  }
}

TEST(CpuTopologyTest, NoTopologyNamesNoCore) {
  FakeSysfs sysfs({});
  const CpuTopology t = CpuTopology::Read(sysfs.root());
  EXPECT_EQ(t.n_cpus(), 0);
  EXPECT_TRUE(t.Cores(CoreClass::kEfficiency).empty());
  EXPECT_EQ(CpuTopology::Read("/nonexistent-sysfs").n_cpus(), 0);
}

TEST(CpuTopologyTest, ClassNamesRoundTrip) {
  for (CoreClass c : {CoreClass::kAll, CoreClass::kPerformance, CoreClass::kEfficiency}) {
    Result<CoreClass> back = CoreClassFromName(CoreClassName(c));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, c);
  }
  EXPECT_EQ(CoreClassFromName("big").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace valet
