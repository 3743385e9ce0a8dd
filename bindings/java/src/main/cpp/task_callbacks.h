// Delivering a task's C API callbacks to its dev.valet.Task.
#pragma once

#include <jni.h>

#include <cstdint>

#include "valet/valet.h"

namespace valet_jni {

// Points params' callbacks at `task` through a new global reference, which
// on_done releases. nullptr (an exception pending) when none is left.
jobject AttachCallbacks(JNIEnv* env, jobject task, valet_task_params* params);
// Releases the reference of a task valet_submit refused (no on_done comes).
void DetachRefused(JNIEnv* env, jobject ref);
// Global references held for unfinished tasks, process-wide.
int64_t LiveTaskRefs();

}  // namespace valet_jni
