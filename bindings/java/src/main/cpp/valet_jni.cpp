// dev.valet.NativeLib's natives over the C API (valet.h). Handles come from
// NativeScheduler, which guarantees no call runs on a freed one. Text
// crosses as UTF-8 byte[] both ways (never modified UTF-8), so emoji and
// U+0000 arrive as they are. A failed call throws ValetException with the
// C API's status and valet_last_error(); every JNI call that can raise an
// exception is checked before the next.
#include <jni.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "jni_util.h"
#include "log_bridge.h"
#include "task_callbacks.h"
#include "valet/valet.h"

using valet_jni::NewBytes;
using valet_jni::ReadBytes;
using valet_jni::ThrowNew;
using valet_jni::ThrowStatus;

namespace {

static_assert(sizeof(jint) == sizeof(int32_t), "token ids cross as jint");

std::atomic<int64_t> g_live_schedulers{0};

valet_scheduler* Handle(jlong h) { return reinterpret_cast<valet_scheduler*>(h); }

// Throws for a failed status; true when the call succeeded.
bool Check(JNIEnv* env, valet_status status) {
  if (status == VALET_OK) return true;
  ThrowStatus(env, status);
  return false;
}

// The byte[] elements of a byte[][] (null: none); false with an exception pending.
bool ReadByteArrays(JNIEnv* env, jobjectArray arrays, std::vector<std::string>* out) {
  out->clear();
  if (arrays == nullptr) return true;
  const jsize n = env->GetArrayLength(arrays);
  if (env->ExceptionCheck()) return false;
  for (jsize i = 0; i < n; ++i) {
    auto element = static_cast<jbyteArray>(env->GetObjectArrayElement(arrays, i));
    if (env->ExceptionCheck()) return false;
    std::string bytes;
    const bool ok = ReadBytes(env, element, &bytes);
    env->DeleteLocalRef(element);
    if (!ok) return false;
    out->push_back(std::move(bytes));
  }
  return true;
}

// A request's tools and its messages' calls as valet.h reads them, pointing
// into the texts kept here. Java sends flat triples (name, description,
// parameters; id, name, arguments) and each message's call count; an empty
// description, parameters or tool_call_id stands for none.
struct ToolTexts {
  std::vector<std::string> tool_fields, call_fields, call_ids;
  std::string choice_name;
  std::vector<valet_tool> tools;
  std::vector<valet_tool_call> calls;
  std::vector<valet_message_tools> message_tools;
};

bool ReadToolTexts(JNIEnv* env, jobjectArray tools, jbyteArray choice_name, jobjectArray tool_call_ids,
                   jintArray call_counts, jobjectArray calls, ToolTexts* out) {
  if (!ReadByteArrays(env, tools, &out->tool_fields) || !ReadBytes(env, choice_name, &out->choice_name) ||
      !ReadByteArrays(env, tool_call_ids, &out->call_ids) || !ReadByteArrays(env, calls, &out->call_fields)) {
    return false;
  }
  const jsize n_messages = env->GetArrayLength(call_counts);
  std::vector<jint> counts(static_cast<size_t>(n_messages));
  env->GetIntArrayRegion(call_counts, 0, n_messages, counts.data());
  if (env->ExceptionCheck()) return false;
  uint64_t n_calls = 0;
  bool counts_ok = true;
  for (jint c : counts) {
    counts_ok = counts_ok && c >= 0;
    n_calls += static_cast<uint64_t>(std::max<jint>(c, 0));
  }
  if (!counts_ok || out->tool_fields.size() % 3 != 0 || out->call_ids.size() != counts.size() ||
      3 * n_calls != out->call_fields.size()) {
    ThrowNew(env, "java/lang/IllegalArgumentException", "valet: malformed tools or tool calls");
    return false;
  }
  const auto text_or_null = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
  for (size_t i = 0; i < out->tool_fields.size(); i += 3) {
    out->tools.push_back({out->tool_fields[i].c_str(), text_or_null(out->tool_fields[i + 1]),
                          text_or_null(out->tool_fields[i + 2])});
  }
  for (size_t i = 0; i < out->call_fields.size(); i += 3) {
    out->calls.push_back({out->call_fields[i].c_str(), out->call_fields[i + 1].c_str(), out->call_fields[i + 2].c_str()});
  }
  size_t first = 0;
  for (size_t m = 0; m < counts.size(); ++m) {
    const auto n = static_cast<size_t>(counts[m]);
    out->message_tools.push_back({out->calls.data() + first, n, text_or_null(out->call_ids[m])});
    first += n;
  }
  return true;
}

uint32_t FloatBits(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// valet_recover's report for dev.valet.Recovery: a resumed task (callbacks
// set) on the scheduler's thread, before it runs; an ended one on the thread
// calling recover.
void OnRecovered(void* user, const valet_recovered_task* t, valet_task_params* callbacks) {
  JNIEnv* env = valet_jni::CallbackEnv();
  if (env == nullptr) return;
  const valet_jni::LocalFrame frame(env, 8);
  if (!frame.ok()) {
    valet_jni::ReportPending(env, "a recovered task");
    return;
  }
  auto collector = static_cast<jobject>(user);
  jbyteArray key = NewBytes(env, t->durable_key);
  if (key == nullptr) {
    valet_jni::ReportPending(env, "a recovered task");
    return;
  }
  jintArray tokens = env->NewIntArray(t->n_tokens);
  if (env->ExceptionCheck()) {
    valet_jni::ReportPending(env, "a recovered task");
    return;
  }
  env->SetIntArrayRegion(tokens, 0, t->n_tokens, reinterpret_cast<const jint*>(t->tokens));
  if (valet_jni::ReportPending(env, "a recovered task")) return;
  if (callbacks == nullptr) {
    jbyteArray message = NewBytes(env, t->message);
    if (message == nullptr) {
      valet_jni::ReportPending(env, "a recovered task");
      return;
    }
    env->CallVoidMethod(collector, valet_jni::Refs().recovery_ended, key, static_cast<jint>(t->tier), tokens,
                        static_cast<jint>(t->state), message);
    valet_jni::ReportPending(env, "Recovery.onNativeEnded");
    return;
  }
  jobject task = env->CallObjectMethod(collector, valet_jni::Refs().recovery_resumed, key, static_cast<jint>(t->tier),
                                       tokens, static_cast<jlong>(t->id));
  if (valet_jni::ReportPending(env, "Recovery.onNativeResumed") || task == nullptr) return;
  // The Java task receives the resumed task's callbacks (a global reference, released in on_done).
  if (valet_jni::AttachCallbacks(env, task, callbacks) == nullptr) valet_jni::ReportPending(env, "a recovered task");
}

// NativeLib.create's and createAsync's arguments as valet_params over the
// strings they own.
struct JavaParams {
  valet_params p = valet_default_params();
  std::string path, dir, cache, budgets;
};

#define VALET_JNI_PARAMS                                                                                          \
  jbyteArray model_path, jint model_fd, jlong model_offset, jlong model_size, jint threads, jint n_ctx,         \
      jlong kv_bytes, jlong snapshot_ram_bytes, jbyteArray snapshot_dir, jlong durable_disk_budget,              \
      jbyteArray weights_cache, jlong weights_cache_budget, jbyteArray budget_json, jint initial_state
#define VALET_JNI_PARAM_NAMES                                                                                  \
  model_path, model_fd, model_offset, model_size, threads, n_ctx, kv_bytes, snapshot_ram_bytes, snapshot_dir, \
      durable_disk_budget, weights_cache, weights_cache_budget, budget_json, initial_state

// False with an exception pending.
bool ReadParams(JNIEnv* env, VALET_JNI_PARAMS, JavaParams* out) {
  if (!ReadBytes(env, model_path, &out->path) || !ReadBytes(env, snapshot_dir, &out->dir) ||
      !ReadBytes(env, weights_cache, &out->cache) || !ReadBytes(env, budget_json, &out->budgets)) {
    return false;
  }
  valet_params& p = out->p;
  p.model_path = model_path == nullptr ? nullptr : out->path.c_str();
  p.model_fd = model_fd;
  p.model_offset = static_cast<uint64_t>(model_offset);
  p.model_size = static_cast<uint64_t>(model_size);
  p.n_threads = threads;
  p.n_ctx = n_ctx;
  if (kv_bytes > 0) p.kv_capacity_bytes = static_cast<size_t>(kv_bytes);
  if (snapshot_ram_bytes > 0) p.snapshot_ram_bytes = static_cast<size_t>(snapshot_ram_bytes);
  p.snapshot_dir = snapshot_dir == nullptr ? nullptr : out->dir.c_str();
  if (durable_disk_budget > 0) p.durable_disk_budget_bytes = static_cast<uint64_t>(durable_disk_budget);
  p.weights_cache = weights_cache == nullptr ? nullptr : out->cache.c_str();
  if (weights_cache_budget > 0) p.weights_cache_budget_bytes = static_cast<uint64_t>(weights_cache_budget);
  p.budget_table_json = budget_json == nullptr ? nullptr : out->budgets.c_str();
  p.initial_state = static_cast<valet_lifecycle_state>(initial_state);
  return true;
}

// A load on valet's thread reporting to its dev.valet.NativeLoad.
struct JavaLoad {
  std::mutex mu;
  valet_load* load = nullptr;  // set once valet_create_async returned
  jobject sink = nullptr;      // global ref
};

void OnLoadProgress(void* user_data, valet_load_stage stage, uint64_t done, uint64_t total) {
  JNIEnv* env = valet_jni::CallbackEnv("valet-load");
  if (env == nullptr) return;
  env->CallVoidMethod(static_cast<JavaLoad*>(user_data)->sink, valet_jni::Refs().load_on_progress,
                      static_cast<jint>(stage), static_cast<jlong>(done), static_cast<jlong>(total));
  valet_jni::ReportPending(env, "a LoadListener");
}

void OnLoadDone(void* user_data, valet_status status, const char* message, valet_scheduler* scheduler) {
  auto* java = static_cast<JavaLoad*>(user_data);
  JNIEnv* env = valet_jni::CallbackEnv("valet-load");
  if (env == nullptr) {
    if (scheduler != nullptr) valet_destroy(scheduler);  // nobody to hand it to
  } else {
    if (scheduler != nullptr) g_live_schedulers.fetch_add(1);
    valet_jni::LocalFrame frame(env, 4);
    jbyteArray text = NewBytes(env, message);
    if (text != nullptr) {
      env->CallVoidMethod(java->sink, valet_jni::Refs().load_on_done, reinterpret_cast<jlong>(scheduler),
                          static_cast<jint>(status), text);
    }
    valet_jni::ReportPending(env, "createAsync");
    env->DeleteGlobalRef(java->sink);
  }
  valet_load* load = nullptr;
  {
    std::lock_guard<std::mutex> lock(java->mu);
    load = java->load;
  }
  valet_load_free(load);  // from inside done: it does not wait
  delete java;
}

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), valet_jni::kJniVersion) != JNI_OK) return JNI_ERR;
  if (!valet_jni::Init(vm, env)) return JNI_ERR;
  valet_jni::InstallLogBridge();
  return valet_jni::kJniVersion;
}

// libvalet.so may outlive this library (its class loader collected): its log
// must not call into unloaded code.
JNIEXPORT void JNICALL JNI_OnUnload(JavaVM*, void*) { valet_jni::RemoveLogBridge(); }

JNIEXPORT jlong JNICALL Java_dev_valet_NativeLib_create(JNIEnv* env, jclass, VALET_JNI_PARAMS) {
  JavaParams params;
  if (!ReadParams(env, VALET_JNI_PARAM_NAMES, &params)) return 0;
  valet_scheduler* s = nullptr;
  if (!Check(env, valet_create(&params.p, &s))) return 0;
  g_live_schedulers.fetch_add(1);
  return reinterpret_cast<jlong>(s);
}

JNIEXPORT jlong JNICALL Java_dev_valet_NativeLib_createAsync(JNIEnv* env, jclass, VALET_JNI_PARAMS, jobject sink) {
  JavaParams params;
  if (!ReadParams(env, VALET_JNI_PARAM_NAMES, &params)) return 0;
  auto* java = new JavaLoad;
  java->sink = env->NewGlobalRef(sink);
  if (java->sink == nullptr) {
    delete java;
    return 0;  // OutOfMemoryError pending
  }
  // Held until the handle is stored: done may come first and reads it.
  std::unique_lock<std::mutex> lock(java->mu);
  valet_load* load = nullptr;
  const valet_status started = valet_create_async(&params.p, OnLoadProgress, OnLoadDone, java, &load);
  java->load = load;
  lock.unlock();
  if (started != VALET_OK) {
    env->DeleteGlobalRef(java->sink);
    delete java;
    ThrowStatus(env, started);
    return 0;
  }
  return reinterpret_cast<jlong>(load);
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_loadCancel(JNIEnv* env, jclass, jlong load) {
  Check(env, valet_load_cancel(reinterpret_cast<valet_load*>(load)));
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_stop(JNIEnv* env, jclass, jlong handle) {
  Check(env, valet_stop(Handle(handle)));
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_destroy(JNIEnv*, jclass, jlong handle) {
  valet_destroy(Handle(handle));
  g_live_schedulers.fetch_sub(1);
}

JNIEXPORT jlong JNICALL Java_dev_valet_NativeLib_submit(JNIEnv* env, jclass, jlong handle, jobject task, jint tier,
                                                        jbyteArray system_prompt, jobjectArray roles,
                                                        jobjectArray contents, jbyteArray prompt, jobjectArray stops,
                                                        jint max_tokens, jfloat temperature, jint top_k, jfloat top_p,
                                                        jfloat min_p, jfloat repeat_penalty, jlong seed,
                                                        jboolean durable, jbyteArray durable_key,
                                                        jint constraint_kind, jbyteArray constraint_text,
                                                        jint max_whitespace, jobjectArray tools, jint tool_choice,
                                                        jbyteArray tool_choice_name, jboolean parallel_tool_calls,
                                                        jobjectArray tool_call_ids, jintArray call_counts,
                                                        jobjectArray calls) {
  ToolTexts tool_texts;
  if (!ReadToolTexts(env, tools, tool_choice_name, tool_call_ids, call_counts, calls, &tool_texts)) return -1;
  std::string system, text, key, constraint;
  if (!ReadBytes(env, durable_key, &key) || !ReadBytes(env, constraint_text, &constraint)) return -1;
  std::vector<std::string> role_texts, content_texts, stop_texts;
  if (!ReadBytes(env, system_prompt, &system) || !ReadBytes(env, prompt, &text) ||
      !ReadByteArrays(env, roles, &role_texts) || !ReadByteArrays(env, contents, &content_texts) ||
      !ReadByteArrays(env, stops, &stop_texts)) {
    return -1;
  }
  if (role_texts.size() != content_texts.size() || tool_texts.message_tools.size() != role_texts.size()) {
    ThrowNew(env, "java/lang/IllegalArgumentException", "valet: every message needs a role and a content");
    return -1;
  }
  std::vector<valet_chat_message> messages;
  std::vector<size_t> lengths;
  for (size_t i = 0; i < role_texts.size(); ++i) {
    messages.push_back({role_texts[i].c_str(), content_texts[i].c_str()});
    lengths.push_back(content_texts[i].size());
  }
  std::vector<const char*> stop_strings;
  for (const std::string& s : stop_texts) stop_strings.push_back(s.c_str());
  valet_task_params t = valet_default_task_params();
  t.tier = tier;
  t.system_prompt = system_prompt == nullptr ? nullptr : system.c_str();
  t.messages = messages.data();
  t.n_messages = messages.size();
  t.message_lengths = lengths.data();
  t.prompt = text.c_str();
  t.prompt_length = text.size();
  t.max_tokens = max_tokens;
  t.temperature = temperature;
  t.top_k = top_k;
  t.top_p = top_p;
  t.min_p = min_p;
  t.repeat_penalty = repeat_penalty;
  t.seed = static_cast<uint64_t>(seed);
  t.stop = stop_strings.data();
  t.n_stop = stop_strings.size();
  t.durable = durable ? 1 : 0;
  t.durable_key = durable_key == nullptr ? nullptr : key.c_str();
  t.constraint_kind = constraint_kind;
  t.constraint_text = constraint_text == nullptr ? nullptr : constraint.c_str();
  t.constraint_max_whitespace = max_whitespace < 0 ? UINT32_MAX : static_cast<uint32_t>(max_whitespace);
  t.tools = tool_texts.tools.data();
  t.n_tools = tool_texts.tools.size();
  t.tool_choice = tool_choice;
  t.tool_choice_name = tool_choice_name == nullptr ? nullptr : tool_texts.choice_name.c_str();
  t.parallel_tool_calls = parallel_tool_calls ? 1 : 0;
  t.message_tools = tool_texts.message_tools.data();
  jobject ref = valet_jni::AttachCallbacks(env, task, &t);
  if (ref == nullptr) return -1;
  valet_task_id id = 0;
  const valet_status status = valet_submit(Handle(handle), &t, &id);
  if (status != VALET_OK) {
    valet_jni::DetachRefused(env, ref);
    ThrowStatus(env, status);
    return -1;
  }
  return id;
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_recover(JNIEnv* env, jclass, jlong handle, jobject collector) {
  jobject ref = env->NewGlobalRef(collector);
  if (ref == nullptr) {
    ThrowNew(env, "java/lang/OutOfMemoryError", "valet: no JNI global reference left for recover");
    return;
  }
  const valet_status status = valet_recover(Handle(handle), OnRecovered, ref);
  env->DeleteGlobalRef(ref);
  Check(env, status);
}

// False when there was no journal under that key; other failures throw.
JNIEXPORT jboolean JNICALL Java_dev_valet_NativeLib_ack(JNIEnv* env, jclass, jlong handle, jbyteArray durable_key) {
  std::string key;
  if (!ReadBytes(env, durable_key, &key)) return JNI_FALSE;
  if (key.find('\0') != std::string::npos) {
    ThrowNew(env, "java/lang/IllegalArgumentException", "valet: a durable key cannot hold U+0000");
    return JNI_FALSE;
  }
  const valet_status status = valet_task_ack(Handle(handle), key.c_str());
  if (status == VALET_NOT_FOUND) return JNI_FALSE;
  return Check(env, status) ? JNI_TRUE : JNI_FALSE;
}

// False for a task that had finished; other failures throw.
JNIEXPORT jboolean JNICALL Java_dev_valet_NativeLib_cancel(JNIEnv* env, jclass, jlong handle, jlong id) {
  const valet_status status = valet_cancel(Handle(handle), id);
  if (status == VALET_INVALID_ARGUMENT) return JNI_FALSE;
  return Check(env, status) ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_removeWeightsCache(JNIEnv* env, jclass, jbyteArray path) {
  std::string bytes;
  if (ReadBytes(env, path, &bytes)) Check(env, valet_weights_cache_remove(bytes.c_str()));
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_retryJournals(JNIEnv* env, jclass, jlong handle) {
  Check(env, valet_retry_journals(Handle(handle)));
}

JNIEXPORT jintArray JNICALL Java_dev_valet_NativeLib_taskInfo(JNIEnv* env, jclass, jlong handle, jlong id) {
  valet_task_info info = valet_default_task_info();
  if (!Check(env, valet_get_task_info(Handle(handle), id, &info))) return nullptr;
  const jint v[] = {static_cast<jint>(info.state), static_cast<jint>(info.park_cause)};
  jintArray out = env->NewIntArray(2);
  if (env->ExceptionCheck()) return nullptr;
  env->SetIntArrayRegion(out, 0, 2, v);
  return env->ExceptionCheck() ? nullptr : out;
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_lifecycle(JNIEnv* env, jclass, jlong handle, jint event) {
  Check(env, valet_send_lifecycle_event(Handle(handle), static_cast<valet_lifecycle_event>(event)));
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_thermal(JNIEnv* env, jclass, jlong handle, jint status,
                                                        jfloat headroom) {
  Check(env, valet_on_thermal_status(Handle(handle), status, headroom));
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_power(JNIEnv* env, jclass, jlong handle, jboolean charging,
                                                      jint battery_percent, jboolean power_save, jboolean battery_low) {
  valet_power_state p = valet_default_power_state();
  p.charging = charging ? 1 : 0;
  p.battery_percent = battery_percent;
  p.power_save = power_save ? 1 : 0;
  p.battery_low = battery_low ? 1 : 0;
  Check(env, valet_on_power_state(Handle(handle), &p));
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_trimMemory(JNIEnv* env, jclass, jlong handle, jint level) {
  Check(env, valet_on_trim_memory(Handle(handle), level));
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_setMemoryBudgets(JNIEnv* env, jclass, jlong handle, jlong pool,
                                                                 jlong snapshot_ram) {
  valet_memory_budgets b = valet_default_memory_budgets();
  b.pool_bytes = static_cast<uint64_t>(pool);
  b.snapshot_ram_bytes = static_cast<uint64_t>(snapshot_ram);
  Check(env, valet_set_memory_budgets(Handle(handle), &b));
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_waitIdle(JNIEnv* env, jclass, jlong handle) {
  Check(env, valet_wait_idle(Handle(handle)));
}

// The layout dev.valet.Stats reads.
JNIEXPORT jlongArray JNICALL Java_dev_valet_NativeLib_stats(JNIEnv* env, jclass, jlong handle) {
  valet_stats s = valet_default_stats();
  if (!Check(env, valet_get_stats(Handle(handle), &s))) return nullptr;
  jlong v[12 + 7 * VALET_NUM_TIERS + 4 + 4 + 1];
  int n = 0;
  for (int64_t x : {s.submitted, s.done, s.cancelled, s.failed, s.rejected, s.steps, s.prefill_tokens,
                    s.decode_tokens, s.tokens_recomputed, s.preemptions, static_cast<int64_t>(s.lifecycle),
                    static_cast<int64_t>(s.thermal)}) {
    v[n++] = x;
  }
  for (const valet_tier_stats& t : s.tiers) {
    for (int64_t x : {t.active, t.parked, t.done, t.cancelled, t.failed, t.generated_tokens, t.prefill_tokens}) {
      v[n++] = x;
    }
  }
  for (uint64_t x : {s.memory.pool_used_bytes, s.memory.pool_capacity_bytes, s.memory.snapshot_ram_bytes,
                     s.memory.snapshot_disk_bytes, s.weights.file_backed_bytes, s.weights.anonymous_bytes,
                     static_cast<uint64_t>(s.weights.matrices_mapped), static_cast<uint64_t>(s.weights.matrices_packed),
                     s.scratch_bytes}) {
    v[n++] = static_cast<jlong>(x);
  }
  jlongArray out = env->NewLongArray(n);
  if (env->ExceptionCheck()) return nullptr;
  env->SetLongArrayRegion(out, 0, n, v);
  return env->ExceptionCheck() ? nullptr : out;
}

JNIEXPORT jintArray JNICALL Java_dev_valet_NativeLib_tokenize(JNIEnv* env, jclass, jlong handle, jbyteArray text) {
  std::string bytes;
  if (!ReadBytes(env, text, &bytes)) return nullptr;
  // A token is usually several bytes: one pass for most texts, a second
  // with the exact count for the rest.
  std::vector<int32_t> ids(std::min<size_t>(bytes.size() / 2 + 16, size_t{1} << 16));
  int32_t n = 0;
  valet_status status =
      valet_tokenize(Handle(handle), bytes.data(), bytes.size(), ids.data(), static_cast<int32_t>(ids.size()), &n);
  if (status == VALET_OUT_OF_RANGE && static_cast<size_t>(n) > ids.size()) {
    ids.resize(static_cast<size_t>(n));
    status = valet_tokenize(Handle(handle), bytes.data(), bytes.size(), ids.data(), n, &n);
  }
  if (!Check(env, status)) return nullptr;
  jintArray out = env->NewIntArray(n);
  if (env->ExceptionCheck()) return nullptr;
  env->SetIntArrayRegion(out, 0, n, reinterpret_cast<const jint*>(ids.data()));
  return env->ExceptionCheck() ? nullptr : out;
}

// valet_default_task_params() as Request's defaults are checked against:
// tier, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty (floats
// as their bits), seed.
JNIEXPORT jlongArray JNICALL Java_dev_valet_NativeLib_defaultTaskParams(JNIEnv* env, jclass) {
  const valet_task_params p = valet_default_task_params();
  const jlong v[] = {p.tier,        p.max_tokens,       FloatBits(p.temperature),    p.top_k,
                     FloatBits(p.top_p), FloatBits(p.min_p), FloatBits(p.repeat_penalty), static_cast<jlong>(p.seed)};
  const auto n = static_cast<jsize>(sizeof v / sizeof v[0]);
  jlongArray out = env->NewLongArray(n);
  if (env->ExceptionCheck()) return nullptr;
  env->SetLongArrayRegion(out, 0, n, v);
  return env->ExceptionCheck() ? nullptr : out;
}

// The int inside a java.io.FileDescriptor: its private field is
// "descriptor" on Android and "fd" on OpenJDK.
JNIEXPORT jint JNICALL Java_dev_valet_NativeLib_descriptorOf(JNIEnv* env, jclass, jobject fd) {
  jclass cls = env->GetObjectClass(fd);
  for (const char* name : {"descriptor", "fd"}) {
    const jfieldID field = env->GetFieldID(cls, name, "I");
    if (env->ExceptionCheck()) {
      env->ExceptionClear();  // NoSuchFieldError: try the other name
      continue;
    }
    return env->GetIntField(fd, field);
  }
  ThrowNew(env, "java/lang/IllegalArgumentException",
           "valet: this java.io.FileDescriptor has no int field 'descriptor' or 'fd'; pass the int "
           "(ParcelFileDescriptor.getFd()) instead");
  return -1;
}

JNIEXPORT void JNICALL Java_dev_valet_NativeLib_log(JNIEnv* env, jclass, jint priority, jbyteArray message) {
  std::string text;
  if (ReadBytes(env, message, &text)) valet_jni::WriteLog(priority, text);
}

JNIEXPORT jlong JNICALL Java_dev_valet_NativeLib_liveTaskRefs(JNIEnv*, jclass) { return valet_jni::LiveTaskRefs(); }

JNIEXPORT jlong JNICALL Java_dev_valet_NativeLib_liveSchedulers(JNIEnv*, jclass) { return g_live_schedulers.load(); }

}  // extern "C"
