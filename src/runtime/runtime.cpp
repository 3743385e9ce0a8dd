// valet::Runtime (valet/runtime.h): the engine opened from RuntimeOptions and
// the scheduler over it, on the caller's thread or one of its own.
#include "valet/runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <exception>
#include <thread>
#include <utility>

#include "engine/real_engine.h"

namespace valet {
namespace {

Result<RealEngineOptions> EngineOptionsFrom(const RuntimeOptions& o) {
  RealEngineOptions eo;
  if (o.model_fd < -1) return InvalidArgument("model_fd " + std::to_string(o.model_fd) + " is not a descriptor");
  if (o.model_fd == -1 && o.model_path.empty()) return InvalidArgument("model_path is required (or model_fd)");
  if (o.model_fd == -1 && (o.model_offset != 0 || o.model_size != 0)) {
    return InvalidArgument("model_offset and model_size apply to model_fd only");
  }
  if (o.n_threads < 0 || o.n_ctx < 0 || o.max_batch_tokens < 0) {
    return InvalidArgument("n_threads, n_ctx and max_batch_tokens must not be negative");
  }
  eo.engine.model_path = o.model_path;
  if (o.model_fd >= 0) {
    eo.engine.model_range = {o.model_fd, o.model_offset, o.model_size};
    if (o.model_path.empty()) {
      eo.engine.model_path = "model_fd " + std::to_string(o.model_fd) + " at offset " + std::to_string(o.model_offset);
    }
  }
  if (o.n_threads > 0) eo.engine.n_threads = o.n_threads;
  eo.engine.n_ctx = o.n_ctx;
  if (o.max_batch_tokens > 0) eo.engine.max_batch_tokens = o.max_batch_tokens;
  if (o.kv_capacity_bytes > 0) eo.engine.kv_capacity_bytes = o.kv_capacity_bytes;
  if (o.snapshot_ram_bytes > 0) eo.store.ram_budget_bytes = o.snapshot_ram_bytes;
  eo.store.disk_dir = o.snapshot_dir;
  if (o.weights_cache.has_value()) {
    eo.engine.weights_cache.path = *o.weights_cache;
  } else if (!o.snapshot_dir.empty()) {
    eo.engine.weights_cache.path = o.snapshot_dir + "/weights/";
  }
  if (o.weights_cache_budget_bytes > 0) eo.engine.weights_cache.budget_bytes = o.weights_cache_budget_bytes;
  return eo;
}

}  // namespace

Runtime::Runtime() = default;

Runtime::~Runtime() = default;

Result<std::unique_ptr<Runtime>> Runtime::Create(RuntimeOptions options, const LoadProgress& progress,
                                                 const LoadCancel& cancel) {
  VALET_ASSIGN_OR_RETURN(RealEngineOptions eo, EngineOptionsFrom(options));
  eo.engine.load_observer.progress = progress;
  eo.engine.load_observer.cancel = cancel.flag();
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<RealEngine> engine, RealEngine::Open(eo));
  if (cancel.cancelled()) return Aborted("the load of " + eo.engine.model_path + " was cancelled");
  SchedulerOptions& so = options.scheduler;
  if (!options.snapshot_dir.empty()) {
    so.durable_dir = options.snapshot_dir + "/tasks";
    so.model_fingerprint = engine->engine().fingerprint();
    if (options.durable_disk_budget_bytes > 0) so.durable_disk_budget_bytes = options.durable_disk_budget_bytes;
  }
  std::unique_ptr<Runtime> runtime(new Runtime());
  runtime->engine_ = std::move(engine);
  VALET_ASSIGN_OR_RETURN(runtime->scheduler_, Scheduler::Create(*runtime->engine_, std::move(so)));
  return runtime;
}

std::future<Result<std::unique_ptr<Runtime>>> Runtime::CreateAsync(RuntimeOptions options, LoadProgress progress,
                                                                   LoadCancel cancel) {
  std::promise<Result<std::unique_ptr<Runtime>>> promise;
  std::future<Result<std::unique_ptr<Runtime>>> future = promise.get_future();
  // The caller may close its descriptor once this returns: the load reads a
  // duplicate of its own.
  if (options.model_fd >= 0) {
    const int own = ::fcntl(options.model_fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) {
      promise.set_value(InvalidArgument("model_fd " + std::to_string(options.model_fd) + " is not an open descriptor"));
      return future;
    }
    options.model_fd = own;
  }
  std::thread([promise = std::move(promise), options = std::move(options), progress = std::move(progress),
               cancel = std::move(cancel)]() mutable {
    const int own_fd = options.model_fd;
    Result<std::unique_ptr<Runtime>> result = Internal("not run");
    try {
      result = Runtime::Create(std::move(options), progress, cancel);
    } catch (const std::exception& e) {
      result = Internal(std::string("the load threw: ") + e.what());
    }
    if (own_fd >= 0) ::close(own_fd);
    promise.set_value(std::move(result));
  }).detach();
  return future;
}

const EngineInterface& Runtime::engine() const { return *engine_; }

WeightsStats Runtime::weights() const {
  const LlamaModel& model = engine_->engine().model();
  return {model.weight_memory().file_backed, model.weight_memory().anonymous, model.load_report().matrices_mapped,
          model.load_report().matrices_packed};
}

}  // namespace valet
