// The default log (valet/log.h's WriteDefaultLog): logcat, else stderr. The
// only place in the library that writes to stderr.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "valet/log.h"

namespace valet {
namespace {

using AndroidLogWrite = int (*)(int priority, const char* tag, const char* text);

// liblog's __android_log_write, looked up at run time rather than linked, so
// that this path is compiled and run by every build (CI has no NDK: its
// Android-bound builds are glibc cross builds) and one library serves both
// worlds. Off Android the lookup fails once and stderr is used; Debian's
// android-liblog lives outside the loader's search path. Never unloaded: the
// log is wanted until the process ends.
AndroidLogWrite Logcat() {
  static const AndroidLogWrite write = [] {
    void* liblog = dlopen("liblog.so", RTLD_NOW | RTLD_LOCAL);
    return liblog == nullptr ? nullptr : reinterpret_cast<AndroidLogWrite>(dlsym(liblog, "__android_log_write"));
  }();
  return write;
}

// logcat keeps about 4 KB of an entry: longer text (a stack trace) goes in
// pieces, cut at line ends where there are any.
void WriteLogcat(AndroidLogWrite write, int priority, std::string_view text) {
  constexpr size_t kEntryBytes = 4000;
  std::string piece;
  do {
    size_t n = std::min(text.size(), kEntryBytes);
    if (n < text.size()) {
      const size_t line_end = text.rfind('\n', n - 1);
      if (line_end != std::string_view::npos) n = line_end + 1;
    }
    piece.assign(text.substr(0, n));
    write(priority, "valet", piece.c_str());
    text.remove_prefix(n);
  } while (!text.empty());
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warning";
    case LogLevel::kError: return "error";
  }
  return "log";
}

// Under the stream's lock, so that lines from different threads stay whole.
void WriteStderr(LogLevel level, std::string_view text) {
  flockfile(stderr);
  std::fputs("valet: ", stderr);
  std::fputs(LevelName(level), stderr);
  std::fputs(": ", stderr);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fputc('\n', stderr);
  funlockfile(stderr);
}

}  // namespace

void WriteDefaultLog(LogLevel level, std::string_view text) noexcept {
  if (const AndroidLogWrite write = Logcat(); write != nullptr) {
    try {
      return WriteLogcat(write, static_cast<int>(level), text);
    } catch (...) {
      // No memory for a piece: stderr needs none.
    }
  }
  WriteStderr(level, text);
}

}  // namespace valet
