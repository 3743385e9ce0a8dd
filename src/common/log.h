// The one way library code reports what it cannot return as a Status: a
// warning (a snapshot kept in RAM because the disk failed) or an error. It
// reaches the app's sink (valet/log.h, valet_log_set) or the default log,
// never stderr directly, which Android discards. Never blocks on the sink,
// never throws: callable from the inference thread and from destructors.
#pragma once

#include <cstddef>
#include <string_view>

#include "valet/log.h"

namespace valet {

// Messages waiting for the sink before new ones are dropped (and counted).
inline constexpr size_t kLogQueueCapacity = 256;

void Log(LogLevel level, std::string_view text) noexcept;

inline void LogInfo(std::string_view text) noexcept { Log(LogLevel::kInfo, text); }
inline void LogWarn(std::string_view text) noexcept { Log(LogLevel::kWarn, text); }
inline void LogError(std::string_view text) noexcept { Log(LogLevel::kError, text); }

}  // namespace valet
