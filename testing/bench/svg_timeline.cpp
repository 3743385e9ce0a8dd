#include "testing/bench/svg_timeline.h"

#include <algorithm>
#include <cstdio>

namespace valet::testing {

namespace {

constexpr const char* kTierColor[kNumTiers] = {"#d62728", "#ff7f0e", "#2ca02c", "#1f77b4"};
constexpr double kLabelPx = 90.0;
constexpr double kPanelHeaderPx = 22.0;
constexpr double kTopPx = 56.0;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

struct Geometry {
  double px_per_s = 1.0;
  double row_px = 7.0;
  double X(double t0, double t) const { return kLabelPx + (t - t0) * px_per_s; }
};

std::string Rect(double x0, double x1, double y, double h, const std::string& style) {
  return "<rect x=\"" + Num(x0) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(0.5, x1 - x0)) + "\" height=\"" +
         Num(h) + "\" " + style + "/>";
}

std::string Row(const ArmRun& run, const TaskRecord& task, const Geometry& g, double y) {
  const char* color = kTierColor[static_cast<size_t>(task.tier)];
  std::string row = "<g class=\"task\" data-arm=\"" + std::string(ArmName(run.arm)) + "\" data-task=\"" +
                    std::to_string(task.id) + "\" data-kind=\"" + TaskKindName(task.kind) + "\">";
  std::string label = TaskKindName(task.kind);
  if (task.turn >= 0) label += " " + std::to_string(task.turn);
  row += "<text x=\"" + Num(kLabelPx - 4) + "\" y=\"" + Num(y + g.row_px - 1) + "\" text-anchor=\"end\">" + label + "</text>";
  double submitted = -1, run_from = -1, parked_from = -1;
  bool resumed = false;
  const double h = g.row_px - 1;
  for (const TimelineEvent& e : task.timeline) {
    const double x = g.X(run.start, e.time);
    switch (e.kind) {
      case TimelineKind::kSubmitted: submitted = x; break;
      case TimelineKind::kStarted:
        if (submitted >= 0) row += Rect(submitted, x, y + h / 2 - 0.5, 1.0, "fill=\"" + std::string(color) + "\" opacity=\"0.5\"");
        run_from = x;
        break;
      case TimelineKind::kResumed:
        if (parked_from >= 0) row += Rect(parked_from, x, y + 1, h - 2, "fill=\"#bbb\"");
        parked_from = -1;
        run_from = x;
        resumed = true;
        break;
      case TimelineKind::kParked:
      case TimelineKind::kDone:
      case TimelineKind::kCancelled:
      case TimelineKind::kFailed:
        if (run_from >= 0) {
          const std::string stroke = resumed ? " stroke=\"#000\" stroke-width=\"0.6\"" : "";
          row += Rect(run_from, x, y, h, "fill=\"" + std::string(color) + "\"" + stroke);
        }
        run_from = -1;
        if (e.kind == TimelineKind::kParked) parked_from = x;
        break;
      case TimelineKind::kFirstToken:
        row += "<line x1=\"" + Num(x) + "\" x2=\"" + Num(x) + "\" y1=\"" + Num(y - 1) + "\" y2=\"" + Num(y + h + 1) +
               "\" stroke=\"#000\" stroke-width=\"1.2\"/>";
        break;
    }
  }
  return row + "</g>\n";
}

std::string Panel(const ArmRun& run, const Geometry& g, double y, double axis_s) {
  std::string out = "<g class=\"arm\" data-arm=\"" + std::string(ArmName(run.arm)) + "\">\n";
  out += "<text x=\"4\" y=\"" + Num(y + 14) + "\" font-size=\"12\" font-weight=\"bold\">" + ArmName(run.arm) + "</text>\n";
  const double rows_top = y + kPanelHeaderPx;
  const double rows_h = g.row_px * static_cast<double>(run.tasks.size());
  for (size_t i = 0; i < run.excursions.size(); ++i) {
    const Excursion& e = run.excursions[i];
    if (e.at_resume.time <= e.at_stop.time) continue;
    out += Rect(g.X(run.start, e.at_stop.time), g.X(run.start, e.at_resume.time), rows_top, rows_h,
                "fill=\"#9467bd\" opacity=\"0.12\"");
    if (i != 0) continue;  // one label: many excursions' labels would overlap
    out += "<text x=\"" + Num(g.X(run.start, e.at_stop.time) + 2) + "\" y=\"" + Num(y + 14) +
           "\" fill=\"#9467bd\">app in background (ON_STOP → ON_RESUME)</text>\n";
  }
  for (int s = 0; s <= static_cast<int>(axis_s); s += axis_s > 40 ? 10 : 5) {
    const double x = g.X(0, s);
    out += "<line x1=\"" + Num(x) + "\" x2=\"" + Num(x) + "\" y1=\"" + Num(rows_top) + "\" y2=\"" + Num(rows_top + rows_h) +
           "\" stroke=\"#eee\"/><text x=\"" + Num(x) + "\" y=\"" + Num(rows_top - 2) + "\" fill=\"#888\">" +
           std::to_string(s) + "s</text>\n";
  }
  for (size_t i = 0; i < run.tasks.size(); ++i) out += Row(run, run.tasks[i], g, rows_top + g.row_px * static_cast<double>(i));
  return out + "</g>\n";
}

std::string Legend() {
  std::string out;
  const char* names[kNumTiers] = {"foreground chat", "inline suggestion", "background summary", "offline indexing"};
  double x = kLabelPx;
  for (int t = 0; t < kNumTiers; ++t) {
    out += Rect(x, x + 12, 30, 8, "fill=\"" + std::string(kTierColor[t]) + "\"");
    out += "<text x=\"" + Num(x + 16) + "\" y=\"38\">" + names[t] + "</text>";
    x += 130;
  }
  out += Rect(x, x + 12, 30, 8, "fill=\"#bbb\"") + "<text x=\"" + Num(x + 16) + "\" y=\"38\">parked</text>";
  x += 60;
  out += "<line x1=\"" + Num(x) + "\" x2=\"" + Num(x) + "\" y1=\"28\" y2=\"40\" stroke=\"#000\" stroke-width=\"1.2\"/>";
  out += "<text x=\"" + Num(x + 4) + "\" y=\"38\">first token</text>";
  x += 75;
  out += Rect(x, x + 24, 34, 1, "fill=\"#888\"") + "<text x=\"" + Num(x + 28) + "\" y=\"38\">queued</text>";
  x += 70;
  out += Rect(x, x + 12, 30, 8, "fill=\"#fff\" stroke=\"#000\" stroke-width=\"0.6\"") + "<text x=\"" + Num(x + 16) +
         "\" y=\"38\">running after a resume</text>\n";
  return out;
}

}  // namespace

std::string RenderTimelineSvg(const std::vector<ArmRun>& runs, const SvgOptions& options) {
  double longest = 1.0;
  double height = kTopPx;
  for (const ArmRun& r : runs) {
    longest = std::max(longest, r.end - r.start);
    height += kPanelHeaderPx + options.row_px * static_cast<double>(r.tasks.size()) + 12;
  }
  Geometry g;
  g.px_per_s = options.width_px / longest;
  g.row_px = options.row_px;
  const double width = kLabelPx + options.width_px + 10;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width) + "\" height=\"" + Num(height) +
                    "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) +
                    "\" font-family=\"sans-serif\" font-size=\"7\">\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  svg += "<text x=\"4\" y=\"16\" font-size=\"13\" font-weight=\"bold\">" + options.title + "</text>\n";
  svg += Legend();
  double y = kTopPx;
  for (const ArmRun& r : runs) {
    svg += Panel(r, g, y, longest);
    y += kPanelHeaderPx + options.row_px * static_cast<double>(r.tasks.size()) + 12;
  }
  return svg + "</svg>\n";
}

}  // namespace valet::testing
