// The kill soak's faults (docs/durable.md, "Fault injection"): hooks for
// SchedulerOptions::durable_write_hooks that SIGKILL the process at a chosen
// point of a durable write, as Android's low-memory killer would, but at a
// moment of the test's choosing. Set by the tests and by `valet serve
// --fault`; the library itself never reads a fault from anywhere.
#pragma once

#include <cstdint>
#include <string_view>

#include "valet/scheduler.h"
#include "valet/status.h"

namespace valet::testing {

// Counts are 1-based and start when the hooks are made (KillHooks); 0: never.
struct FaultPlan {
  // The process dies in its `journal_append`-th journal record append (every
  // journal counted), after writing only the first `after_bytes` bytes of
  // that record (all of it when it is shorter), before any sync.
  int64_t journal_append = 0;
  uint32_t after_bytes = 0;
  // The process dies in its `checkpoint_rename`-th KV checkpoint write, once
  // the temporary file is complete and before the rename.
  int64_t checkpoint_rename = 0;
};

// "journal-append:<n>:<bytes>" or "checkpoint-rename:<n>", added to `plan`
// (so that both may be given); InvalidArgument for anything else.
Status AddFault(std::string_view spec, FaultPlan& plan);

// Hooks that carry `plan` out; empty ones for what it leaves at 0. Each call
// counts from zero again; copies of the hooks share their counts.
DurableWriteHooks KillHooks(const FaultPlan& plan);

}  // namespace valet::testing
