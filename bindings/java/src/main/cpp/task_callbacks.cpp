// The C API's task callbacks, delivered to the dev.valet.Task they were
// submitted for. Each task holds one JNI global reference, released in
// on_done, which the C API calls exactly once per accepted task (also from
// valet_stop for unfinished ones), so no reference outlives its task.
// Callbacks run on the scheduler's delivery threads, attached to the VM as
// daemons on first use. Text crosses with its length, so a generated NUL
// byte arrives as one. Task catches what a listener throws; anything else
// left pending is reported and cleared here, since no Java caller would see it.
#include "task_callbacks.h"

#include <atomic>
#include <string_view>

#include "jni_util.h"

namespace valet_jni {
namespace {

std::atomic<int64_t> g_live_task_refs{0};

// Room for what one callback creates: its arrays and a reported exception.
constexpr jint kCallbackLocalRefs = 12;

constexpr const char* kThreadName = "valet-delivery";

// Every callback carries the task's id: it may run before valet_submit has
// returned it to Java.
void OnText(void* user, valet_task_id id, int32_t token, const char* text, size_t text_len) {
  JNIEnv* env = CallbackEnv(kThreadName);
  if (env == nullptr) return;
  const LocalFrame frame(env, kCallbackLocalRefs);
  if (!frame.ok()) {
    ReportPending(env, "a token's delivery");
    return;
  }
  jbyteArray bytes = NewBytes(env, std::string_view(text, text_len));
  if (bytes == nullptr) {
    ReportPending(env, "a token's delivery");
    return;
  }
  env->CallVoidMethod(static_cast<jobject>(user), Refs().task_on_token, static_cast<jlong>(id), static_cast<jint>(token),
                      bytes);
  ReportPending(env, "Task.onNativeToken");
}

void OnState(void* user, valet_task_id id, valet_task_state state) {
  JNIEnv* env = CallbackEnv(kThreadName);
  if (env == nullptr) return;
  env->CallVoidMethod(static_cast<jobject>(user), Refs().task_on_state, static_cast<jlong>(id), static_cast<jint>(state));
  ReportPending(env, "Task.onNativeState");
}

// The result's tool calls as (id, name, arguments) triples; nullptr with an
// exception pending.
jobjectArray NewToolCalls(JNIEnv* env, const valet_task_result& r) {
  const auto n = static_cast<jsize>(3 * r.n_tool_calls);
  jobjectArray out = env->NewObjectArray(n, Refs().byte_array, nullptr);
  if (out == nullptr) return nullptr;
  for (size_t i = 0; i < r.n_tool_calls; ++i) {
    const valet_tool_call& c = r.tool_calls[i];
    const char* fields[] = {c.id, c.name, c.arguments};
    for (size_t f = 0; f < 3; ++f) {
      jbyteArray bytes = NewBytes(env, fields[f]);
      if (bytes == nullptr) return nullptr;
      env->SetObjectArrayElement(out, static_cast<jsize>(3 * i + f), bytes);
      env->DeleteLocalRef(bytes);
      if (env->ExceptionCheck()) return nullptr;
    }
  }
  return out;
}

// The metrics as dev.valet.Task.onNativeDone reads them.
void DeliverDone(JNIEnv* env, jobject task, valet_task_id id, const valet_task_result& r) {
  const valet_task_metrics& m = r.metrics;
  const jdouble doubles[] = {m.ttft_seconds, m.tpot_seconds, m.e2e_seconds};
  const jint ints[] = {m.prompt_tokens,    m.cached_prompt_tokens, m.generated_tokens, m.parks,
                       m.parks_by_kind[0], m.parks_by_kind[1],     m.parks_by_kind[2], m.parks_by_kind[3],
                       m.parks_by_kind[4], m.tokens_recomputed};
  jbyteArray message = NewBytes(env, r.message);
  if (message == nullptr) return;
  jbyteArray text = NewBytes(env, std::string_view(r.text, r.text_len));
  if (text == nullptr) return;
  jdoubleArray d = env->NewDoubleArray(3);
  if (env->ExceptionCheck()) return;
  env->SetDoubleArrayRegion(d, 0, 3, doubles);
  if (env->ExceptionCheck()) return;
  jintArray i = env->NewIntArray(10);
  if (env->ExceptionCheck()) return;
  env->SetIntArrayRegion(i, 0, 10, ints);
  if (env->ExceptionCheck()) return;
  jbyteArray content = NewBytes(env, std::string_view(r.content, r.content_len));
  if (content == nullptr) return;
  jobjectArray calls = NewToolCalls(env, r);
  if (calls == nullptr) return;
  env->CallVoidMethod(task, Refs().task_on_done, static_cast<jlong>(id), static_cast<jint>(r.state),
                      static_cast<jint>(r.status), message, text, static_cast<jint>(r.n_tokens), d, i, content, calls);
}

void OnDone(void* user, valet_task_id id, const valet_task_result* r) {
  JNIEnv* env = CallbackEnv(kThreadName);
  if (env == nullptr) return;  // nothing to release into: the VM is gone
  auto task = static_cast<jobject>(user);
  {
    const LocalFrame frame(env, kCallbackLocalRefs);
    if (frame.ok()) DeliverDone(env, task, id, *r);
    ReportPending(env, "a task's onDone");
  }
  env->DeleteGlobalRef(task);
  g_live_task_refs.fetch_sub(1);
}

}  // namespace

jobject AttachCallbacks(JNIEnv* env, jobject task, valet_task_params* params) {
  jobject ref = env->NewGlobalRef(task);
  if (ref == nullptr) {
    ThrowNew(env, "java/lang/OutOfMemoryError", "valet: no JNI global reference left for a task");
    return nullptr;
  }
  g_live_task_refs.fetch_add(1);
  params->on_text = OnText;
  params->on_state = OnState;
  params->on_done = OnDone;
  params->user_data = ref;
  return ref;
}

void DetachRefused(JNIEnv* env, jobject ref) {
  env->DeleteGlobalRef(ref);
  g_live_task_refs.fetch_sub(1);
}

int64_t LiveTaskRefs() { return g_live_task_refs.load(); }

}  // namespace valet_jni
