// What the C API's source files share: the scheduler handle, the thread's
// last error, and valet_create's work (which valet_create_async runs on a
// thread of its own).
#pragma once

#include <exception>
#include <memory>
#include <string>

#include "valet/runtime.h"
#include "valet/scheduler.h"
#include "valet/valet.h"

struct valet_scheduler {
  std::unique_ptr<valet::Runtime> runtime;
  valet::Scheduler* scheduler = nullptr;  // runtime's
};

namespace valet::capi {

valet_status ToC(StatusCode code);
// Sets the calling thread's valet_last_error() from `status` and returns its code.
valet_status Report(const Status& status);
valet_status Fail(valet_status code, const char* message);

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

// valet_create's work on `params` (already read by their struct_size):
// Runtime::Create with `progress` and `cancel`.
Result<std::unique_ptr<valet_scheduler>> CreateScheduler(const valet_params& params, const LoadProgress& progress,
                                                         const LoadCancel& cancel);
// The caller's params read by their struct_size, defaults for what they lack.
Result<valet_params> ReadParams(const valet_params& caller_params);

}  // namespace valet::capi
