// The public C++ API from the installed headers alone: a budget table parsed
// from JSON, and a bad one rejected with a readable Status; a load of a
// missing model, on valet's thread. Exit status 0 only when all three behave,
// so the package test can tell the C++ symbols link and work.
#include <cstdio>

#include "valet/runtime.h"
#include "valet/scheduler.h"

int main() {
  auto table = valet::ParseBudgetTable(R"({"RESUMED": {"OFFLINE_INDEXING": {"turn_tokens": 8}}})");
  if (!table.ok()) {
    std::fprintf(stderr, "%s\n", table.status().ToString().c_str());
    return 1;
  }
  const valet::TierBudget& budget = table->at(valet::LifecycleState::kResumed, valet::Tier::kOfflineIndexing);
  std::printf("%s turn_tokens %d\n", valet::TierName(valet::Tier::kOfflineIndexing), budget.turn_tokens);

  auto bad = valet::ParseBudgetTable(R"({"RESUMED": {"NO_SUCH_TIER": {}}})");
  if (bad.ok()) return 1;
  std::printf("rejected: %s\n", bad.status().ToString().c_str());

  // A load on valet's own thread; a model that is not there comes back through the future.
  valet::RuntimeOptions options;
  options.model_path = "/nonexistent/model.gguf";
  auto missing = valet::Runtime::CreateAsync(options).get();
  if (missing.ok() || missing.status().code() != valet::StatusCode::kNotFound) return 1;
  std::printf("load: %s\n", missing.status().ToString().c_str());
  return budget.turn_tokens == 8 ? 0 : 1;
}
