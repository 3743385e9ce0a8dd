// Runs the app's task callbacks off the inference thread. Each task's events
// form a strand: delivered in the order posted, one at a time, exactly once.
// Strands run on a pool of delivery threads that grows while every thread is
// busy inside a callback (a slow listener holds one thread, never the other
// tasks' events) and shrinks back to idle_threads when they idle. Ready
// strands are served in tier order, so a chat's token is next whenever a
// thread frees up.
//
// Backpressure: a task whose consumer has fallen max_pending events behind is
// reported Behind(); the scheduler parks it until the dispatcher calls
// caught_up (its backlog drained to resume_at), so memory stays bounded and
// every other task goes on.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "valet/scheduler.h"

namespace valet {

class CallbackDispatcher {
 public:
  // caught_up runs on a delivery thread, outside the dispatcher's lock.
  CallbackDispatcher(DeliveryOptions options, std::function<void(TaskId)> caught_up);
  // Shutdown().
  ~CallbackDispatcher();
  CallbackDispatcher(const CallbackDispatcher&) = delete;
  CallbackDispatcher& operator=(const CallbackDispatcher&) = delete;

  // Queues `event` after the task's earlier ones. `tier` orders ready strands.
  void Post(TaskId id, Tier tier, std::function<void()> event);
  // Holds the task's events (making its strand if there is none): they queue
  // but do not run until Release(id). WaitUntilIdle waits for the release.
  void Hold(TaskId id);
  void Release(TaskId id);
  // Whether the task's consumer is behind: max_pending events outstanding, or
  // reported behind and not yet down to resume_at. Each true is followed by
  // exactly one caught_up(id) once the backlog drains.
  bool Behind(TaskId id);
  // Blocks until every event posted so far has run. Not from a delivery
  // thread of this dispatcher (it would wait for its own callback).
  void WaitUntilIdle();
  // WaitUntilIdle, then waits for every delivery thread to leave; Post does
  // nothing after it. Not from a delivery thread.
  void Shutdown();
  // True on this dispatcher's delivery threads.
  bool OnDeliveryThread() const;

 private:
  struct Strand {
    Tier tier = Tier::kForegroundChat;
    std::deque<std::function<void()>> events;  // the front one may be running
    bool scheduled = false;                    // in ready_, or running
    bool behind = false;
    bool held = false;
  };
  // (tier, order made ready), then the task: the ready strand to run next.
  using ReadyKey = std::pair<std::pair<Tier, uint64_t>, TaskId>;

  void WorkerLoop();
  // Runs the front event of a strand taken from ready_; `lock` held around.
  void RunFront(TaskId id, std::unique_lock<std::mutex>& lock);
  // Under mu_: queues a strand that has events and is not scheduled; false
  // when there was nothing to queue.
  bool Schedule(TaskId id, Strand& strand);
  // Schedule, then wakes a waiting thread or starts one.
  void MakeReady(TaskId id, Strand& strand);

  const DeliveryOptions options_;
  const std::function<void(TaskId)> caught_up_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // a strand became ready, or shutdown
  std::condition_variable idle_cv_;  // outstanding_ or threads_ reached 0
  std::unordered_map<TaskId, Strand> strands_;
  std::set<ReadyKey> ready_;
  uint64_t next_order_ = 0;
  size_t outstanding_ = 0;  // events posted and not yet run
  size_t threads_ = 0;      // delivery threads inside WorkerLoop
  size_t idle_ = 0;         // of which waiting for work
  bool shutdown_ = false;
};

}  // namespace valet
