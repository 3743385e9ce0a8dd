// An SVG timeline of arm runs, drawn by valet itself: one panel per arm, one
// row per task (in submission order), coloured by tier. A row shows the task
// waiting (thin), running (solid), parked (grey), running again after a resume
// (solid with a dark outline), and its first token (black tick). The time the
// app spent in the background is shaded. Same seconds-per-pixel in every
// panel, so panels compare at a glance.
#pragma once

#include <string>
#include <vector>

#include "testing/bench/contention_scenario.h"

namespace valet::testing {

struct SvgOptions {
  double width_px = 1100.0;  // of the time axis
  double row_px = 7.0;
  std::string title = "valet: chat under indexing";
};

// Every row is a <g class="task" ...> element, one per TaskRecord.
std::string RenderTimelineSvg(const std::vector<ArmRun>& runs, const SvgOptions& options = {});

}  // namespace valet::testing
