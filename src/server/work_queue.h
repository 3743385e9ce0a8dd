// The server's request workers: a few threads that parse, render and
// tokenize requests off both the event loop and the inference thread, taking
// the most urgent job first (lower priority value first, then arrival), so
// a burst of background requests does not delay a chat at the door.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace valet {

class WorkQueue {
 public:
  explicit WorkQueue(int threads);
  ~WorkQueue();  // Stop()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // False once stopped (the job is not run).
  bool Post(int priority, std::function<void()> job);
  // Runs what is queued, then joins the workers.
  void Stop();

 private:
  struct Job {
    int priority;
    uint64_t seq;
    std::function<void()> fn;
    bool operator<(const Job& o) const {  // std::priority_queue keeps the largest on top
      return priority != o.priority ? priority > o.priority : seq > o.seq;
    }
  };
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Job> jobs_;
  uint64_t next_seq_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace valet
