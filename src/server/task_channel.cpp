#include "server/task_channel.h"

namespace valet {

void TaskChannel::OnToken(std::string_view text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ += utf8_.Push(text);
    started_ = true;
  }
  cv_.notify_all();
}

void TaskChannel::OnLogprobs(const TokenLogprobs& logprobs) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_logprobs_.push_back(logprobs);
}

void TaskChannel::OnDone(const TaskResult& result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ += utf8_.Flush();
    result_ = result;
    started_ = true;
    done_ = true;
  }
  cv_.notify_all();
}

TaskChannel::Update TaskChannel::Take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !pending_.empty() || !pending_logprobs_.empty(); });
  Update u;
  u.text.swap(pending_);
  u.logprobs.swap(pending_logprobs_);
  u.logprobs_offset = logprobs_taken_bytes_;
  for (const TokenLogprobs& t : u.logprobs) logprobs_taken_bytes_ += t.sampled.piece.size();
  u.started = started_;
  u.done = done_;
  return u;
}

bool TaskChannel::WaitStarted(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return started_; });
}

bool TaskChannel::done() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

}  // namespace valet
