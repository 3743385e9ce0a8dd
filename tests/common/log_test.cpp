// valet's log (valet/log.h, common/log.h): real warnings reach the app's
// sink on the logger thread; a blocked sink never blocks the thread that
// logs, and what overflows is dropped and counted; clearing the sink waits
// for a call in progress. Every wait is on a condition, none on time.
#include "common/log.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv/snapshot_store.h"

namespace valet {
namespace {

struct Message {
  LogLevel level;
  std::string text;
  std::thread::id thread;
};

// A sink that records what it gets and, given a text to block on, stops in
// the call for that text until released.
class Recorder {
 public:
  explicit Recorder(std::string block_on = "") : block_on_(std::move(block_on)) {}

  LogSink Sink() {
    return [this](LogLevel level, std::string_view text) {
      std::unique_lock<std::mutex> lock(mu_);
      got_.push_back({level, std::string(text), std::this_thread::get_id()});
      if (!block_on_.empty() && text == block_on_) {
        const uint64_t releases = releases_;
        blocked_in_ = text;
        changed_.notify_all();
        changed_.wait(lock, [&] { return releases_ != releases; });
        blocked_in_.clear();
      }
      changed_.notify_all();
    };
  }

  // Waits until `n` messages have arrived; returns them.
  std::vector<Message> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return got_.size() >= n; });
    return got_;
  }
  void WaitUntilBlockedIn(const std::string& text) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return blocked_in_ == text; });
  }
  bool InBlockedCall() {
    std::lock_guard<std::mutex> lock(mu_);
    return !blocked_in_.empty();
  }
  // Lets the blocked call return; the call for `block_next` will block.
  void Release(std::string block_next = "") {
    std::lock_guard<std::mutex> lock(mu_);
    block_on_ = std::move(block_next);
    ++releases_;
    changed_.notify_all();
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return got_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::string block_on_;
  std::string blocked_in_;  // the text of the call blocked now, if any
  uint64_t releases_ = 0;
  std::vector<Message> got_;
};

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(LogTest, SnapshotStoreWarningsReachTheSinkOnTheLoggerThread) {
  Recorder sink;
  SetLogSink(sink.Sink());
  SnapshotStoreOptions options;
  options.disk_dir = "/dev/null/valet-log-test";  // a directory under a file: every disk write fails
  Result<std::unique_ptr<SnapshotStore>> store = SnapshotStore::Create(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<uint8_t> blob(64, 7);
  Result<SnapshotTier> put = (*store)->Put(1, blob, SnapshotTier::kDisk);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(*put, SnapshotTier::kRam);
  const std::vector<Message> got = sink.WaitFor(2);
  SetLogSink(nullptr);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].level, LogLevel::kWarn);
  EXPECT_TRUE(Contains(got[0].text, "snapshot directory /dev/null/valet-log-test is unusable: ")) << got[0].text;
  EXPECT_EQ(got[1].level, LogLevel::kWarn);
  EXPECT_TRUE(Contains(got[1].text, "snapshot to disk failed")) << got[1].text;
  EXPECT_TRUE(Contains(got[1].text, "keeping it in RAM")) << got[1].text;
  for (const Message& m : got) EXPECT_NE(m.thread, std::this_thread::get_id());
}

TEST(LogTest, ABlockedSinkBlocksNoLoggerAndOverflowIsDroppedAndCounted) {
  Recorder sink("first");
  SetLogSink(sink.Sink());
  LogWarn("first");
  sink.WaitUntilBlockedIn("first");  // the logger thread holds "first"; the queue is empty
  for (size_t i = 0; i < kLogQueueCapacity; ++i) LogWarn("queued " + std::to_string(i));
  for (int i = 0; i < 3; ++i) LogError("over");
  // Every call above returned while the sink was still in its first call.
  EXPECT_TRUE(sink.InBlockedCall());
  EXPECT_EQ(sink.Count(), 1u);
  sink.Release();
  // Nothing logged after the drops: the count comes once the queue is empty.
  std::vector<Message> got = sink.WaitFor(1 + kLogQueueCapacity + 1);
  ASSERT_EQ(got.size(), 1 + kLogQueueCapacity + 1);
  EXPECT_EQ(got[0].text, "first");
  for (size_t i = 0; i < kLogQueueCapacity; ++i) ASSERT_EQ(got[1 + i].text, "queued " + std::to_string(i));
  EXPECT_EQ(got.back().level, LogLevel::kWarn);
  EXPECT_EQ(got.back().text, "valet: 3 log messages dropped");
  LogInfo("after");
  got = sink.WaitFor(got.size() + 1);
  SetLogSink(nullptr);
  ASSERT_EQ(got.size(), 1 + kLogQueueCapacity + 2);
  EXPECT_EQ(got.back().level, LogLevel::kInfo);
  EXPECT_EQ(got.back().text, "after");
}

TEST(LogTest, TheDropCountComesBeforeTheMessageLoggedAfterTheDrops) {
  Recorder sink("first");
  SetLogSink(sink.Sink());
  LogWarn("first");
  sink.WaitUntilBlockedIn("first");
  for (size_t i = 0; i < kLogQueueCapacity; ++i) LogWarn("queued " + std::to_string(i));
  LogWarn("over");
  LogWarn("over");
  sink.Release("queued 0");  // the logger takes "queued 0" and blocks: one slot frees up
  sink.WaitUntilBlockedIn("queued 0");
  LogError("next");
  sink.Release();
  const std::vector<Message> got = sink.WaitFor(1 + kLogQueueCapacity + 2);
  SetLogSink(nullptr);
  ASSERT_EQ(got.size(), 1 + kLogQueueCapacity + 2);
  EXPECT_EQ(got[kLogQueueCapacity].text, "queued " + std::to_string(kLogQueueCapacity - 1));
  EXPECT_EQ(got[kLogQueueCapacity + 1].text, "valet: 2 log messages dropped");
  EXPECT_EQ(got.back().level, LogLevel::kError);
  EXPECT_EQ(got.back().text, "next");
}

TEST(LogTest, ClearingTheSinkWaitsForItsCallAndDestroysIt) {
  auto recorder = std::make_shared<Recorder>("slow");
  const std::weak_ptr<Recorder> alive = recorder;
  SetLogSink([recorder, sink = recorder->Sink()](LogLevel level, std::string_view text) { sink(level, text); });
  LogWarn("slow");
  recorder->WaitUntilBlockedIn("slow");
  bool call_ended_before_clear_returned = false;
  std::thread clearer([&] {
    SetLogSink(nullptr);
    call_ended_before_clear_returned = !recorder->InBlockedCall();
  });
  recorder->Release();
  clearer.join();
  EXPECT_TRUE(call_ended_before_clear_returned);
  LogWarn("after clearing");  // the default log, at once: never the old sink
  EXPECT_EQ(recorder->Count(), 1u);
  recorder.reset();
  EXPECT_TRUE(alive.expired()) << "SetLogSink(nullptr) returned with the old sink alive";
}

TEST(LogTest, WithoutASinkAMessageIsWrittenAtOnce) {
  testing::internal::CaptureStderr();
  LogWarn("disk trouble");
  LogError("worse");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "valet: warning: disk trouble\nvalet: error: worse\n");
}

TEST(LogTest, WhatASinkLogsGoesToTheDefaultLogNotBackToTheSink) {
  Recorder sink;
  SetLogSink([record = sink.Sink()](LogLevel level, std::string_view text) {
    if (text == "outer") LogWarn("inner");
    record(level, text);
  });
  testing::internal::CaptureStderr();
  LogWarn("outer");
  LogWarn("marker");
  const std::vector<Message> got = sink.WaitFor(2);
  SetLogSink(nullptr);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "valet: warning: inner\n");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].text, "outer");
  EXPECT_EQ(got[1].text, "marker");
}

}  // namespace
}  // namespace valet
