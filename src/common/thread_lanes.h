// The compute threads of one engine, by OS priority and cores: a step runs
// at the priority of the highest tier in its batch (StepThreads), so that
// background steps yield the CPU to the app's UI thread and keep to the
// efficiency cores.
//
// Linux lets a thread lower its priority (raise its nice value, enter
// SCHED_IDLE) but going back needs CAP_SYS_NICE or a permissive RLIMIT_NICE,
// which an app's process rarely has. So a step below the app's priority runs
// in one of two ways:
//  * kSwitch, where going back is allowed: one pool, the caller among its
//    threads; a change of priority resets them (a few system calls when the
//    batch's top tier changes, nothing otherwise);
//  * kPoolPerPriority, where it is refused: the app-priority lane is the
//    caller and its pool as before; each lower priority has a lane of its own
//    (a lead thread and its pool, set once when created, never back), and
//    a step at that priority is handed to the lead while the caller blocks (a
//    wake-up per step, no spinning).
// kAuto probes once, on a throwaway thread, and picks. Cores are set with
// sched_setaffinity per lane whenever the class asked for changes; any
// thread may do that. Elsewhere than Linux priorities and cores are not set.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/cpu_topology.h"
#include "common/thread_pool.h"
#include "valet/status.h"
#include "valet/threads.h"

namespace valet {

enum class PriorityMode { kAuto, kSwitch, kPoolPerPriority };

struct ThreadLanesOptions {
  int n_threads = ThreadPool::DefaultThreadCount();
  PriorityMode mode = PriorityMode::kAuto;
  std::string sysfs_root = "/sys";  // the CPU topology's (tests: a fake phone)
};

class ThreadLanes {
 public:
  explicit ThreadLanes(const ThreadLanesOptions& options);
  ~ThreadLanes();
  ThreadLanes(const ThreadLanes&) = delete;
  ThreadLanes& operator=(const ThreadLanes&) = delete;

  int size() const { return n_threads_; }
  // Takes effect at the next Run; more threads than size() means size().
  // InvalidArgument for negative threads or nice outside 0..kMaxStepNice.
  Status Configure(const StepThreads& threads);

  // Runs fn at the configured priority, cores and thread count: on the
  // calling thread, or on the lane's lead while the caller waits. fn uses
  // pool() for its data-parallel jobs. Not reentrant.
  void Run(const std::function<void()>& fn);
  // The pool of the lane Run is in (outside Run: the app-priority pool).
  ThreadPool& pool() { return *current_; }

  // kSwitch or kPoolPerPriority once a step below the app's priority ran;
  // the option until then.
  PriorityMode mode() const { return mode_; }
  // The kernel thread ids that computed the last Run (lead or caller first),
  // for tests that read their priority and cores back.
  const std::vector<int>& last_step_tids() const { return last_tids_; }

  // Whether a thread of this process may go back to the app's priority
  // after lowering it (a lower nice value again, SCHED_OTHER after SCHED_IDLE).
  static bool CanRestorePriority();

  // A thread's priority as Linux sets it: a nice value under a policy.
  struct Priority {
    int nice = 0;
    SchedPolicy policy = SchedPolicy::kNormal;
    auto operator<=>(const Priority&) const = default;
  };

 private:
  struct Lane;
  Lane& LaneFor(const Priority& priority);
  bool at_app_priority() const { return target_ == Priority{app_nice_, SchedPolicy::kNormal}; }
  // Sets the lane's threads (and the caller in kSwitch) to the configured priority and cores.
  void Place(Lane& lane, int caller_tid);

  const int n_threads_;
  PriorityMode mode_;
  CpuTopology topology_;
  std::vector<int> allowed_;  // the cores this process may use, when it started
  int app_nice_ = 0;          // the creating thread's nice value: "the app's priority"
  // The configured StepThreads resolved for this process: the nice value,
  // the usable cores of the class, the thread count.
  Priority target_;
  std::vector<int> target_cpus_;
  int target_n_ = 1;
  std::unique_ptr<Lane> app_lane_;
  std::map<Priority, std::unique_ptr<Lane>> low_lanes_;  // kPoolPerPriority
  ThreadPool* current_ = nullptr;
  std::vector<int> last_tids_;
};

}  // namespace valet
