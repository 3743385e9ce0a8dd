#include "common/thread_pool.h"

#include <cassert>
#include <memory>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VALET_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define VALET_CPU_RELAX() asm volatile("yield")
#else
#define VALET_CPU_RELAX() ((void)0)
#endif

namespace valet {
namespace {

// Tens of microseconds of spinning: longer than the gap between the jobs of
// one forward step, far shorter than the gap between steps when the engine
// idles. Yielding now and then matters when the machine is oversubscribed:
// the thread we wait for may need this very core to make progress.
constexpr int kSpinIterations = 4096;
constexpr int kYieldEvery = 64;
constexpr uint32_t kNthBits = 9;  // thread counts up to 511
constexpr uint32_t kNthMask = (1u << kNthBits) - 1;

// Spins until value != old, then blocks; returns the new value.
uint32_t AwaitChange(const std::atomic<uint32_t>& value, uint32_t old) {
  for (int i = 0; i < kSpinIterations; ++i) {
    uint32_t now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    if (i % kYieldEvery == kYieldEvery - 1) {
      std::this_thread::yield();
    } else {
      VALET_CPU_RELAX();
    }
  }
  for (;;) {
    value.wait(old, std::memory_order_acquire);
    uint32_t now = value.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : (n_threads > static_cast<int>(kNthMask) ? static_cast<int>(kNthMask) : n_threads)),
      active_(n_threads_) {
  workers_.reserve(n_threads_ - 1);
  // Each worker publishes its id before it starts waiting for jobs (in a
  // member: the worker may still be notifying when the constructor returns).
  published_tids_ = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(n_threads_));
  for (int i = 1; i < n_threads_; ++i) {
    std::atomic<int>* id = &published_tids_[static_cast<size_t>(i)];
    workers_.emplace_back([this, i, id] {
      id->store(CurrentTid() == 0 ? -1 : CurrentTid(), std::memory_order_release);
      id->notify_one();
      WorkerLoop(i);
    });
  }
  for (int i = 1; i < n_threads_; ++i) {
    published_tids_[static_cast<size_t>(i)].wait(0, std::memory_order_acquire);
    tids_.push_back(published_tids_[static_cast<size_t>(i)].load(std::memory_order_acquire));
  }
}

int ThreadPool::CurrentTid() {
#if defined(__linux__)
  return static_cast<int>(syscall(SYS_gettid));
#else
  return 0;
#endif
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1u << kNthBits, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int ThreadPool::DefaultThreadCount() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void ThreadPool::set_active(int n) {
  active_ = n < 1 ? 1 : (n > n_threads_ ? n_threads_ : n);
}

void ThreadPool::Run(const std::function<void(int, int)>& fn) {
  const int nth = active_;
  if (nth == 1) {
    fn(0, 1);
    return;
  }
  assert(pending_.load() == 0 && "ThreadPool::Run is not reentrant");
  job_ = &fn;
  pending_.store(static_cast<uint32_t>(nth - 1), std::memory_order_relaxed);
  const uint32_t old = generation_.load(std::memory_order_relaxed);
  generation_.store(((old >> kNthBits) + 1) << kNthBits | static_cast<uint32_t>(nth), std::memory_order_release);
  generation_.notify_all();
  fn(0, nth);
  uint32_t left = pending_.load(std::memory_order_acquire);
  while (left != 0) left = AwaitChange(pending_, left);
  job_ = nullptr;
}

void ThreadPool::WorkerLoop(int ith) {
  uint32_t seen = 0;
  bool idle = false;  // left out of the last job: block rather than spin for the next
  for (;;) {
    if (idle) {
      generation_.wait(seen, std::memory_order_acquire);
      seen = generation_.load(std::memory_order_acquire);
    } else {
      seen = AwaitChange(generation_, seen);
    }
    if (stop_.load(std::memory_order_relaxed)) return;
    const int nth = static_cast<int>(seen & kNthMask);
    idle = ith >= nth;
    if (idle) continue;  // Run does not wait for threads outside the job
    (*job_)(ith, nth);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_all();
  }
}

}  // namespace valet
