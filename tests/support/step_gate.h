// A gate for the fake engine's steps: a step hook that returns Pass() holds
// the inference thread inside its step while the gate is closed, so a test
// knows where that thread is while it submits, cancels or sends events.
#pragma once

#include <condition_variable>
#include <mutex>

#include "valet/status.h"

namespace valet::testing {

// Holds fake-engine steps (on the inference thread) while closed.
class StepGate {
 public:
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Lets `n` more steps through while closed.
  void Allow(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    allowed_ += n;
    cv_.notify_all();
  }
  // Blocks until a step is waiting at the gate.
  void WaitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return held_ > 0; });
  }
  Status Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    ++held_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_ || allowed_ > 0; });
    if (!open_) --allowed_;
    --held_;
    return Status::Ok();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int allowed_ = 0;
  int held_ = 0;
};

}  // namespace valet::testing
