// JNI over the C API (valet.h) for dev.valet.Valet. Each submitted task holds
// one JNI global reference to its dev.valet.Task, released in on_done, which
// the C API calls exactly once per accepted task (also from valet_destroy for
// unfinished ones), so no reference outlives its task. Callbacks arrive on
// the scheduler's inference thread, attached to the JVM once (as a daemon)
// and detached when that thread ends; during close() they arrive on the
// closing Java thread. A Java exception thrown by a listener is cleared
// (and counted) so none is left pending in native code.
#include <jni.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "valet/valet.h"

namespace {

JavaVM* g_vm = nullptr;
std::atomic<int64_t> g_live_task_refs{0};
std::atomic<int64_t> g_listener_exceptions{0};

jmethodID g_on_token = nullptr;  // Task.onNativeToken(int, byte[])
jmethodID g_on_state = nullptr;  // Task.onNativeState(int)
jmethodID g_on_done = nullptr;   // Task.onNativeDone(int, int, byte[], byte[], int, double[], int[])

// Detaches the inference thread when it exits, if this code attached it.
struct ThreadAttachment {
  bool attached = false;
  ~ThreadAttachment() {
    if (attached) g_vm->DetachCurrentThread();
  }
};
thread_local ThreadAttachment t_attachment;

JNIEnv* CurrentEnv() {
  JNIEnv* env = nullptr;
  if (g_vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) == JNI_OK) return env;
  if (g_vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void**>(&env), nullptr) != JNI_OK) return nullptr;
  t_attachment.attached = true;
  return env;
}

// Token text may end inside a UTF-8 sequence, which NewStringUTF must not
// see: Java decodes bytes instead.
jbyteArray Bytes(JNIEnv* env, const char* s) {
  const std::string text = s == nullptr ? std::string() : std::string(s);
  jbyteArray a = env->NewByteArray(static_cast<jsize>(text.size()));
  if (a != nullptr) env->SetByteArrayRegion(a, 0, static_cast<jsize>(text.size()), reinterpret_cast<const jbyte*>(text.data()));
  return a;
}

void ClearListenerException(JNIEnv* env) {
  if (env->ExceptionCheck()) {
    env->ExceptionClear();
    g_listener_exceptions.fetch_add(1);
  }
}

void OnToken(void* user, valet_task_id, int32_t token, const char* text) {
  JNIEnv* env = CurrentEnv();
  if (env == nullptr) return;
  jbyteArray bytes = Bytes(env, text);
  env->CallVoidMethod(static_cast<jobject>(user), g_on_token, static_cast<jint>(token), bytes);
  ClearListenerException(env);
  env->DeleteLocalRef(bytes);
}

void OnState(void* user, valet_task_id, valet_task_state state) {
  JNIEnv* env = CurrentEnv();
  if (env == nullptr) return;
  env->CallVoidMethod(static_cast<jobject>(user), g_on_state, static_cast<jint>(state));
  ClearListenerException(env);
}

void OnDone(void* user, valet_task_id, const valet_task_result* r) {
  JNIEnv* env = CurrentEnv();
  if (env == nullptr) return;  // the JVM is gone; nothing left to release into
  jobject task = static_cast<jobject>(user);
  const valet_task_metrics& m = r->metrics;
  const jdouble doubles[] = {m.ttft_seconds, m.tpot_seconds, m.e2e_seconds};
  const jint ints[] = {m.prompt_tokens,    m.cached_prompt_tokens, m.generated_tokens, m.parks,
                       m.parks_by_kind[0], m.parks_by_kind[1],     m.parks_by_kind[2], m.parks_by_kind[3],
                       m.parks_by_kind[4], m.tokens_recomputed};
  jdoubleArray d = env->NewDoubleArray(3);
  jintArray i = env->NewIntArray(10);
  jbyteArray message = Bytes(env, r->message);
  jbyteArray text = Bytes(env, r->text);
  if (d != nullptr && i != nullptr && message != nullptr && text != nullptr) {
    env->SetDoubleArrayRegion(d, 0, 3, doubles);
    env->SetIntArrayRegion(i, 0, 10, ints);
    env->CallVoidMethod(task, g_on_done, static_cast<jint>(r->state), static_cast<jint>(r->status), message, text,
                        static_cast<jint>(r->n_tokens), d, i);
  }
  ClearListenerException(env);
  env->DeleteLocalRef(d);
  env->DeleteLocalRef(i);
  env->DeleteLocalRef(message);
  env->DeleteLocalRef(text);
  env->DeleteGlobalRef(task);
  g_live_task_refs.fetch_sub(1);
}

valet_scheduler* Handle(jlong h) { return reinterpret_cast<valet_scheduler*>(h); }

void ThrowValet(JNIEnv* env, valet_status status) {
  jclass cls = env->FindClass("dev/valet/ValetException");
  if (cls == nullptr) return;
  jmethodID ctor = env->GetMethodID(cls, "<init>", "(ILjava/lang/String;)V");
  jstring msg = env->NewStringUTF(valet_last_error());
  jobject ex = env->NewObject(cls, ctor, static_cast<jint>(status), msg);
  if (ex != nullptr) env->Throw(static_cast<jthrowable>(ex));
}

// Holds a Java string's UTF-8 for the length of one call; NULL stays NULL.
class Utf8 {
 public:
  Utf8(JNIEnv* env, jstring s) : env_(env), s_(s), chars_(s == nullptr ? nullptr : env->GetStringUTFChars(s, nullptr)) {}
  ~Utf8() {
    if (chars_ != nullptr) env_->ReleaseStringUTFChars(s_, chars_);
  }
  Utf8(const Utf8&) = delete;
  Utf8& operator=(const Utf8&) = delete;
  const char* get() const { return chars_; }

 private:
  JNIEnv* env_;
  jstring s_;
  const char* chars_;
};

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  g_vm = vm;
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  jclass task = env->FindClass("dev/valet/Task");
  if (task == nullptr) return JNI_ERR;
  g_on_token = env->GetMethodID(task, "onNativeToken", "(I[B)V");
  g_on_state = env->GetMethodID(task, "onNativeState", "(I)V");
  g_on_done = env->GetMethodID(task, "onNativeDone", "(II[B[BI[D[I)V");
  if (g_on_token == nullptr || g_on_state == nullptr || g_on_done == nullptr) return JNI_ERR;
  return JNI_VERSION_1_8;
}

JNIEXPORT jlong JNICALL Java_dev_valet_Valet_nativeCreate(JNIEnv* env, jclass, jstring model_path, jint threads,
                                                          jint n_ctx, jlong kv_bytes, jlong snapshot_ram_bytes,
                                                          jstring snapshot_dir, jstring budget_json,
                                                          jint initial_state) {
  Utf8 model(env, model_path), dir(env, snapshot_dir), budgets(env, budget_json);
  valet_params p = valet_default_params();
  p.model_path = model.get();
  p.n_threads = threads;
  p.n_ctx = n_ctx;
  if (kv_bytes > 0) p.kv_capacity_bytes = static_cast<size_t>(kv_bytes);
  if (snapshot_ram_bytes > 0) p.snapshot_ram_bytes = static_cast<size_t>(snapshot_ram_bytes);
  p.snapshot_dir = dir.get();
  p.budget_table_json = budgets.get();
  p.initial_state = static_cast<valet_lifecycle_state>(initial_state);
  valet_scheduler* s = nullptr;
  const valet_status status = valet_create(&p, &s);
  if (status != VALET_OK) {
    ThrowValet(env, status);
    return 0;
  }
  return reinterpret_cast<jlong>(s);
}

JNIEXPORT void JNICALL Java_dev_valet_Valet_nativeDestroy(JNIEnv*, jclass, jlong handle) {
  valet_destroy(Handle(handle));
}

JNIEXPORT jlong JNICALL Java_dev_valet_Valet_nativeSubmit(JNIEnv* env, jclass, jlong handle, jobject task, jint tier,
                                                          jstring system_prompt, jstring prompt, jint max_tokens,
                                                          jfloat temperature, jlong seed) {
  Utf8 system(env, system_prompt), text(env, prompt);
  valet_task_params t = valet_default_task_params();
  t.tier = tier;
  t.system_prompt = system.get();
  t.prompt = text.get();
  t.max_tokens = max_tokens;
  t.temperature = temperature;
  t.seed = static_cast<uint64_t>(seed);
  t.on_token = OnToken;
  t.on_state = OnState;
  t.on_done = OnDone;
  jobject ref = env->NewGlobalRef(task);
  if (ref == nullptr) return -1;  // OutOfMemoryError pending
  t.user_data = ref;
  g_live_task_refs.fetch_add(1);
  valet_task_id id = 0;
  const valet_status status = valet_submit(Handle(handle), &t, &id);
  if (status != VALET_OK) {
    // Refused: no on_done will come for it.
    env->DeleteGlobalRef(ref);
    g_live_task_refs.fetch_sub(1);
    ThrowValet(env, status);
    return -1;
  }
  return id;
}

JNIEXPORT jint JNICALL Java_dev_valet_Valet_nativeCancel(JNIEnv*, jclass, jlong handle, jlong id) {
  return valet_cancel(Handle(handle), id);
}

JNIEXPORT jint JNICALL Java_dev_valet_Valet_nativeLifecycle(JNIEnv*, jclass, jlong handle, jint event) {
  return valet_send_lifecycle_event(Handle(handle), static_cast<valet_lifecycle_event>(event));
}

JNIEXPORT jint JNICALL Java_dev_valet_Valet_nativeThermal(JNIEnv*, jclass, jlong handle, jint status, jfloat headroom) {
  return valet_on_thermal_status(Handle(handle), status, headroom);
}

JNIEXPORT jint JNICALL Java_dev_valet_Valet_nativeTrimMemory(JNIEnv*, jclass, jlong handle, jint level) {
  return valet_on_trim_memory(Handle(handle), level);
}

JNIEXPORT jint JNICALL Java_dev_valet_Valet_nativeSetMemoryBudgets(JNIEnv*, jclass, jlong handle, jlong pool,
                                                                   jlong snapshot_ram) {
  valet_memory_budgets b = valet_default_memory_budgets();
  b.pool_bytes = static_cast<uint64_t>(pool);
  b.snapshot_ram_bytes = static_cast<uint64_t>(snapshot_ram);
  return valet_set_memory_budgets(Handle(handle), &b);
}

JNIEXPORT jint JNICALL Java_dev_valet_Valet_nativeWaitIdle(JNIEnv*, jclass, jlong handle) {
  return valet_wait_idle(Handle(handle));
}

// The layout dev.valet.Stats reads.
JNIEXPORT jlongArray JNICALL Java_dev_valet_Valet_nativeStats(JNIEnv* env, jclass, jlong handle) {
  valet_stats s = valet_default_stats();
  const valet_status status = valet_get_stats(Handle(handle), &s);
  if (status != VALET_OK) {
    ThrowValet(env, status);
    return nullptr;
  }
  jlong v[12 + 7 * VALET_NUM_TIERS + 4];
  int n = 0;
  for (int64_t x : {s.submitted, s.done, s.cancelled, s.failed, s.rejected, s.steps, s.prefill_tokens,
                    s.decode_tokens, s.tokens_recomputed, s.preemptions, static_cast<int64_t>(s.lifecycle),
                    static_cast<int64_t>(s.thermal)}) {
    v[n++] = x;
  }
  for (const valet_tier_stats& t : s.tiers) {
    for (int64_t x : {t.active, t.parked, t.done, t.cancelled, t.failed, t.generated_tokens, t.prefill_tokens}) v[n++] = x;
  }
  for (uint64_t x : {s.memory.pool_used_bytes, s.memory.pool_capacity_bytes, s.memory.snapshot_ram_bytes,
                     s.memory.snapshot_disk_bytes}) {
    v[n++] = static_cast<jlong>(x);
  }
  jlongArray out = env->NewLongArray(n);
  if (out != nullptr) env->SetLongArrayRegion(out, 0, n, v);
  return out;
}

JNIEXPORT jstring JNICALL Java_dev_valet_Valet_nativeLastError(JNIEnv* env, jclass) {
  return env->NewStringUTF(valet_last_error());
}

JNIEXPORT jlong JNICALL Java_dev_valet_Valet_nativeLiveTaskRefs(JNIEnv*, jclass) { return g_live_task_refs.load(); }

JNIEXPORT jlong JNICALL Java_dev_valet_Valet_nativeListenerExceptions(JNIEnv*, jclass) {
  return g_listener_exceptions.load();
}

}  // extern "C"
