// valet demo: the headline experiment in about two minutes - the contention
// benchmark with short defaults, the table, the timeline's path, and the
// seed's phone figures set beside ours.
#include "commands.h"

namespace valet::cli {

int RunDemo(std::span<char* const> argv) {
  ContentionDefaults d;
  d.turns = 6;
  d.think_min_s = 0.4;
  d.think_max_s = 1.2;
  d.background_s = 2.0;
  d.svg = "valet-demo.svg";
  d.json = "valet-demo.json";
  d.seed_comparison = true;
  return RunContention("demo", argv, d);
}

}  // namespace valet::cli
