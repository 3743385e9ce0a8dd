// valet.h's log functions over valet/log.h. Neither can fail in a way the
// caller could act on, so they return nothing (like llama_log_set) and no
// exception leaves them: SetLogSink and WriteDefaultLog are noexcept.
#include <string_view>

#include "valet/log.h"
#include "valet/valet.h"

namespace {

static_assert(VALET_LOG_INFO == static_cast<int>(valet::LogLevel::kInfo));
static_assert(VALET_LOG_WARN == static_cast<int>(valet::LogLevel::kWarn));
static_assert(VALET_LOG_ERROR == static_cast<int>(valet::LogLevel::kError));

valet::LogLevel FromC(valet_log_level level) {
  if (level <= VALET_LOG_INFO) return valet::LogLevel::kInfo;
  if (level == VALET_LOG_WARN) return valet::LogLevel::kWarn;
  return valet::LogLevel::kError;
}

// The logger delivers text held in a std::string (log.cpp's Deliver), hence
// the NUL valet.h promises after it.
struct CSink {
  valet_log_fn fn;
  void* user_data;
  void operator()(valet::LogLevel level, std::string_view text) const {
    fn(user_data, static_cast<valet_log_level>(level), text.data(), text.size());
  }
};

}  // namespace

extern "C" void valet_log_set(valet_log_fn fn, void* user_data) {
  if (fn == nullptr) return valet::SetLogSink(nullptr);
  try {
    valet::SetLogSink(CSink{fn, user_data});
  } catch (...) {
    valet::SetLogSink(nullptr);  // the promise holds: the old fn is never called again
    valet::WriteDefaultLog(valet::LogLevel::kError, "valet_log_set: no memory for the sink; the default log is used");
  }
}

extern "C" void valet_log_default(void*, valet_log_level level, const char* text, size_t text_len) {
  valet::WriteDefaultLog(FromC(level), text == nullptr ? std::string_view() : std::string_view(text, text_len));
}
