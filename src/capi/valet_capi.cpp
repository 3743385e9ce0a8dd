// The C API over Scheduler + RealEngine. Every entry point catches all
// exceptions (allocation failure is the only one expected) so none crosses
// into C, and reports errors as valet_status plus a thread-local message.
#include "valet/valet.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "engine/real_engine.h"
#include "valet/scheduler.h"

struct valet_scheduler {
  std::unique_ptr<valet::RealEngine> engine;
  std::unique_ptr<valet::Scheduler> scheduler;  // declared last: stops before the engine goes
};

namespace {

thread_local std::string g_last_error;

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
    case valet::StatusCode::kAborted: return VALET_INTERNAL;  // steps abort inside the scheduler only
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

// Runs `body`, turning any exception into VALET_INTERNAL.
template <typename F>
valet_status Guard(F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Fail(VALET_INTERNAL, e.what());
  } catch (...) {
    return Fail(VALET_INTERNAL, "unknown exception");
  }
}

std::string Str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

valet::Result<valet::SchedulerOptions> SchedulerOptionsFrom(const valet_params& p) {
  valet::SchedulerOptions o;
  if (p.budget_table_path != nullptr) {
    VALET_ASSIGN_OR_RETURN(o.budgets, valet::LoadBudgetTable(p.budget_table_path));
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

valet::TaskCallbacks CallbacksFrom(const valet_task_params& p) {
  valet::TaskCallbacks cb;
  void* user = p.user_data;
  if (p.on_token != nullptr) {
    cb.on_token = [fn = p.on_token, user](valet::TaskId id, int32_t token, std::string_view text) {
      const std::string z(text);
      fn(user, id, token, z.c_str());
    };
  }
  if (p.on_state != nullptr) {
    cb.on_state = [fn = p.on_state, user](valet::TaskId id, valet::TaskState s) {
      fn(user, id, static_cast<valet_task_state>(s));
    };
  }
  if (p.on_done != nullptr) {
    cb.on_done = [fn = p.on_done, user](valet::TaskId id, const valet::TaskResult& r) {
      fn(user, id, static_cast<valet_task_state>(r.state), ToC(r.status.code()), r.text.c_str(),
         static_cast<int32_t>(r.tokens.size()));
    };
  }
  return cb;
}

valet::Result<valet::TaskRequest> RequestFrom(const valet_task_params& p) {
  valet::TaskRequest r;
  VALET_ASSIGN_OR_RETURN(r.tier, valet::TierFromInt(p.tier));
  r.system_prompt = Str(p.system_prompt);
  if (p.n_messages > 0 && p.messages == nullptr) return valet::InvalidArgument("messages is NULL");
  for (size_t i = 0; i < p.n_messages; ++i) {
    r.messages.push_back({Str(p.messages[i].role), Str(p.messages[i].content)});
  }
  r.prompt = Str(p.prompt);
  r.max_tokens = p.max_tokens;
  r.sampling.temperature = p.temperature;
  r.sampling.top_k = p.top_k;
  r.sampling.top_p = p.top_p;
  r.sampling.min_p = p.min_p;
  r.sampling.repeat_penalty = p.repeat_penalty;
  r.sampling.seed = p.seed;
  if (p.n_stop > 0 && p.stop == nullptr) return valet::InvalidArgument("stop is NULL");
  for (size_t i = 0; i < p.n_stop; ++i) r.stop.push_back(Str(p.stop[i]));
  r.callbacks = CallbacksFrom(p);
  return r;
}

}  // namespace

extern "C" {

valet_params valet_default_params(void) {
  valet_params p;
  std::memset(&p, 0, sizeof p);
  const valet::EngineOptions e;
  p.max_batch_tokens = e.max_batch_tokens;
  p.kv_capacity_bytes = e.kv_capacity_bytes;
  p.snapshot_ram_bytes = valet::SnapshotStoreOptions{}.ram_budget_bytes;
  const valet::SchedulerOptions s;
  p.initial_state = static_cast<valet_lifecycle_state>(s.initial_state);
  p.batch_mode = static_cast<valet_batch_mode>(s.batch_mode);
  p.fill_max_cost_fraction = s.fill_max_cost_fraction;
  return p;
}

valet_task_params valet_default_task_params(void) {
  valet_task_params p;
  std::memset(&p, 0, sizeof p);
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

valet_status valet_create(const valet_params* params, valet_scheduler** out) {
  return Guard([&]() -> valet_status {
    if (params == nullptr || out == nullptr) return Fail(VALET_INVALID_ARGUMENT, "params and out are required");
    *out = nullptr;
    if (params->model_path == nullptr) return Fail(VALET_INVALID_ARGUMENT, "model_path is required");
    valet::Result<valet::SchedulerOptions> options = SchedulerOptionsFrom(*params);
    if (!options.ok()) return Report(options.status());
    valet::RealEngineOptions eo;
    eo.engine.model_path = params->model_path;
    if (params->n_threads > 0) eo.engine.n_threads = params->n_threads;
    eo.engine.n_ctx = params->n_ctx;
    if (params->max_batch_tokens > 0) eo.engine.max_batch_tokens = params->max_batch_tokens;
    if (params->kv_capacity_bytes > 0) eo.engine.kv_capacity_bytes = params->kv_capacity_bytes;
    if (params->snapshot_ram_bytes > 0) eo.store.ram_budget_bytes = params->snapshot_ram_bytes;
    eo.store.disk_dir = Str(params->snapshot_dir);
    valet::Result<std::unique_ptr<valet::RealEngine>> engine = valet::RealEngine::Open(eo);
    if (!engine.ok()) return Report(engine.status());
    auto handle = std::make_unique<valet_scheduler>();
    handle->engine = std::move(engine).value();
    valet::Result<std::unique_ptr<valet::Scheduler>> scheduler =
        valet::Scheduler::Create(*handle->engine, std::move(options).value());
    if (!scheduler.ok()) return Report(scheduler.status());
    handle->scheduler = std::move(scheduler).value();
    *out = handle.release();
    return Report(valet::Status::Ok());
  });
}

void valet_destroy(valet_scheduler* scheduler) {
  try {
    if (scheduler == nullptr) return;
    scheduler->scheduler.reset();  // joins the inference thread first
    delete scheduler;
  } catch (...) {
    // Nothing sensible remains to do; never unwind into C.
  }
}

valet_status valet_submit(valet_scheduler* scheduler, const valet_task_params* params, valet_task_id* out_id) {
  return Guard([&]() -> valet_status {
    if (scheduler == nullptr || params == nullptr || out_id == nullptr) {
      return Fail(VALET_INVALID_ARGUMENT, "scheduler, params and out_id are required");
    }
    valet::Result<valet::TaskRequest> request = RequestFrom(*params);
    if (!request.ok()) return Report(request.status());
    valet::Result<valet::TaskId> id = scheduler->scheduler->Submit(std::move(request).value());
    if (!id.ok()) return Report(id.status());
    *out_id = *id;
    return Report(valet::Status::Ok());
  });
}

valet_status valet_cancel(valet_scheduler* scheduler, valet_task_id id) {
  return Guard([&]() -> valet_status {
    if (scheduler == nullptr) return Fail(VALET_INVALID_ARGUMENT, "scheduler is required");
    return Report(scheduler->scheduler->Cancel(id));
  });
}

valet_status valet_send_lifecycle_event(valet_scheduler* scheduler, valet_lifecycle_event event) {
  return Guard([&]() -> valet_status {
    if (scheduler == nullptr) return Fail(VALET_INVALID_ARGUMENT, "scheduler is required");
    return Report(scheduler->scheduler->OnLifecycleEvent(static_cast<valet::LifecycleEvent>(event)));
  });
}

valet_status valet_wait_idle(valet_scheduler* scheduler) {
  return Guard([&]() -> valet_status {
    if (scheduler == nullptr) return Fail(VALET_INVALID_ARGUMENT, "scheduler is required");
    scheduler->scheduler->WaitIdle();
    return Report(valet::Status::Ok());
  });
}

valet_status valet_get_stats(const valet_scheduler* scheduler, valet_stats* out) {
  return Guard([&]() -> valet_status {
    if (scheduler == nullptr || out == nullptr) return Fail(VALET_INVALID_ARGUMENT, "scheduler and out are required");
    const valet::SchedulerStats s = scheduler->scheduler->Stats();
    std::memset(out, 0, sizeof *out);
    out->submitted = s.submitted;
    out->done = s.done;
    out->cancelled = s.cancelled;
    out->failed = s.failed;
    out->rejected = s.rejected;
    out->steps = s.steps;
    out->prefill_tokens = s.prefill_tokens;
    out->decode_tokens = s.decode_tokens;
    out->tokens_recomputed = s.tokens_recomputed;
    for (int k = 0; k < 5; ++k) out->parks_by_kind[k] = s.parks_by_kind[static_cast<size_t>(k)];
    out->preemptions = s.preemptions;
    out->lifecycle = static_cast<valet_lifecycle_state>(scheduler->scheduler->lifecycle_state());
    return Report(valet::Status::Ok());
  });
}

valet_status valet_chrome_trace(const valet_scheduler* scheduler, char** out_json) {
  return Guard([&]() -> valet_status {
    if (scheduler == nullptr || out_json == nullptr) return Fail(VALET_INVALID_ARGUMENT, "scheduler and out are required");
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
  }
  return "UNKNOWN_STATUS";
}

const char* valet_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
