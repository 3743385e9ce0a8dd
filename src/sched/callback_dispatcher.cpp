#include "sched/callback_dispatcher.h"

#include <system_error>
#include <thread>

namespace valet {

namespace {

// The dispatcher whose delivery thread this is.
thread_local const CallbackDispatcher* t_dispatcher = nullptr;

}  // namespace

CallbackDispatcher::CallbackDispatcher(DeliveryOptions options, std::function<void(TaskId)> caught_up)
    : options_(options), caught_up_(std::move(caught_up)) {}

CallbackDispatcher::~CallbackDispatcher() { Shutdown(); }

bool CallbackDispatcher::OnDeliveryThread() const { return t_dispatcher == this; }

void CallbackDispatcher::Post(TaskId id, Tier tier, std::function<void()> event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  Strand& strand = strands_[id];
  strand.tier = tier;
  strand.events.push_back(std::move(event));
  ++outstanding_;
  MakeReady(id, strand);
}

void CallbackDispatcher::Hold(TaskId id) {
  std::lock_guard<std::mutex> lock(mu_);
  strands_[id].held = true;
}

void CallbackDispatcher::Release(TaskId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = strands_.find(id);
  if (it == strands_.end()) return;
  it->second.held = false;
  if (it->second.events.empty() && !it->second.behind) {
    strands_.erase(it);
  } else {
    MakeReady(id, it->second);
  }
}

bool CallbackDispatcher::Behind(TaskId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = strands_.find(id);
  if (it == strands_.end()) return false;
  Strand& strand = it->second;
  if (strand.events.size() >= options_.max_pending_events) strand.behind = true;
  return strand.behind;
}

bool CallbackDispatcher::Schedule(TaskId id, Strand& strand) {
  if (strand.scheduled || strand.held || strand.events.empty()) return false;
  strand.scheduled = true;
  ready_.insert({{strand.tier, next_order_++}, id});
  return true;
}

void CallbackDispatcher::MakeReady(TaskId id, Strand& strand) {
  if (!Schedule(id, strand)) return;
  if (ready_.size() <= idle_) {
    work_cv_.notify_one();
    return;
  }
  if (threads_ >= options_.max_threads) return;  // a busy thread takes it when free
  try {
    std::thread(&CallbackDispatcher::WorkerLoop, this).detach();
    ++threads_;
  } catch (const std::system_error&) {
    // No thread to be had now: the running ones take it in turn (with none
    // running, the next Post tries again).
  }
}

void CallbackDispatcher::WorkerLoop() {
  t_dispatcher = this;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (!ready_.empty()) {
      const TaskId id = ready_.begin()->second;
      ready_.erase(ready_.begin());
      RunFront(id, lock);
      continue;
    }
    if (shutdown_ || idle_ >= options_.idle_threads) break;
    ++idle_;
    work_cv_.wait(lock, [&] { return shutdown_ || !ready_.empty(); });
    --idle_;
  }
  // Detached: the last touch of this object is here, under the lock that
  // Shutdown waits on.
  if (--threads_ == 0) idle_cv_.notify_all();
}

void CallbackDispatcher::RunFront(TaskId id, std::unique_lock<std::mutex>& lock) {
  // Map elements keep their address across rehashing, and only the thread
  // running a strand erases it.
  Strand& strand = strands_.at(id);
  std::function<void()> event = std::move(strand.events.front());
  lock.unlock();
  event();  // the app's code, under no lock of ours
  event = nullptr;  // its captures die outside the lock too
  lock.lock();
  strand.events.pop_front();
  const bool caught_up = strand.behind && strand.events.size() <= options_.resume_at_events;
  if (caught_up) strand.behind = false;
  strand.scheduled = false;
  if (strand.events.empty() && !strand.behind) {
    strands_.erase(id);
  } else {
    Schedule(id, strand);  // this thread is free to take it: no new one
  }
  if (caught_up) {
    lock.unlock();
    caught_up_(id);
    lock.lock();
  }
  // Counted down last, so WaitUntilIdle also waits for caught_up.
  if (--outstanding_ == 0) idle_cv_.notify_all();
}

void CallbackDispatcher::WaitUntilIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return outstanding_ == 0; });
}

void CallbackDispatcher::Shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return outstanding_ == 0; });
  shutdown_ = true;
  work_cv_.notify_all();
  idle_cv_.wait(lock, [&] { return threads_ == 0; });
}

}  // namespace valet
