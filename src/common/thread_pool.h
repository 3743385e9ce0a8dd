// A fixed pool of compute threads that run one data-parallel job at a time.
//
// Threads are created once (never per step): a decode step issues dozens of
// small jobs, so waking workers must cost microseconds. Workers spin briefly
// on a generation counter before blocking on it, which keeps back-to-back
// jobs in the same step cheap without burning a core while the engine idles.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace valet {

class ThreadPool {
 public:
  // n_threads counts the calling thread; clamped to at least 1.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Threads that take part in the next jobs (1..size()); the rest block
  // without spinning. The governor's knob: fewer cores for the same engine.
  // Call it from the thread that calls Run, between jobs.
  void set_active(int n);
  int active() const { return active_; }

  // Runs fn(ith, nth) on every thread, the caller being ith == 0, and returns
  // when all calls have returned. Not reentrant: fn must not call Run.
  void Run(const std::function<void(int ith, int nth)>& fn);

  // Threads to use by default: the machine's hardware concurrency.
  static int DefaultThreadCount();
  // The workers' kernel thread ids (ith 1..size()-1; the caller is not one),
  // for setting their priority and cores (ThreadLanes).
  const std::vector<int>& worker_tids() const { return tids_; }
  // The calling thread's kernel thread id (0 where there is none).
  static int CurrentTid();

 private:
  void WorkerLoop(int ith);

  const int n_threads_;
  int active_;
  std::vector<std::thread> workers_;
  std::vector<int> tids_;
  std::unique_ptr<std::atomic<int>[]> published_tids_;
  const std::function<void(int, int)>* job_ = nullptr;  // published by generation_
  // A job counter in the high bits and the job's thread count in the low
  // kNthBits, so a worker reads both at once and never pairs one job's count
  // with another job's number.
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> pending_{0};
  std::atomic<bool> stop_{false};
};

// The contiguous share [begin, end) of n items that thread ith of nth takes.
struct Range {
  int64_t begin;
  int64_t end;
};
inline Range SplitRange(int64_t n, int ith, int nth) {
  const int64_t per = (n + nth - 1) / nth;
  const int64_t begin = per * ith < n ? per * ith : n;
  const int64_t end = begin + per < n ? begin + per : n;
  return {begin, end};
}

}  // namespace valet
