#include "log_bridge.h"

#include <string_view>

#include "jni_util.h"
#include "valet/valet.h"

namespace valet_jni {
namespace {

static_assert(VALET_LOG_WARN == kLogWarn && VALET_LOG_ERROR == kLogError,
              "valet_log_level is android.util.Log's priority, as ValetLog takes it");

// On valet's logger thread, which this attaches to the VM as a daemon on its
// first message. A message that cannot reach Java goes to the default log.
void ToJava(void*, valet_log_level level, const char* text, size_t text_len) {
  JNIEnv* env = CallbackEnv("valet-log");
  if (env == nullptr) return valet_log_default(nullptr, level, text, text_len);
  const LocalFrame frame(env, 2);
  if (frame.ok()) {
    jbyteArray bytes = NewBytes(env, std::string_view(text, text_len));
    if (bytes != nullptr) {
      env->CallStaticVoidMethod(Refs().log, Refs().log_from_native, static_cast<jint>(level), bytes, nullptr);
    }
    if (!env->ExceptionCheck()) return;
  }
  env->ExceptionClear();  // ValetLog catches what a handler throws: this is an OutOfMemoryError
  valet_log_default(nullptr, level, text, text_len);
}

}  // namespace

void InstallLogBridge() { valet_log_set(ToJava, nullptr); }

void RemoveLogBridge() { valet_log_set(nullptr, nullptr); }

}  // namespace valet_jni
