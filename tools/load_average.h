// The machine's load average, printed beside every benchmark number so a
// figure measured on a busy machine says so.
#pragma once

#include <fstream>
#include <string>

namespace valet::cli {

// "load average 0.12 0.30 0.41" (1, 5, 15 minutes), or "unknown".
inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "unknown";
  return "load average " + a + " " + b + " " + c;
}

}  // namespace valet::cli
