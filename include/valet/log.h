// valet's log: where the library's warnings and errors go (disk trouble with
// snapshots, a corrupt snapshot, a fault switch it cannot parse). There is
// one sink per process; valet/valet.h's valet_log_set is the same in C.
//
// Without a sink, each message is written at once, on the thread that logs
// it, to Android's log (logcat, tag "valet") when liblog.so can be loaded,
// else to stderr as one line "valet: warning: <text>".
//
// With a sink, messages wait in a bounded queue and one logger thread
// ("valet-log", started on first use) calls the sink, one message at a time,
// in the order they were logged: nothing a sink does (block, call into a VM,
// take a lock) can stall the thread that logged, which may be the scheduler's
// inference thread. When the queue is full (a sink that fell kLogQueueCapacity
// messages behind; see common/log.h) a message is dropped and counted, and
// the sink gets a warning "valet: N log messages dropped" where they would
// have been. Messages still queued when the process exits are lost.
#pragma once

#include <functional>
#include <string_view>

#include "valet/export.h"

namespace valet {

// android.util.Log's priorities, so a level reaches logcat as it is.
enum class LogLevel { kInfo = 4, kWarn = 5, kError = 6 };

// `text` is valid only during the call.
using LogSink = std::function<void(LogLevel level, std::string_view text)>;

// Makes `sink` the process-wide sink; an empty one restores the default.
// Safe from any thread at any time, concurrently with logging.
//
// Once it returns, the previous sink is never called again and has been
// destroyed: if the logger thread was calling it, this waits for that call
// to end. Called from within the sink itself (on the logger thread), it
// cannot wait: the running call is then the last one, and the old sink is
// destroyed on the logger thread when it returns. So the sink must not wait
// for a thread that is setting the sink. Messages still queued are delivered
// to whichever sink is set when their turn comes (the default, if none).
//
// A message logged from within a sink goes to the default log at once,
// never back to the sink, which could otherwise feed itself forever. An
// exception a sink throws is reported to the default log, with the message.
// A sink that captures objects with static storage must be cleared before
// they are destroyed: the logger thread lives until the process ends.
VALET_API void SetLogSink(LogSink sink) noexcept;

// What the default log does with a message: synchronous, any thread.
VALET_API void WriteDefaultLog(LogLevel level, std::string_view text) noexcept;

}  // namespace valet
