// How far loading a model has come (valet/runtime.h; C: valet_load_stage).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace valet {

// The stages of a load, in order.
enum class LoadStage : int32_t {
  kMap,         // mapping and checking the model file
  kPack,        // repacking the weights (bytes of row groups done of all)
  kWriteCache,  // publishing the weights cache
  kPrepare,     // tokenizer, forward context, KV pool, snapshot store
};

// Called at each stage's start (0 of 0) and as packing goes (bytes done of
// all), always on the loading thread: keep it short, it holds the load.
using LoadProgress = std::function<void(LoadStage stage, uint64_t done, uint64_t total)>;

// Cancels a load from any thread: keep a copy, give one to the load, call
// Cancel(); copies share one flag. (Not std::stop_token: the NDK's libc++
// does not have it yet.)
class LoadCancel {
 public:
  LoadCancel() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void Cancel() const { flag_->store(true, std::memory_order_relaxed); }
  bool cancelled() const { return flag_->load(std::memory_order_relaxed); }
  // What the loading code polls (LoadObserver::cancel); valid while a copy lives.
  const std::atomic<bool>* flag() const { return flag_.get(); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

}  // namespace valet
