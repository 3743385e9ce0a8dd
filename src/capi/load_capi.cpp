// valet_create_async: valet_create's work on a thread of its own, with
// progress and cancellation (valet.h, "Loading off the caller's thread").
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "capi/capi_internal.h"

// The params with their strings owned, so the load outlives the caller's.
struct valet_load {
  valet_params params{};
  std::string model_path, snapshot_dir, budget_table_path, budget_table_json, weights_cache;
  int model_fd = -1;  // our duplicate, closed when the load ends
  valet_load_progress_fn progress = nullptr;
  valet_load_done_fn done = nullptr;
  void* user_data = nullptr;
  valet::LoadCancel cancel;
  std::thread thread;

  ~valet_load() {
    if (model_fd >= 0) ::close(model_fd);
  }
};

namespace {

using valet::capi::Fail;
using valet::capi::Guard;
using valet::capi::Report;

static_assert(VALET_LOAD_MAP == static_cast<int>(valet::LoadStage::kMap) &&
                  VALET_LOAD_PREPARE == static_cast<int>(valet::LoadStage::kPrepare),
              "valet_load_stage mirrors valet::LoadStage");

// Points `field` at a copy of the caller's string, owned by `copy`.
void Own(const char*& field, std::string& copy) {
  if (field == nullptr) return;
  copy = field;
  field = copy.c_str();
}

void Run(valet_load* load) {
  valet::LoadProgress progress;
  if (load->progress != nullptr) {
    progress = [load](valet::LoadStage stage, uint64_t done, uint64_t total) {
      load->progress(load->user_data, static_cast<valet_load_stage>(stage), done, total);
    };
  }
  valet::Result<std::unique_ptr<valet_scheduler>> handle = valet::Status(valet::StatusCode::kInternal, "not run");
  try {
    handle = valet::capi::CreateScheduler(load->params, progress, load->cancel);
  } catch (const std::exception& e) {
    handle = valet::Status(valet::StatusCode::kInternal, e.what());
  }
  if (load->model_fd >= 0) {
    ::close(load->model_fd);
    load->model_fd = -1;
  }
  if (!handle.ok()) {
    const std::string message = handle.status().ToString();
    load->done(load->user_data, valet::capi::ToC(handle.status().code()), message.c_str(), nullptr);
    return;
  }
  load->done(load->user_data, VALET_OK, "", handle->release());
}

}  // namespace

extern "C" {

valet_status valet_create_async(const valet_params* caller_params, valet_load_progress_fn progress,
                                valet_load_done_fn done, void* user_data, valet_load** out) {
  return Guard([&]() -> valet_status {
    if (caller_params == nullptr || done == nullptr || out == nullptr) {
      return Fail(VALET_INVALID_ARGUMENT, "params, done and out are required");
    }
    *out = nullptr;
    valet::Result<valet_params> params = valet::capi::ReadParams(*caller_params);
    if (!params.ok()) return Report(params.status());
    auto load = std::make_unique<valet_load>();
    load->params = *params;
    Own(load->params.model_path, load->model_path);
    Own(load->params.snapshot_dir, load->snapshot_dir);
    Own(load->params.budget_table_path, load->budget_table_path);
    Own(load->params.budget_table_json, load->budget_table_json);
    Own(load->params.weights_cache, load->weights_cache);
    if (load->params.model_fd >= 0) {
      load->model_fd = ::fcntl(load->params.model_fd, F_DUPFD_CLOEXEC, 0);
      if (load->model_fd < 0) return Fail(VALET_INVALID_ARGUMENT, "model_fd is not an open descriptor");
      load->params.model_fd = load->model_fd;
    }
    load->progress = progress;
    load->done = done;
    load->user_data = user_data;
    load->thread = std::thread(Run, load.get());
    *out = load.release();
    return Report(valet::Status::Ok());
  });
}

valet_status valet_load_cancel(valet_load* load) {
  if (load == nullptr) return Fail(VALET_INVALID_ARGUMENT, "load is required");
  load->cancel.Cancel();
  return Report(valet::Status::Ok());
}

void valet_load_free(valet_load* load) {
  if (load == nullptr) return;
  // From inside `done` the thread cannot wait for itself: it is left to end
  // on its own, touching nothing of the handle after `done` returns.
  if (load->thread.get_id() == std::this_thread::get_id()) {
    load->thread.detach();
  } else {
    load->thread.join();
  }
  delete load;
}

}  // extern "C"
