// The C API over Scheduler + RealEngine. Every entry point catches all
// exceptions (allocation failure is the only one expected) so none crosses
// into C, and reports errors as valet_status plus a thread-local message.
#include "valet/valet.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "capi/capi_internal.h"
#include "engine/real_engine.h"

namespace valet::capi {
namespace {
thread_local std::string g_last_error;
}  // namespace

valet_status ToC(valet::StatusCode code) {
  switch (code) {
    case valet::StatusCode::kOk: return VALET_OK;
    case valet::StatusCode::kInvalidArgument: return VALET_INVALID_ARGUMENT;
    case valet::StatusCode::kNotFound: return VALET_NOT_FOUND;
    case valet::StatusCode::kCorrupt: return VALET_CORRUPT;
    case valet::StatusCode::kUnsupported: return VALET_UNSUPPORTED;
    case valet::StatusCode::kOutOfRange: return VALET_OUT_OF_RANGE;
    case valet::StatusCode::kResourceExhausted: return VALET_RESOURCE_EXHAUSTED;
    case valet::StatusCode::kIo: return VALET_IO;
    case valet::StatusCode::kInternal: return VALET_INTERNAL;
    case valet::StatusCode::kAborted: return VALET_ABORTED;  // tasks cut short by valet_stop / valet_destroy
  }
  return VALET_INTERNAL;
}

valet_status Report(const valet::Status& status) {
  g_last_error = status.ok() ? std::string() : status.ToString();
  return ToC(status.code());
}

valet_status Fail(valet_status code, const char* message) {
  g_last_error = message;
  return code;
}

}  // namespace valet::capi

namespace {

using valet::capi::Fail;
using valet::capi::Guard;
using valet::capi::Report;
using valet::capi::ToC;

static_assert(VALET_CONSTRAINT_JSON_SCHEMA == static_cast<int>(valet::ConstraintKind::kJsonSchema) &&
                  VALET_CONSTRAINT_JSON_OBJECT == static_cast<int>(valet::ConstraintKind::kJsonObject) &&
                  VALET_CONSTRAINT_GRAMMAR == static_cast<int>(valet::ConstraintKind::kGrammar) &&
                  VALET_CONSTRAINT_REGEX == static_cast<int>(valet::ConstraintKind::kRegex) &&
                  VALET_CONSTRAINT_TOOL_CALL == static_cast<int>(valet::ConstraintKind::kToolCall),
              "valet_constraint_kind mirrors valet::ConstraintKind");
static_assert(VALET_PARK_CAUSE_JOURNAL_IO == static_cast<int>(valet::ParkCause::kJournalIo) &&
                  VALET_PARK_CAUSE_POWER == static_cast<int>(valet::ParkCause::kPower) &&
                  VALET_PARK_CAUSE_CONSUMER == static_cast<int>(valet::ParkCause::kConsumer),
              "valet_park_cause mirrors valet::ParkCause");
static_assert(VALET_TOOL_CHOICE_AUTO == static_cast<int>(valet::ToolChoice::Kind::kAuto) &&
                  VALET_TOOL_CHOICE_NONE == static_cast<int>(valet::ToolChoice::Kind::kNone) &&
                  VALET_TOOL_CHOICE_REQUIRED == static_cast<int>(valet::ToolChoice::Kind::kRequired) &&
                  VALET_TOOL_CHOICE_NAMED == static_cast<int>(valet::ToolChoice::Kind::kNamed),
              "valet_tool_choice mirrors valet::ToolChoice::Kind");

valet_status CheckHandle(const valet_scheduler* s) {
  if (s == nullptr) return Fail(VALET_INVALID_ARGUMENT, "scheduler is required");
  return VALET_OK;
}

// Calls that wait for the inference thread would wait for themselves there.
valet_status RefuseFromCallback(const valet_scheduler& s, const char* function) {
  if (!s.scheduler->OnCallbackThread()) return VALET_OK;
  const std::string why = std::string(function) +
                          " called from a task callback of the same scheduler: it would wait for the callback's own thread";
  return Fail(VALET_INVALID_ARGUMENT, why.c_str());
}

// A caller's text: `length` bytes, or up to its NUL when `length` is 0 (NULL:
// empty). Bounded before it is read: strnlen stops one byte past the limit.
valet::Result<std::string> Text(const char* s, size_t length, const char* what) {
  if (s == nullptr) {
    if (length != 0) return valet::InvalidArgument(std::string(what) + " is NULL but its length is not 0");
    return std::string();
  }
  if (length == 0) length = strnlen(s, VALET_MAX_TEXT_BYTES + 1);
  if (length > VALET_MAX_TEXT_BYTES) {
    return valet::InvalidArgument(std::string(what) + " is longer than VALET_MAX_TEXT_BYTES (" +
                                  std::to_string(VALET_MAX_TEXT_BYTES) + ")");
  }
  return std::string(s, length);
}

valet::Status CheckList(const void* items, size_t n, const char* what) {
  if (n > VALET_MAX_LIST_ITEMS) {
    return valet::InvalidArgument(std::string(what) + ": " + std::to_string(n) + " items, more than VALET_MAX_LIST_ITEMS (" +
                                  std::to_string(VALET_MAX_LIST_ITEMS) + ")");
  }
  if (n > 0 && items == nullptr) return valet::InvalidArgument(std::string(what) + " is NULL");
  return valet::Status::Ok();
}

// Where each field of a versioned struct ends: the sizes an older caller may
// pass (fields are only ever appended).
#define VALET_END(T, f) (offsetof(T, f) + sizeof(T::f))
constexpr std::array kParamsEnds = {
    VALET_END(valet_params, struct_size),       VALET_END(valet_params, model_path),
    VALET_END(valet_params, n_threads),         VALET_END(valet_params, n_ctx),
    VALET_END(valet_params, max_batch_tokens),  VALET_END(valet_params, kv_capacity_bytes),
    VALET_END(valet_params, snapshot_ram_bytes), VALET_END(valet_params, snapshot_dir),
    VALET_END(valet_params, budget_table_path), VALET_END(valet_params, initial_state),
    VALET_END(valet_params, batch_mode),        VALET_END(valet_params, fill_max_cost_fraction),
    VALET_END(valet_params, budget_table_json), VALET_END(valet_params, model_fd),
    VALET_END(valet_params, model_offset),      VALET_END(valet_params, model_size),
    VALET_END(valet_params, durable_disk_budget_bytes), VALET_END(valet_params, weights_cache),
    VALET_END(valet_params, weights_cache_budget_bytes), sizeof(valet_params)};
constexpr std::array kTaskParamsEnds = {
    VALET_END(valet_task_params, struct_size), VALET_END(valet_task_params, tier),
    VALET_END(valet_task_params, system_prompt), VALET_END(valet_task_params, messages),
    VALET_END(valet_task_params, n_messages),  VALET_END(valet_task_params, prompt),
    VALET_END(valet_task_params, max_tokens),  VALET_END(valet_task_params, temperature),
    VALET_END(valet_task_params, top_k),       VALET_END(valet_task_params, top_p),
    VALET_END(valet_task_params, min_p),       VALET_END(valet_task_params, repeat_penalty),
    VALET_END(valet_task_params, seed),        VALET_END(valet_task_params, stop),
    VALET_END(valet_task_params, n_stop),      VALET_END(valet_task_params, on_token),
    VALET_END(valet_task_params, on_state),    VALET_END(valet_task_params, on_done),
    VALET_END(valet_task_params, user_data),   VALET_END(valet_task_params, prompt_length),
    VALET_END(valet_task_params, message_lengths),
    VALET_END(valet_task_params, durable_key), VALET_END(valet_task_params, on_text),
    VALET_END(valet_task_params, constraint_max_whitespace), sizeof(valet_task_params)};
constexpr std::array kStatsEnds = {
    VALET_END(valet_stats, struct_size), VALET_END(valet_stats, rejected),
    VALET_END(valet_stats, tokens_recomputed), VALET_END(valet_stats, parks_by_kind),
    VALET_END(valet_stats, preemptions), VALET_END(valet_stats, lifecycle),
    VALET_END(valet_stats, thermal),     VALET_END(valet_stats, tiers),
    VALET_END(valet_stats, memory),      VALET_END(valet_stats, weights), VALET_END(valet_stats, scratch_bytes),
    sizeof(valet_stats)};
constexpr std::array kTaskInfoEnds = {VALET_END(valet_task_info, struct_size), VALET_END(valet_task_info, state),
                                      VALET_END(valet_task_info, park_cause), sizeof(valet_task_info)};
constexpr std::array kPowerEnds = {VALET_END(valet_power_state, struct_size),
                                   VALET_END(valet_power_state, battery_low), sizeof(valet_power_state)};
constexpr std::array kBudgetsEnds = {VALET_END(valet_memory_budgets, struct_size),
                                     VALET_END(valet_memory_budgets, pool_bytes),
                                     VALET_END(valet_memory_budgets, snapshot_ram_bytes),
                                     sizeof(valet_memory_budgets)};
#undef VALET_END

template <typename Ends>
valet::Status CheckSize(size_t size, const Ends& ends, const char* name) {
  if (std::find(ends.begin(), ends.end(), size) != ends.end()) return valet::Status::Ok();
  return valet::InvalidArgument(std::string(name) + ".struct_size " + std::to_string(size) +
                                " is not the size of any version of the struct (this library's: " +
                                std::to_string(ends.back()) + ")");
}

// The caller's struct over the defaults: fields past its struct_size keep
// their default values.
template <typename T, typename Ends>
valet::Result<T> ReadVersioned(const T& in, T defaults, const Ends& ends, const char* name) {
  VALET_RETURN_IF_ERROR(CheckSize(in.struct_size, ends, name));
  std::memcpy(static_cast<void*>(&defaults), &in, in.struct_size);
  defaults.struct_size = sizeof(T);
  return defaults;
}

// Writes the fields of `full` that lie within the caller's out->struct_size.
template <typename T, typename Ends>
valet::Status WriteVersioned(T* out, const T& full, const Ends& ends, const char* name) {
  const size_t caller_size = out->struct_size;
  VALET_RETURN_IF_ERROR(CheckSize(caller_size, ends, name));
  std::memcpy(static_cast<void*>(out), &full, caller_size);
  out->struct_size = caller_size;
  return valet::Status::Ok();
}

valet::Result<valet::SchedulerOptions> SchedulerOptionsFrom(const valet_params& p) {
  valet::SchedulerOptions o;
  if (p.budget_table_path != nullptr && p.budget_table_json != nullptr) {
    return valet::InvalidArgument("budget_table_path and budget_table_json are exclusive");
  }
  if (p.budget_table_path != nullptr) {
    VALET_ASSIGN_OR_RETURN(const std::string path, Text(p.budget_table_path, 0, "budget_table_path"));
    VALET_ASSIGN_OR_RETURN(o.budgets, valet::LoadBudgetTable(path));
  }
  if (p.budget_table_json != nullptr) {
    VALET_ASSIGN_OR_RETURN(const std::string json, Text(p.budget_table_json, 0, "budget_table_json"));
    VALET_ASSIGN_OR_RETURN(o.budgets, valet::ParseBudgetTable(json));
  }
  if (p.initial_state < VALET_STATE_DESTROYED || p.initial_state > VALET_STATE_RESUMED) {
    return valet::InvalidArgument("unknown initial lifecycle state");
  }
  o.initial_state = static_cast<valet::LifecycleState>(p.initial_state);
  if (p.batch_mode != VALET_BATCH_STRICT && p.batch_mode != VALET_BATCH_FILL) {
    return valet::InvalidArgument("unknown batch mode");
  }
  o.batch_mode = static_cast<valet::BatchMode>(p.batch_mode);
  o.fill_max_cost_fraction = p.fill_max_cost_fraction;
  return o;
}

// valet_params as the C++ API's RuntimeOptions: strings copied, NULLs for defaults.
valet::Result<valet::RuntimeOptions> RuntimeOptionsFrom(const valet_params& p) {
  valet::RuntimeOptions o;
  VALET_ASSIGN_OR_RETURN(o.scheduler, SchedulerOptionsFrom(p));
  if (p.model_fd < -1) return valet::InvalidArgument("model_fd " + std::to_string(p.model_fd) + " is not a descriptor");
  if (p.model_path == nullptr && p.model_fd == -1) return valet::InvalidArgument("model_path is required (or model_fd)");
  if (p.model_path != nullptr) {
    VALET_ASSIGN_OR_RETURN(o.model_path, Text(p.model_path, 0, "model_path"));
  }
  o.model_fd = p.model_fd;
  o.model_offset = p.model_offset;
  o.model_size = p.model_size;
  o.n_threads = std::max(p.n_threads, 0);
  o.n_ctx = p.n_ctx;
  o.max_batch_tokens = std::max(p.max_batch_tokens, 0);
  o.kv_capacity_bytes = p.kv_capacity_bytes;
  o.snapshot_ram_bytes = p.snapshot_ram_bytes;
  VALET_ASSIGN_OR_RETURN(o.snapshot_dir, Text(p.snapshot_dir, 0, "snapshot_dir"));
  if (p.weights_cache != nullptr) {
    VALET_ASSIGN_OR_RETURN(o.weights_cache, Text(p.weights_cache, 0, "weights_cache"));
  }
  o.weights_cache_budget_bytes = p.weights_cache_budget_bytes;
  o.durable_disk_budget_bytes = p.durable_disk_budget_bytes;
  return o;
}

valet_task_metrics MetricsToC(const valet::TaskMetrics& m) {
  valet_task_metrics c;
  std::memset(&c, 0, sizeof c);
  c.ttft_seconds = m.ttft();
  c.tpot_seconds = m.tpot();
  c.e2e_seconds = m.e2e();
  c.prompt_tokens = m.prompt_tokens;
  c.cached_prompt_tokens = m.cached_prompt_tokens;
  c.generated_tokens = m.generated_tokens;
  c.parks = m.parks;
  for (int k = 0; k < VALET_NUM_PARK_KINDS; ++k) c.parks_by_kind[k] = m.parks_by_kind[static_cast<size_t>(k)];
  c.tokens_recomputed = m.tokens_recomputed;
  c.park_bytes = m.park_bytes;
  return c;
}

// Points into `r` and `calls`: valid while they are.
valet_task_result ResultToC(const valet::TaskResult& r, std::vector<valet_tool_call>* calls) {
  valet_task_result c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.state = static_cast<valet_task_state>(r.state);
  c.status = ToC(r.status.code());
  c.message = r.status.message().c_str();
  c.text = r.text.c_str();
  c.text_len = r.text.size();
  c.n_tokens = static_cast<int32_t>(r.tokens.size());
  c.metrics = MetricsToC(r.metrics);
  c.durable_key = r.durable_key.c_str();
  for (const valet::ToolCall& call : r.tool_calls) {
    calls->push_back({call.id.c_str(), call.name.c_str(), call.arguments.c_str()});
  }
  c.tool_calls = calls->data();
  c.n_tool_calls = calls->size();
  c.content = r.content.c_str();
  c.content_len = r.content.size();
  return c;
}

valet::TaskCallbacks CallbacksFrom(const valet_task_params& p) {
  valet::TaskCallbacks cb;
  void* user = p.user_data;
  if (p.on_token != nullptr || p.on_text != nullptr) {
    cb.on_token = [on_token = p.on_token, on_text = p.on_text, user](valet::TaskId id, int32_t token,
                                                                      std::string_view text) {
      const std::string z(text);
      if (on_text != nullptr) on_text(user, id, token, z.c_str(), z.size());
      if (on_token != nullptr) on_token(user, id, token, z.c_str());
    };
  }
  if (p.on_state != nullptr) {
    cb.on_state = [fn = p.on_state, user](valet::TaskId id, valet::TaskState s) {
      fn(user, id, static_cast<valet_task_state>(s));
    };
  }
  if (p.on_done != nullptr) {
    cb.on_done = [fn = p.on_done, user](valet::TaskId id, const valet::TaskResult& r) {
      std::vector<valet_tool_call> calls;
      const valet_task_result result = ResultToC(r, &calls);
      fn(user, id, &result);
    };
  }
  return cb;
}

valet::Status ReadMessageTools(const valet_message_tools& in, valet::ChatMessage* m) {
  VALET_RETURN_IF_ERROR(CheckList(in.tool_calls, in.n_tool_calls, "a message's tool_calls"));
  for (size_t i = 0; i < in.n_tool_calls; ++i) {
    valet::ToolCall call;
    VALET_ASSIGN_OR_RETURN(call.id, Text(in.tool_calls[i].id, 0, "a tool call's id"));
    VALET_ASSIGN_OR_RETURN(call.name, Text(in.tool_calls[i].name, 0, "a tool call's name"));
    VALET_ASSIGN_OR_RETURN(call.arguments, Text(in.tool_calls[i].arguments, 0, "a tool call's arguments"));
    m->tool_calls.push_back(std::move(call));
  }
  VALET_ASSIGN_OR_RETURN(m->tool_call_id, Text(in.tool_call_id, 0, "a message's tool_call_id"));
  return valet::Status::Ok();
}

valet::Status ReadTools(const valet_task_params& p, valet::TaskRequest* r) {
  VALET_RETURN_IF_ERROR(CheckList(p.tools, p.n_tools, "tools"));
  for (size_t i = 0; i < p.n_tools; ++i) {
    valet::ToolDefinition t;
    VALET_ASSIGN_OR_RETURN(t.name, Text(p.tools[i].name, 0, "a tool's name"));
    VALET_ASSIGN_OR_RETURN(t.description, Text(p.tools[i].description, 0, "a tool's description"));
    VALET_ASSIGN_OR_RETURN(t.parameters, Text(p.tools[i].parameters, 0, "a tool's parameters"));
    r->tools.push_back(std::move(t));
  }
  if (p.tool_choice < VALET_TOOL_CHOICE_AUTO || p.tool_choice > VALET_TOOL_CHOICE_NAMED) {
    return valet::InvalidArgument("tool_choice " + std::to_string(p.tool_choice) + " is not a valet_tool_choice");
  }
  r->tool_choice.kind = static_cast<valet::ToolChoice::Kind>(p.tool_choice);
  VALET_ASSIGN_OR_RETURN(r->tool_choice.name, Text(p.tool_choice_name, 0, "tool_choice_name"));
  r->tool_choice.parallel = p.parallel_tool_calls != 0;
  return valet::Status::Ok();
}

valet::Result<valet::TaskRequest> RequestFrom(const valet_task_params& p) {
  valet::TaskRequest r;
  VALET_ASSIGN_OR_RETURN(r.tier, valet::TierFromInt(p.tier));
  VALET_ASSIGN_OR_RETURN(r.system_prompt, Text(p.system_prompt, 0, "system_prompt"));
  VALET_RETURN_IF_ERROR(CheckList(p.messages, p.n_messages, "messages"));
  for (size_t i = 0; i < p.n_messages; ++i) {
    valet::ChatMessage m;
    VALET_ASSIGN_OR_RETURN(m.role, Text(p.messages[i].role, 0, "a message's role"));
    const size_t length = p.message_lengths == nullptr ? 0 : p.message_lengths[i];
    VALET_ASSIGN_OR_RETURN(m.content, Text(p.messages[i].content, length, "a message's content"));
    if (p.message_tools != nullptr) VALET_RETURN_IF_ERROR(ReadMessageTools(p.message_tools[i], &m));
    r.messages.push_back(std::move(m));
  }
  VALET_RETURN_IF_ERROR(ReadTools(p, &r));
  VALET_ASSIGN_OR_RETURN(r.prompt, Text(p.prompt, p.prompt_length, "prompt"));
  r.max_tokens = p.max_tokens;
  r.sampling.temperature = p.temperature;
  r.sampling.top_k = p.top_k;
  r.sampling.top_p = p.top_p;
  r.sampling.min_p = p.min_p;
  r.sampling.repeat_penalty = p.repeat_penalty;
  r.sampling.seed = p.seed;
  VALET_RETURN_IF_ERROR(CheckList(p.stop, p.n_stop, "stop"));
  for (size_t i = 0; i < p.n_stop; ++i) {
    VALET_ASSIGN_OR_RETURN(std::string stop, Text(p.stop[i], 0, "a stop string"));
    r.stop.push_back(std::move(stop));
  }
  r.durable = p.durable != 0;
  if (p.durable_key != nullptr) {
    VALET_ASSIGN_OR_RETURN(r.durable_key, Text(p.durable_key, 0, "durable_key"));
  }
  if (p.constraint_kind < VALET_CONSTRAINT_NONE || p.constraint_kind > VALET_CONSTRAINT_TOOL_CALL) {
    return valet::InvalidArgument("constraint_kind " + std::to_string(p.constraint_kind) + " is not a valet_constraint_kind");
  }
  r.constraint.kind = static_cast<valet::ConstraintKind>(p.constraint_kind);
  VALET_ASSIGN_OR_RETURN(r.constraint.text, Text(p.constraint_text, 0, "constraint_text"));
  r.constraint.max_whitespace = p.constraint_max_whitespace;
  r.callbacks = CallbacksFrom(p);
  return r;
}

// Points into `t`: valid while `t` is.
valet_recovered_task RecoveredToC(const valet::RecoveredTask& t) {
  valet_recovered_task c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.durable_key = t.durable_key.c_str();
  c.tier = static_cast<int32_t>(t.tier);
  c.tokens = t.tokens.data();
  c.n_tokens = static_cast<int32_t>(t.tokens.size());
  c.id = t.id;
  c.state = static_cast<valet_task_state>(t.state);
  c.message = t.error.c_str();
  return c;
}

valet_stats StatsToC(const valet::SchedulerStats& s, valet::LifecycleState lifecycle) {
  valet_stats c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.submitted = s.submitted;
  c.done = s.done;
  c.cancelled = s.cancelled;
  c.failed = s.failed;
  c.rejected = s.rejected;
  c.steps = s.steps;
  c.prefill_tokens = s.prefill_tokens;
  c.decode_tokens = s.decode_tokens;
  c.tokens_recomputed = s.tokens_recomputed;
  for (int k = 0; k < VALET_NUM_PARK_KINDS; ++k) c.parks_by_kind[k] = s.parks_by_kind[static_cast<size_t>(k)];
  c.preemptions = s.preemptions;
  c.lifecycle = static_cast<valet_lifecycle_state>(lifecycle);
  c.thermal = static_cast<valet_thermal_status>(s.thermal);
  for (size_t t = 0; t < VALET_NUM_TIERS; ++t) {
    const valet::TierTaskCounts& n = s.tasks_by_tier[t];
    c.tiers[t] = {n.active, n.parked, n.done, n.cancelled, n.failed, s.generated_by_tier[t], s.prefill_by_tier[t],
                  s.busy_seconds_by_tier[t]};
  }
  c.memory = {s.memory.pool_used_bytes, s.memory.pool_capacity_bytes, s.memory.snapshot_ram_bytes,
              s.memory.snapshot_disk_bytes};
  c.scratch_bytes = s.memory.scratch_bytes;
  return c;
}

valet_memory_budgets CurrentBudgets(const valet_scheduler& scheduler) {
  const valet::MemoryBudgets now = scheduler.scheduler->memory_budgets();
  valet_memory_budgets b = valet_default_memory_budgets();
  b.pool_bytes = now.pool_bytes;
  b.snapshot_ram_bytes = now.snapshot_ram_bytes;
  return b;
}

}  // namespace

namespace valet::capi {

Result<valet_params> ReadParams(const valet_params& caller_params) {
  return ReadVersioned(caller_params, valet_default_params(), kParamsEnds, "valet_params");
}

Result<std::unique_ptr<valet_scheduler>> CreateScheduler(const valet_params& params, const LoadProgress& progress,
                                                         const LoadCancel& cancel) {
  VALET_ASSIGN_OR_RETURN(RuntimeOptions options, RuntimeOptionsFrom(params));
  auto handle = std::make_unique<valet_scheduler>();
  VALET_ASSIGN_OR_RETURN(handle->runtime, Runtime::Create(std::move(options), progress, cancel));
  handle->scheduler = &handle->runtime->scheduler();
  return handle;
}

}  // namespace valet::capi

extern "C" {

valet_params valet_default_params(void) {
  valet_params p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  const valet::EngineOptions e;
  p.max_batch_tokens = e.max_batch_tokens;
  p.kv_capacity_bytes = e.kv_capacity_bytes;
  p.snapshot_ram_bytes = valet::SnapshotStoreOptions{}.ram_budget_bytes;
  const valet::SchedulerOptions s;
  p.initial_state = static_cast<valet_lifecycle_state>(s.initial_state);
  p.batch_mode = static_cast<valet_batch_mode>(s.batch_mode);
  p.fill_max_cost_fraction = s.fill_max_cost_fraction;
  p.model_fd = -1;
  return p;
}

valet_task_params valet_default_task_params(void) {
  valet_task_params p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  const valet::TaskRequest r;
  p.tier = static_cast<int32_t>(r.tier);
  p.max_tokens = r.max_tokens;
  p.temperature = r.sampling.temperature;
  p.top_k = r.sampling.top_k;
  p.top_p = r.sampling.top_p;
  p.min_p = r.sampling.min_p;
  p.repeat_penalty = r.sampling.repeat_penalty;
  p.seed = r.sampling.seed;
  return p;
}

valet_stats valet_default_stats(void) {
  valet_stats s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  return s;
}

valet_task_info valet_default_task_info(void) {
  valet_task_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  return i;
}

valet_memory_budgets valet_default_memory_budgets(void) {
  valet_memory_budgets b;
  std::memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  return b;
}

valet_status valet_create(const valet_params* caller_params, valet_scheduler** out) {
  return Guard([&]() -> valet_status {
    if (caller_params == nullptr || out == nullptr) return Fail(VALET_INVALID_ARGUMENT, "params and out are required");
    *out = nullptr;
    valet::Result<valet_params> params = valet::capi::ReadParams(*caller_params);
    if (!params.ok()) return Report(params.status());
    valet::Result<std::unique_ptr<valet_scheduler>> handle = valet::capi::CreateScheduler(*params, {}, {});
    if (!handle.ok()) return Report(handle.status());
    *out = handle->release();
    return Report(valet::Status::Ok());
  });
}

valet_status valet_weights_cache_remove(const char* path) {
  return Guard([&]() -> valet_status {
    valet::Result<std::string> p = Text(path, 0, "path");
    if (!p.ok()) return Report(p.status());
    if (p->empty()) return Fail(VALET_INVALID_ARGUMENT, "path is empty");
    return Report(valet::RemoveWeightsCaches(*p));
  });
}

valet_status valet_stop(valet_scheduler* scheduler) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    return Report(scheduler->scheduler->Stop());
  });
}

void valet_destroy(valet_scheduler* scheduler) {
  try {
    if (scheduler == nullptr) return;
    // Stopped first, so the on_done callbacks it brings find the handle whole.
    (void)scheduler->scheduler->Stop("scheduler destroyed");
    if (scheduler->scheduler->OnCallbackThread()) {
      // This callback's own thread cannot wait for itself: the engine is done
      // with now, and another thread frees the rest once every callback has
      // returned (the Scheduler's destructor waits for them).
      std::thread([scheduler] { delete scheduler; }).detach();
      return;
    }
    delete scheduler;
  } catch (...) {
    // Nothing sensible remains to do; never unwind into C.
  }
}

valet_status valet_submit(valet_scheduler* scheduler, const valet_task_params* params, valet_task_id* out_id) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (params == nullptr || out_id == nullptr) return Fail(VALET_INVALID_ARGUMENT, "params and out_id are required");
    valet::Result<valet_task_params> read =
        ReadVersioned(*params, valet_default_task_params(), kTaskParamsEnds, "valet_task_params");
    if (!read.ok()) return Report(read.status());
    valet::Result<valet::TaskRequest> request = RequestFrom(*read);
    if (!request.ok()) return Report(request.status());
    valet::Result<valet::TaskId> id = scheduler->scheduler->Submit(std::move(request).value());
    if (!id.ok()) return Report(id.status());
    *out_id = *id;
    return Report(valet::Status::Ok());
  });
}

valet_status valet_cancel(valet_scheduler* scheduler, valet_task_id id) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    return Report(scheduler->scheduler->Cancel(id));
  });
}

valet_status valet_recover(valet_scheduler* scheduler, valet_recover_fn fn, void* user_data) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (fn == nullptr) return Fail(VALET_INVALID_ARGUMENT, "fn is required");
    valet::Result<valet::RecoveryReport> report =
        scheduler->scheduler->Recover([fn, user_data](const valet::RecoveredTask& t) {
          valet_task_params callbacks = valet_default_task_params();
          const valet_recovered_task task = RecoveredToC(t);
          fn(user_data, &task, &callbacks);
          return CallbacksFrom(callbacks);
        });
    if (!report.ok()) return Report(report.status());
    for (const valet::RecoveredTask& t : report->tasks) {
      if (t.id != 0) continue;  // resumed: reported as its callbacks were made
      const valet_recovered_task task = RecoveredToC(t);
      fn(user_data, &task, nullptr);
    }
    return Report(valet::Status::Ok());
  });
}

valet_status valet_task_ack(valet_scheduler* scheduler, const char* durable_key) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    valet::Result<std::string> key = Text(durable_key, 0, "durable_key");
    if (!key.ok()) return Report(key.status());
    return Report(scheduler->scheduler->Ack(*key));
  });
}

valet_status valet_retry_journals(valet_scheduler* scheduler) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    return Report(scheduler->scheduler->RetryJournals());
  });
}

valet_status valet_send_lifecycle_event(valet_scheduler* scheduler, valet_lifecycle_event event) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    return Report(scheduler->scheduler->OnLifecycleEvent(static_cast<valet::LifecycleEvent>(event)));
  });
}

valet_status valet_on_thermal_status(valet_scheduler* scheduler, int32_t status, float headroom) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    valet::Result<valet::ThermalStatus> checked = valet::ThermalStatusFromInt(status);
    if (!checked.ok()) return Report(checked.status());
    return Report(scheduler->scheduler->OnThermalStatus(*checked, headroom));
  });
}

valet_power_state valet_default_power_state(void) {
  const valet::PowerState d;
  valet_power_state p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.charging = d.charging ? 1 : 0;
  p.battery_percent = d.battery_percent;
  p.power_save = d.power_save ? 1 : 0;
  p.battery_low = d.battery_low ? 1 : 0;
  return p;
}

valet_status valet_on_power_state(valet_scheduler* scheduler, const valet_power_state* power) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (power == nullptr) return Fail(VALET_INVALID_ARGUMENT, "power is required");
    valet::Result<valet_power_state> p =
        ReadVersioned(*power, valet_default_power_state(), kPowerEnds, "valet_power_state");
    if (!p.ok()) return Report(p.status());
    valet::PowerState state;
    state.charging = p->charging != 0;
    state.battery_percent = p->battery_percent;
    state.power_save = p->power_save != 0;
    state.battery_low = p->battery_low != 0;
    return Report(scheduler->scheduler->OnPowerState(state));
  });
}

valet_status valet_on_trim_memory(valet_scheduler* scheduler, int32_t level) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    return Report(scheduler->scheduler->OnTrimMemory(level));
  });
}

valet_status valet_set_memory_budgets(valet_scheduler* scheduler, const valet_memory_budgets* budgets) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (budgets == nullptr) return Fail(VALET_INVALID_ARGUMENT, "budgets is required");
    // Fields an older caller does not know keep their current values.
    valet::Result<valet_memory_budgets> read =
        ReadVersioned(*budgets, CurrentBudgets(*scheduler), kBudgetsEnds, "valet_memory_budgets");
    if (!read.ok()) return Report(read.status());
    valet::MemoryBudgets b;
    b.pool_bytes = static_cast<size_t>(read->pool_bytes);
    b.snapshot_ram_bytes = static_cast<size_t>(read->snapshot_ram_bytes);
    return Report(scheduler->scheduler->SetMemoryBudgets(b));
  });
}

valet_status valet_get_memory_budgets(const valet_scheduler* scheduler, valet_memory_budgets* out) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (out == nullptr) return Fail(VALET_INVALID_ARGUMENT, "out is required");
    return Report(WriteVersioned(out, CurrentBudgets(*scheduler), kBudgetsEnds, "valet_memory_budgets"));
  });
}

valet_status valet_wait_idle(valet_scheduler* scheduler) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (valet_status here = RefuseFromCallback(*scheduler, "valet_wait_idle"); here != VALET_OK) return here;
    scheduler->scheduler->WaitIdle();
    return Report(valet::Status::Ok());
  });
}

valet_status valet_tokenize(const valet_scheduler* scheduler, const char* text, size_t text_len, int32_t* tokens,
                            int32_t n_tokens_max, int32_t* n_tokens) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (n_tokens == nullptr) return Fail(VALET_INVALID_ARGUMENT, "n_tokens is required");
    if (n_tokens_max < 0 || (tokens == nullptr && n_tokens_max > 0)) {
      return Fail(VALET_INVALID_ARGUMENT, "tokens must hold n_tokens_max >= 0 ids");
    }
    if (text == nullptr && text_len > 0) return Fail(VALET_INVALID_ARGUMENT, "text is NULL but text_len is not 0");
    if (text_len > VALET_MAX_TEXT_BYTES) {
      return Report(valet::InvalidArgument("text_len " + std::to_string(text_len) +
                                           " is more than VALET_MAX_TEXT_BYTES (" +
                                           std::to_string(VALET_MAX_TEXT_BYTES) + ")"));
    }
    // The tokenizer is immutable, so this needs nothing from the inference thread.
    const std::vector<int32_t> ids =
        scheduler->runtime->engine().Tokenize(std::string_view(text == nullptr ? "" : text, text_len), /*add_bos=*/true);
    *n_tokens = static_cast<int32_t>(ids.size());  // at most text_len + 2: fits
    if (ids.size() > static_cast<size_t>(n_tokens_max)) {
      return Report(valet::OutOfRange("the text has " + std::to_string(ids.size()) + " tokens; tokens holds " +
                                      std::to_string(n_tokens_max)));
    }
    std::copy(ids.begin(), ids.end(), tokens);
    return Report(valet::Status::Ok());
  });
}

valet_status valet_get_stats(const valet_scheduler* scheduler, valet_stats* out) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (out == nullptr) return Fail(VALET_INVALID_ARGUMENT, "out is required");
    valet_stats full = StatsToC(scheduler->scheduler->Stats(), scheduler->scheduler->lifecycle_state());
    const valet::WeightsStats weights = scheduler->runtime->weights();
    full.weights.file_backed_bytes = weights.file_backed_bytes;
    full.weights.anonymous_bytes = weights.anonymous_bytes;
    full.weights.matrices_mapped = weights.matrices_mapped;
    full.weights.matrices_packed = weights.matrices_packed;
    return Report(WriteVersioned(out, full, kStatsEnds, "valet_stats"));
  });
}

valet_status valet_get_task_info(const valet_scheduler* scheduler, valet_task_id id, valet_task_info* out) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (out == nullptr) return Fail(VALET_INVALID_ARGUMENT, "out is required");
    const valet::Result<valet::TaskInfo> info = scheduler->scheduler->Info(id);
    if (!info.ok()) return Report(info.status());
    valet_task_info full = valet_default_task_info();
    full.state = static_cast<valet_task_state>(info->state);
    full.park_cause = static_cast<valet_park_cause>(info->park_cause);
    return Report(WriteVersioned(out, full, kTaskInfoEnds, "valet_task_info"));
  });
}

valet_status valet_chrome_trace(const valet_scheduler* scheduler, char** out_json) {
  return Guard([&]() -> valet_status {
    if (valet_status live = CheckHandle(scheduler); live != VALET_OK) return live;
    if (out_json == nullptr) return Fail(VALET_INVALID_ARGUMENT, "out_json is required");
    const std::string json = scheduler->scheduler->ChromeTraceJson();
    char* copy = static_cast<char*>(std::malloc(json.size() + 1));
    if (copy == nullptr) return Fail(VALET_RESOURCE_EXHAUSTED, "out of memory");
    std::memcpy(copy, json.c_str(), json.size() + 1);
    *out_json = copy;
    return Report(valet::Status::Ok());
  });
}

void valet_free_string(char* s) { std::free(s); }

const char* valet_status_name(valet_status status) {
  switch (status) {
    case VALET_OK: return "OK";
    case VALET_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case VALET_NOT_FOUND: return "NOT_FOUND";
    case VALET_CORRUPT: return "CORRUPT";
    case VALET_UNSUPPORTED: return "UNSUPPORTED";
    case VALET_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case VALET_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case VALET_IO: return "IO";
    case VALET_INTERNAL: return "INTERNAL";
    case VALET_ABORTED: return "ABORTED";
  }
  return "UNKNOWN_STATUS";
}

const char* valet_last_error(void) { return valet::capi::g_last_error.c_str(); }

}  // extern "C"
