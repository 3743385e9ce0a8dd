// How far loading a model has come (valet/runtime.h; C: valet_load_stage).
#pragma once

#include <cstdint>
#include <functional>

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

}  // namespace valet
