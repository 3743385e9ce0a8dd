// A fake sysfs tree of CPU capacities (ThreadLanesOptions::sysfs_root), so
// tests describe a phone's big and little cores on any machine. Removed with
// the object.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace valet {

class FakeSysfs {
 public:
  // capacity[i] is cpu i's: written as cpu_capacity, or, with `cpufreq`, as
  // cpufreq/cpuinfo_max_freq (devices whose kernels have no capacities).
  explicit FakeSysfs(const std::vector<uint64_t>& capacity, bool cpufreq = false) {
    static int serial = 0;
    root_ = std::filesystem::temp_directory_path() /
            ("valet-sysfs-" + std::to_string(getpid()) + "-" + std::to_string(serial++));
    for (size_t cpu = 0; cpu < capacity.size(); ++cpu) {
      const std::filesystem::path dir =
          root_ / "devices/system/cpu" / ("cpu" + std::to_string(cpu));
      const std::filesystem::path file =
          cpufreq ? dir / "cpufreq/cpuinfo_max_freq" : dir / "cpu_capacity";
      std::filesystem::create_directories(file.parent_path());
      std::ofstream(file) << capacity[cpu] << "\n";
    }
  }
  ~FakeSysfs() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

}  // namespace valet
