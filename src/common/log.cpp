// The app's log sink behind a bounded queue and one logger thread (the
// contract is in valet/log.h).
#include "common/log.h"

#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace valet {
namespace {

struct Entry {
  LogLevel level = LogLevel::kWarn;
  std::string text;
  uint64_t dropped_before = 0;  // messages dropped between the previous entry and this one
};

class Logger {
 public:
  void Set(LogSink sink) noexcept;
  void Log(LogLevel level, std::string_view text) noexcept;

 private:
  [[nodiscard]] bool StartLocked();
  [[noreturn]] void Run();
  // `text` is a std::string so that the C API can promise a NUL after it.
  static void Deliver(const LogSink* sink, LogLevel level, const std::string& text) noexcept;
  static void DeliverDropped(const LogSink* sink, uint64_t dropped) noexcept;

  std::mutex mu_;
  std::condition_variable work_;       // the logger thread waits here for messages
  std::condition_variable call_ended_; // SetLogSink waits here for a call of the sink it replaced
  std::shared_ptr<const LogSink> sink_;
  const LogSink* calling_ = nullptr;   // the sink the logger thread is calling, if any
  std::deque<Entry> queue_;
  uint64_t dropped_ = 0;               // since the last entry queued
  bool started_ = false;
  std::thread::id thread_;
};

// Never destroyed: the detached logger thread may use it until the process
// ends, after static destructors have run. Reachable, so LeakSanitizer is quiet.
Logger& TheLogger() {
  static Logger* const logger = new Logger;
  return *logger;
}

void Logger::Set(LogSink sink) noexcept {
  std::shared_ptr<const LogSink> next;
  if (sink) {
    try {
      next = std::make_shared<const LogSink>(std::move(sink));
    } catch (...) {
      // Clearing still happens: no old sink may be called after this returns.
      WriteDefaultLog(LogLevel::kError, "no memory to set the log sink; the default log is used");
    }
  }
  std::shared_ptr<const LogSink> old;
  {
    std::unique_lock<std::mutex> lock(mu_);
    old = std::exchange(sink_, std::move(next));
    // On the logger thread the call in progress is the caller: it cannot be waited for.
    if (old != nullptr && std::this_thread::get_id() != thread_) {
      call_ended_.wait(lock, [&] { return calling_ != old.get(); });
    }
  }
  // `old` goes here, outside the lock: its destructor may log or set a sink.
}

void Logger::Log(LogLevel level, std::string_view text) noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu_);
    const bool queued = sink_ != nullptr && std::this_thread::get_id() != thread_ && (started_ || StartLocked());
    if (queued) {
      if (queue_.size() >= kLogQueueCapacity) {
        ++dropped_;
        return;
      }
      queue_.push_back(Entry{level, std::string(text), dropped_});
      dropped_ = 0;
      lock.unlock();
      work_.notify_one();
      return;
    }
  } catch (...) {
    // No memory for the copy: the message goes where it would without a sink.
  }
  WriteDefaultLog(level, text);
}

bool Logger::StartLocked() {
  try {
    std::thread logger([this] { Run(); });
    thread_ = logger.get_id();
    logger.detach();
    started_ = true;
  } catch (...) {
    // No thread for now: this message goes to the default log, the next one tries again.
  }
  return started_;
}

void Logger::Run() {
  pthread_setname_np(pthread_self(), "valet-log");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return !queue_.empty() || dropped_ > 0; });
    Entry entry;
    const bool notice_only = queue_.empty();  // drops with nothing logged after them
    if (notice_only) {
      entry.dropped_before = std::exchange(dropped_, 0);
    } else {
      entry = std::move(queue_.front());
      queue_.pop_front();
    }
    std::shared_ptr<const LogSink> sink = sink_;
    calling_ = sink.get();
    lock.unlock();
    if (entry.dropped_before > 0) DeliverDropped(sink.get(), entry.dropped_before);
    if (!notice_only) Deliver(sink.get(), entry.level, entry.text);
    // Released before calling_ is cleared, so that a SetLogSink waiting for
    // this call holds the last reference and destroys the sink on its thread.
    sink.reset();
    entry = Entry{};
    lock.lock();
    calling_ = nullptr;
    call_ended_.notify_all();
  }
}

void Logger::Deliver(const LogSink* sink, LogLevel level, const std::string& text) noexcept {
  if (sink == nullptr) return WriteDefaultLog(level, text);  // cleared since it was queued
  try {
    (*sink)(level, text);
  } catch (...) {
    WriteDefaultLog(LogLevel::kError, "the log sink threw while given the next message");
    WriteDefaultLog(level, text);
  }
}

void Logger::DeliverDropped(const LogSink* sink, uint64_t dropped) noexcept {
  try {
    Deliver(sink, LogLevel::kWarn, "valet: " + std::to_string(dropped) + " log messages dropped");
  } catch (...) {
    // No memory for the notice: the count is lost, the messages were already.
  }
}

}  // namespace

void SetLogSink(LogSink sink) noexcept { TheLogger().Set(std::move(sink)); }

void Log(LogLevel level, std::string_view text) noexcept { TheLogger().Log(level, text); }

}  // namespace valet
