// Names of valet/threads.h's enums, as the budget table's JSON spells them.
#include <cstring>
#include <string>

#include "valet/threads.h"

namespace valet {

const char* CoreClassName(CoreClass cores) {
  switch (cores) {
    case CoreClass::kAll:
      return "all";
    case CoreClass::kPerformance:
      return "performance";
    case CoreClass::kEfficiency:
      return "efficiency";
  }
  return "unknown";
}

Result<CoreClass> CoreClassFromName(const char* name) {
  for (CoreClass c : {CoreClass::kAll, CoreClass::kPerformance, CoreClass::kEfficiency}) {
    if (std::strcmp(name, CoreClassName(c)) == 0) return c;
  }
  return InvalidArgument(std::string("cores must be all, performance or efficiency, not ") + name);
}

const char* SchedPolicyName(SchedPolicy policy) {
  switch (policy) {
    case SchedPolicy::kNormal:
      return "normal";
    case SchedPolicy::kBatch:
      return "batch";
    case SchedPolicy::kIdle:
      return "idle";
  }
  return "unknown";
}

Result<SchedPolicy> SchedPolicyFromName(const char* name) {
  for (SchedPolicy p : {SchedPolicy::kNormal, SchedPolicy::kBatch, SchedPolicy::kIdle}) {
    if (std::strcmp(name, SchedPolicyName(p)) == 0) return p;
  }
  return InvalidArgument(std::string("policy must be normal, batch or idle, not ") + name);
}

}  // namespace valet
