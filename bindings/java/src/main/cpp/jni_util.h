// What valet's JNI glue needs beyond jni.h: the JNI version Android accepts,
// attaching native threads with either jni.h (Android's or a JDK's), text as
// UTF-8 byte[] both ways, exceptions checked after every call that can raise
// one (-Xcheck:jni's rule), and the library's default log (logcat or stderr).
#pragma once

#include <jni.h>

#include <string>
#include <string_view>

#include "valet/valet.h"

namespace valet_jni {

// ART accepts 1.2, 1.4 and 1.6 only; 1.6 has everything used here.
inline constexpr jint kJniVersion = JNI_VERSION_1_6;

// android.util.Log's priorities.
inline constexpr int kLogWarn = 5;
inline constexpr int kLogError = 6;

// Classes and methods native code reaches by name, looked up once in
// JNI_OnLoad (a thread attached later sees only the system class loader).
// Every name here is kept by android/consumer-rules.pro.
struct JavaRefs {
  jclass task = nullptr;              // Task (global ref: keeps its method ids valid)
  jmethodID task_on_token = nullptr;  // Task.onNativeToken(long, int, byte[])
  jmethodID task_on_state = nullptr;  // Task.onNativeState(long, int)
  // Task.onNativeDone(long, int, int, byte[], byte[], int, double[], int[], byte[], byte[][])
  jmethodID task_on_done = nullptr;
  jclass recovery = nullptr;          // Recovery (global ref)
  jmethodID recovery_resumed = nullptr;  // Task Recovery.onNativeResumed(byte[], int, int[], long)
  jmethodID recovery_ended = nullptr;    // Recovery.onNativeEnded(byte[], int, int[], int, byte[])
  jclass log = nullptr;               // ValetLog (global ref)
  jmethodID log_from_native = nullptr;  // static ValetLog.fromNative(int, byte[], Throwable)
  jclass load = nullptr;              // NativeLoad (global ref)
  jmethodID load_on_progress = nullptr;  // NativeLoad.onNativeProgress(int, long, long)
  jmethodID load_on_done = nullptr;      // NativeLoad.onNativeDone(long, int, byte[])
  jclass exception = nullptr;         // ValetException (global ref)
  jmethodID exception_init = nullptr;   // ValetException(int, byte[])
  jclass byte_array = nullptr;        // byte[] (global ref), for byte[][]
};
const JavaRefs& Refs();
// Fills Refs() and remembers the VM; false with a Java exception pending.
bool Init(JavaVM* vm, JNIEnv* env);

// The calling thread's JNIEnv, attaching a native thread (the scheduler's
// inference thread, valet's logger thread) to the VM as a daemon named
// `thread_name` on first use and detaching it when the thread ends. nullptr
// when the VM refuses; that is logged.
JNIEnv* CallbackEnv(const char* thread_name = "valet-inference");

// Pushes a local reference frame for a callback on an attached native thread,
// whose local references would otherwise live as long as the thread.
class LocalFrame {
 public:
  LocalFrame(JNIEnv* env, jint capacity);
  ~LocalFrame();
  LocalFrame(const LocalFrame&) = delete;
  LocalFrame& operator=(const LocalFrame&) = delete;
  bool ok() const { return pushed_; }

 private:
  JNIEnv* env_;
  bool pushed_;
};

// A Java byte[] of UTF-8 bytes; nullptr with an exception pending.
jbyteArray NewBytes(JNIEnv* env, std::string_view bytes);
// A byte[]'s bytes (null: empty); false with an exception pending.
bool ReadBytes(JNIEnv* env, jbyteArray array, std::string* out);

// Throws dev.valet.ValetException(status, valet_last_error()).
void ThrowStatus(JNIEnv* env, valet_status status);
// Throws a java.lang exception class by name with an ASCII message.
void ThrowNew(JNIEnv* env, const char* class_name, const char* message);

// For callbacks, which have no Java caller to see an exception: a pending
// one is cleared and handed to the log hook with its stack trace. True when
// there was one.
bool ReportPending(JNIEnv* env, const char* where);

// Writes to valet's default log (valet_log_default: logcat, else stderr) at
// once, never to the app's handler: the end of the line for a message.
void WriteLog(int priority, std::string_view message);

}  // namespace valet_jni
