#include "common/thread_lanes.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#endif

namespace valet {

struct ThreadLanes::Lane {
  std::unique_ptr<ThreadPool> pool;
  Priority priority;      // what its threads (kSwitch: and the caller) are set to now
  std::vector<int> cpus;  // the cores they are confined to now
  int caller_tid = 0;     // the caller placed with them (app lane)
  // A lane below the app's priority (kPoolPerPriority): the thread that runs
  // the steps handed to it.
  std::thread lead;
  int lead_tid = 0;
  std::atomic<int> published_tid{0};  // the lead's id, as it starts
  std::mutex mu;
  std::condition_variable cv;
  const std::function<void()>* job = nullptr;
  bool done = false;
  bool stop = false;
};

namespace {

#if defined(__linux__)
int NiceOf(int tid) {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  return errno == 0 ? nice : 0;
}

int PolicyOf(SchedPolicy policy) {
  switch (policy) {
    case SchedPolicy::kNormal:
      return SCHED_OTHER;
    case SchedPolicy::kBatch:
      return SCHED_BATCH;
    case SchedPolicy::kIdle:
      return SCHED_IDLE;
  }
  return SCHED_OTHER;
}

// Both, even when one is refused: a device that forbids SCHED_IDLE still
// gets the nice value.
bool SetPriority(int tid, const ThreadLanes::Priority& p) {
  const sched_param param{};
  const bool policy_set = sched_setscheduler(tid, PolicyOf(p.policy), &param) == 0;
  const bool nice_set = setpriority(PRIO_PROCESS, static_cast<id_t>(tid), p.nice) == 0;
  return policy_set && nice_set;
}

bool SetCores(int tid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  return sched_setaffinity(tid, sizeof(set), &set) == 0;
}

std::vector<int> AllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
  return out;
}
#else
int NiceOf(int) { return 0; }
bool SetPriority(int, const ThreadLanes::Priority&) { return true; }
bool SetCores(int, const std::vector<int>&) { return true; }
std::vector<int> AllowedCores() { return {}; }
#endif

// Placement is best effort: a refusal costs the UI some smoothness, never a
// step, so it is logged once per kind and the step runs where it is.
void WarnOnce(std::atomic<bool>& warned, const char* what) {
  if (!warned.exchange(true)) {
    LogWarn(std::string("could not set the compute threads' ") + what + ": " +
            std::strerror(errno));
  }
}
std::atomic<bool> g_priority_warned{false};
std::atomic<bool> g_cores_warned{false};

}  // namespace

bool ThreadLanes::CanRestorePriority() {
#if defined(__linux__)
  bool can = false;
  std::thread probe([&can] {
    const int tid = ThreadPool::CurrentTid();
    const Priority app{NiceOf(tid), SchedPolicy::kNormal};
    const Priority idle{std::min(app.nice + 1, kMaxStepNice), SchedPolicy::kIdle};
    if (app.nice < kMaxStepNice && SetPriority(tid, idle)) can = SetPriority(tid, app);
  });
  probe.join();
  return can;
#else
  return false;
#endif
}

ThreadLanes::ThreadLanes(const ThreadLanesOptions& options)
    : n_threads_(std::max(1, options.n_threads)),
      mode_(options.mode),
      topology_(CpuTopology::Read(options.sysfs_root)),
      allowed_(AllowedCores()),
      app_nice_(NiceOf(ThreadPool::CurrentTid())),
      app_lane_(std::make_unique<Lane>()) {
  app_lane_->pool = std::make_unique<ThreadPool>(n_threads_);
  app_lane_->priority = Priority{app_nice_, SchedPolicy::kNormal};
  app_lane_->cpus = allowed_;
  current_ = app_lane_->pool.get();
  (void)Configure(StepThreads{}).ok();
}

ThreadLanes::~ThreadLanes() {
  for (auto& [nice, lane] : low_lanes_) {
    {
      std::lock_guard<std::mutex> lock(lane->mu);
      lane->stop = true;
    }
    lane->cv.notify_all();
    lane->lead.join();
  }
}

Status ThreadLanes::Configure(const StepThreads& threads) {
  if (threads.n_threads < 0) return InvalidArgument("threads must not be negative");
  if (threads.nice < 0 || threads.nice > kMaxStepNice) {
    return InvalidArgument("nice must be between 0 and " + std::to_string(kMaxStepNice));
  }
  target_ =
      Priority{threads.nice == 0 ? app_nice_ : std::max(threads.nice, app_nice_), threads.policy};
  target_cpus_.clear();
  for (int cpu : topology_.Cores(threads.cores)) {
    if (std::binary_search(allowed_.begin(), allowed_.end(), cpu)) target_cpus_.push_back(cpu);
  }
  if (target_cpus_.empty())
    target_cpus_ = allowed_;  // a topology that names no usable core constrains nothing
  target_n_ = threads.n_threads == 0 ? n_threads_ : std::min(threads.n_threads, n_threads_);
  if (!target_cpus_.empty()) target_n_ = std::min(target_n_, static_cast<int>(target_cpus_.size()));
  return Status::Ok();
}

ThreadLanes::Lane& ThreadLanes::LaneFor(const Priority& priority) {
  std::unique_ptr<Lane>& slot = low_lanes_[priority];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<Lane>();
  Lane& lane = *slot;
  lane.pool = std::make_unique<ThreadPool>(n_threads_);
  lane.priority = Priority{app_nice_, SchedPolicy::kNormal};
  lane.cpus = allowed_;
  lane.lead = std::thread([&lane] {
    lane.published_tid.store(ThreadPool::CurrentTid() == 0 ? -1 : ThreadPool::CurrentTid(),
                             std::memory_order_release);
    lane.published_tid.notify_one();
    std::unique_lock<std::mutex> lock(lane.mu);
    for (;;) {
      lane.cv.wait(lock, [&lane] { return lane.job != nullptr || lane.stop; });
      if (lane.stop) return;
      const std::function<void()>* job = lane.job;
      lane.job = nullptr;
      lock.unlock();
      (*job)();
      lock.lock();
      lane.done = true;
      lane.cv.notify_all();
    }
  });
  lane.published_tid.wait(0, std::memory_order_acquire);
  lane.lead_tid = lane.published_tid.load(std::memory_order_acquire);
  return lane;
}

void ThreadLanes::Place(Lane& lane, int caller_tid) {
  lane.pool->set_active(target_n_);
  const int lead = lane.lead_tid != 0 ? lane.lead_tid : caller_tid;
  const std::vector<int>& workers = lane.pool->worker_tids();
  last_tids_.assign(1, lead);
  last_tids_.insert(last_tids_.end(), workers.begin(), workers.begin() + (target_n_ - 1));

  // A new caller needs setting only where it is to run away from the app's
  // priority or cores (kSwitch); the app's threads are otherwise left alone.
  const bool new_caller = lane.lead_tid == 0 && caller_tid != lane.caller_tid;
  lane.caller_tid = lane.lead_tid == 0 ? caller_tid : 0;
  const bool renice = target_ != lane.priority || (new_caller && !at_app_priority());
  const bool move = target_cpus_ != lane.cpus || (new_caller && target_cpus_ != allowed_);
  if (!renice && !move) return;
  for (size_t i = 0; i <= workers.size(); ++i) {
    const int tid = i < workers.size() ? workers[i] : lead;
    if (tid <= 0) continue;
    if (renice && !SetPriority(tid, target_)) WarnOnce(g_priority_warned, "priority");
    if (move && !SetCores(tid, target_cpus_)) WarnOnce(g_cores_warned, "cores");
  }
  lane.priority = target_;
  lane.cpus = target_cpus_;
}

void ThreadLanes::Run(const std::function<void()>& fn) {
  if (!at_app_priority() && mode_ == PriorityMode::kAuto) {
    mode_ = CanRestorePriority() ? PriorityMode::kSwitch : PriorityMode::kPoolPerPriority;
  }
  if (at_app_priority() || mode_ == PriorityMode::kSwitch) {
    Place(*app_lane_, ThreadPool::CurrentTid());
    fn();
    return;
  }
  Lane& lane = LaneFor(target_);
  Place(lane, 0);
  current_ = lane.pool.get();
  {
    std::unique_lock<std::mutex> lock(lane.mu);
    lane.job = &fn;
    lane.done = false;
    lane.cv.notify_all();
    lane.cv.wait(lock, [&lane] { return lane.done; });
  }
  current_ = app_lane_->pool.get();
}

}  // namespace valet
