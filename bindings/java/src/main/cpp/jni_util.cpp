#include "jni_util.h"

#include <cstdint>

namespace valet_jni {
namespace {

JavaVM* g_vm = nullptr;
JavaRefs g_refs;

// Android's jni.h declares AttachCurrentThreadAsDaemon(JNIEnv**, void*), a
// JDK's (void**, void*); overload resolution on the member's type picks the
// one the header at hand has.
template <typename Vm>
jint AttachAsDaemon(Vm* vm, JNIEnv** env, void* args, jint (Vm::*attach)(JNIEnv**, void*)) {
  return (vm->*attach)(env, args);
}
template <typename Vm>
jint AttachAsDaemon(Vm* vm, JNIEnv** env, void* args, jint (Vm::*attach)(void**, void*)) {
  return (vm->*attach)(reinterpret_cast<void**>(env), args);
}

// Detaches a thread this code attached when the thread ends (the scheduler's
// inference thread ends inside valet_stop).
struct Attachment {
  JavaVM* vm = nullptr;
  ~Attachment() {
    if (vm != nullptr) vm->DetachCurrentThread();
  }
};
thread_local Attachment t_attachment;

bool Cache(JNIEnv* env, jclass* out, const char* name) {
  jclass local = env->FindClass(name);
  if (env->ExceptionCheck()) return false;
  *out = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  return *out != nullptr;
}

}  // namespace

const JavaRefs& Refs() { return g_refs; }

bool Init(JavaVM* vm, JNIEnv* env) {
  g_vm = vm;
  if (!Cache(env, &g_refs.task, "dev/valet/Task")) return false;
  g_refs.task_on_token = env->GetMethodID(g_refs.task, "onNativeToken", "(JI[B)V");
  if (env->ExceptionCheck()) return false;
  g_refs.task_on_state = env->GetMethodID(g_refs.task, "onNativeState", "(JI)V");
  if (env->ExceptionCheck()) return false;
  g_refs.task_on_done = env->GetMethodID(g_refs.task, "onNativeDone", "(JII[B[BI[D[I[B[[B)V");
  if (env->ExceptionCheck()) return false;
  if (!Cache(env, &g_refs.recovery, "dev/valet/Recovery")) return false;
  g_refs.recovery_resumed = env->GetMethodID(g_refs.recovery, "onNativeResumed", "([BI[IJ)Ldev/valet/Task;");
  if (env->ExceptionCheck()) return false;
  g_refs.recovery_ended = env->GetMethodID(g_refs.recovery, "onNativeEnded", "([BI[II[B)V");
  if (env->ExceptionCheck()) return false;
  if (!Cache(env, &g_refs.log, "dev/valet/ValetLog")) return false;
  g_refs.log_from_native = env->GetStaticMethodID(g_refs.log, "fromNative", "(I[BLjava/lang/Throwable;)V");
  if (env->ExceptionCheck()) return false;
  if (!Cache(env, &g_refs.load, "dev/valet/NativeLoad")) return false;
  g_refs.load_on_progress = env->GetMethodID(g_refs.load, "onNativeProgress", "(IJJ)V");
  if (env->ExceptionCheck()) return false;
  g_refs.load_on_done = env->GetMethodID(g_refs.load, "onNativeDone", "(JI[B)V");
  if (env->ExceptionCheck()) return false;
  if (!Cache(env, &g_refs.exception, "dev/valet/ValetException")) return false;
  g_refs.exception_init = env->GetMethodID(g_refs.exception, "<init>", "(I[B)V");
  if (env->ExceptionCheck()) return false;
  return Cache(env, &g_refs.byte_array, "[B");
}

JNIEnv* CallbackEnv(const char* thread_name) {
  JNIEnv* env = nullptr;
  if (g_vm->GetEnv(reinterpret_cast<void**>(&env), kJniVersion) == JNI_OK) return env;
  JavaVMAttachArgs args;
  args.version = kJniVersion;
  args.name = const_cast<char*>(thread_name);  // char* in a JDK's jni.h
  args.group = nullptr;
  if (AttachAsDaemon(g_vm, &env, &args, &JavaVM::AttachCurrentThreadAsDaemon) != JNI_OK) {
    WriteLog(kLogError, std::string("valet: the JVM refused to attach thread ") + thread_name +
                            "; what it had for Java is lost");
    return nullptr;
  }
  t_attachment.vm = g_vm;
  return env;
}

LocalFrame::LocalFrame(JNIEnv* env, jint capacity) : env_(env), pushed_(env->PushLocalFrame(capacity) == 0) {}

LocalFrame::~LocalFrame() {
  if (pushed_) env_->PopLocalFrame(nullptr);
}

jbyteArray NewBytes(JNIEnv* env, std::string_view bytes) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    ThrowNew(env, "java/lang/OutOfMemoryError", "valet: a text over 2 GiB cannot be a byte[]");
    return nullptr;
  }
  const auto n = static_cast<jsize>(bytes.size());
  jbyteArray array = env->NewByteArray(n);
  if (env->ExceptionCheck()) return nullptr;
  env->SetByteArrayRegion(array, 0, n, reinterpret_cast<const jbyte*>(bytes.data()));
  if (env->ExceptionCheck()) {
    env->DeleteLocalRef(array);
    return nullptr;
  }
  return array;
}

bool ReadBytes(JNIEnv* env, jbyteArray array, std::string* out) {
  out->clear();
  if (array == nullptr) return true;
  const jsize n = env->GetArrayLength(array);
  if (env->ExceptionCheck()) return false;
  out->resize(static_cast<size_t>(n));
  env->GetByteArrayRegion(array, 0, n, reinterpret_cast<jbyte*>(out->data()));
  return !env->ExceptionCheck();
}

void ThrowStatus(JNIEnv* env, valet_status status) {
  jbyteArray message = NewBytes(env, valet_last_error());
  if (message == nullptr) return;  // that exception is thrown instead
  jobject error = env->NewObject(g_refs.exception, g_refs.exception_init, static_cast<jint>(status), message);
  if (env->ExceptionCheck()) return;
  env->Throw(static_cast<jthrowable>(error));
}

void ThrowNew(JNIEnv* env, const char* class_name, const char* message) {
  jclass cls = env->FindClass(class_name);
  if (env->ExceptionCheck()) return;
  env->ThrowNew(cls, message);
}

bool ReportPending(JNIEnv* env, const char* where) {
  if (!env->ExceptionCheck()) return false;
  jthrowable error = env->ExceptionOccurred();
  env->ExceptionClear();
  const std::string message = std::string("valet: ") + where + " threw";
  jbyteArray bytes = NewBytes(env, message);
  if (bytes != nullptr) {
    env->CallStaticVoidMethod(g_refs.log, g_refs.log_from_native, static_cast<jint>(kLogError), bytes, error);
  }
  if (env->ExceptionCheck()) {
    env->ExceptionClear();
    WriteLog(kLogError, message + ", and so did reporting it");
  }
  env->DeleteLocalRef(bytes);
  env->DeleteLocalRef(error);
  return true;
}

void WriteLog(int priority, std::string_view message) {
  // valet_log_level's values are android.util.Log's priorities (VERBOSE and
  // DEBUG count as INFO, FATAL as ERROR), and it holds any int.
  valet_log_default(nullptr, static_cast<valet_log_level>(priority), message.data(), message.size());
}

}  // namespace valet_jni
