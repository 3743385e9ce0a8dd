#include "server/work_queue.h"

namespace valet {

WorkQueue::WorkQueue(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

WorkQueue::~WorkQueue() { Stop(); }

bool WorkQueue::Post(int priority, std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    jobs_.push(Job{priority, next_seq_++, std::move(job)});
  }
  cv_.notify_one();
  return true;
}

void WorkQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void WorkQueue::Work() {
  while (true) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      fn = std::move(const_cast<Job&>(jobs_.top()).fn);
      jobs_.pop();
    }
    fn();
  }
}

}  // namespace valet
