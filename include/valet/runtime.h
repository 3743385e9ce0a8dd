// A model loaded into valet's engine with its scheduler over it: what an app
// creates once (C: valet_create / valet_create_async, Java: Valet.create /
// createAsync), from the C++ API.
//
//   valet::RuntimeOptions o;
//   o.model_path = "model.gguf";
//   o.snapshot_dir = dir;  // parked KV on disk, durable tasks, the weights cache
//   std::future<valet::Result<std::unique_ptr<valet::Runtime>>> loading =
//       valet::Runtime::CreateAsync(std::move(o), progress, cancel);  // cancel.Cancel() stops it
//   ... later: auto runtime = loading.get(); runtime.value()->scheduler().Submit(...)
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "valet/export.h"
#include "valet/load.h"
#include "valet/scheduler.h"
#include "valet/status.h"

namespace valet {

struct RuntimeOptions {
  // The GGUF model: a path, or a range of an open file (an APK's uncompressed
  // asset: the APK's descriptor, the asset's offset and length; size 0: to
  // the end). With model_fd, model_path only names it in messages. The
  // descriptor is read during the load only; the caller may close it after.
  std::string model_path;
  int model_fd = -1;
  uint64_t model_offset = 0;
  uint64_t model_size = 0;
  int32_t n_threads = 0;          // 0: one per core
  int32_t n_ctx = 0;              // 0: the model's training context
  int32_t max_batch_tokens = 0;   // tokens per forward step; 0: the engine's default
  size_t kv_capacity_bytes = 0;   // the KV pool; 0: the engine's default
  size_t snapshot_ram_bytes = 0;  // parked KV kept in RAM; 0: the default
  // Parked KV snapshots beyond RAM, durable tasks' journals (<dir>/tasks) and,
  // unless weights_cache says otherwise, the weights cache (<dir>/weights/).
  std::string snapshot_dir;
  // The packed weights as a file that later loads map instead of repacking
  // (docs/engine.md, "Packed weights as a file"): a directory or a file;
  // unset: <snapshot_dir>/weights/ when snapshot_dir is set; empty: none.
  std::optional<std::string> weights_cache;
  uint64_t weights_cache_budget_bytes = 0;  // 0: the default (8 GiB)
  uint64_t durable_disk_budget_bytes = 0;   // 0: SchedulerOptions' default
  // The scheduler's options; durable_dir and model_fingerprint are set from
  // snapshot_dir and the model.
  SchedulerOptions scheduler;
};

// Where the weights live after a load (docs/memory.md).
struct WeightsStats {
  uint64_t file_backed_bytes = 0;  // mapped from the model or the weights cache: the system may drop them
  uint64_t anonymous_bytes = 0;    // packed in memory (no weights cache)
  int32_t matrices_mapped = 0;     // row groups mapped from the weights cache
  int32_t matrices_packed = 0;     // row groups packed by this load
};

class RealEngine;

class VALET_API Runtime {
 public:
  // Loads the model and starts the scheduler on the calling thread.
  // `progress` runs on that thread; `cancel.Cancel()` ends the load at its
  // next check (between stages and packed matrices) with kAborted.
  static Result<std::unique_ptr<Runtime>> Create(RuntimeOptions options, const LoadProgress& progress = {},
                                                 const LoadCancel& cancel = {});
  // Create on a thread of valet's own: returns at once; `progress` runs on
  // that thread, and the future holds the runtime or why there is none.
  // Options are checked there too (their errors arrive through the future).
  // Dropping the future does not wait: a runtime nobody takes is destroyed
  // on the loading thread.
  static std::future<Result<std::unique_ptr<Runtime>>> CreateAsync(RuntimeOptions options,
                                                                   LoadProgress progress = {},
                                                                   LoadCancel cancel = {});
  // Stops the scheduler (Scheduler::~Scheduler), then frees the engine.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Scheduler& scheduler() { return *scheduler_; }
  const Scheduler& scheduler() const { return *scheduler_; }
  // The engine under the scheduler, for what needs no inference thread
  // (Tokenize, chat_format); the scheduler owns its steps.
  const EngineInterface& engine() const;
  WeightsStats weights() const;

 private:
  Runtime();

  std::unique_ptr<RealEngine> engine_;
  std::unique_ptr<Scheduler> scheduler_;  // declared last: stops before the engine goes
};

}  // namespace valet
