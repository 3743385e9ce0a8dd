#include "cli_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include "engine/engine.h"
#include "model/llama_model.h"

namespace valet::cli {

Result<Args> Args::Parse(std::span<const FlagSpec> specs, std::span<char* const> argv) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string arg = argv[i];
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs) {
      if (arg == s.name || (s.short_name != nullptr && arg == s.short_name)) spec = &s;
    }
    if (spec == nullptr) return InvalidArgument("unknown argument '" + arg + "'");
    std::string value;
    if (spec->takes_value) {
      if (i + 1 >= argv.size()) return InvalidArgument(std::string(spec->name) + " needs a value");
      value = argv[++i];
    }
    args.values_.emplace(spec->name, value);
  }
  return args;
}

Result<std::string> Args::String(const std::string& name, std::optional<std::string> fallback) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  if (fallback) return *fallback;
  return InvalidArgument(name + " is required");
}

Result<int64_t> Args::Int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return InvalidArgument(name + ": '" + it->second + "' is not an integer");
  if (v < min || v > max) {
    return InvalidArgument(name + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                           ", got " + it->second);
  }
  return static_cast<int64_t>(v);
}

Result<double> Args::Double(const std::string& name, double fallback, double min, double max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v)) {
    return InvalidArgument(name + ": '" + it->second + "' is not a number");
  }
  if (v < min || v > max) {
    return InvalidArgument(name + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                           ", got " + it->second);
  }
  return v;
}

Result<KvType> Args::KvTypeFlag() const {
  VALET_ASSIGN_OR_RETURN(std::string name, String("--kv-type", "f16"));
  if (std::optional<KvType> t = ParseKvType(name)) return *t;
  return InvalidArgument("--kv-type must be f16, q8_0 or f32, got '" + name + "'");
}

std::vector<std::string> Args::All(const std::string& name) const {
  std::vector<std::string> out;
  auto [lo, hi] = values_.equal_range(name);
  for (auto it = lo; it != hi; ++it) out.push_back(it->second);
  return out;
}

std::string Usage(const char* command, const char* synopsis, std::span<const FlagSpec> specs) {
  std::string u = std::string("usage: valet ") + command + " " + synopsis + "\n";
  for (const FlagSpec& s : specs) {
    std::string left = std::string("  ") + (s.short_name ? std::string(s.short_name) + ", " : "    ") + s.name;
    if (s.takes_value) left += " V";
    if (left.size() < 26) left.resize(26, ' ');
    u += left + " " + s.help + "\n";
  }
  return u;
}

}  // namespace valet::cli

namespace valet::cli {

std::optional<int> ParseCommandLine(const char* command, const char* synopsis, std::span<const FlagSpec> specs,
                                    std::span<char* const> argv, Args* out) {
  for (char* a : argv) {
    if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
      std::fputs(Usage(command, synopsis, specs).c_str(), stdout);
      return 0;
    }
  }
  Result<Args> args = Args::Parse(specs, argv);
  if (!args.ok()) {
    std::fprintf(stderr, "valet %s: error: %s\n%s", command, args.status().message().c_str(),
                 Usage(command, synopsis, specs).c_str());
    return 2;
  }
  *out = std::move(args).value();
  return std::nullopt;
}

}  // namespace valet::cli

namespace valet::cli {

std::string LoadProfileText(std::span<const LoadPhase> phases) {
  double total = 0;
  std::string parts;
  for (const LoadPhase& p : phases) {
    total += p.seconds;
    char part[128];
    std::snprintf(part, sizeof(part), "%s%s %.3f s", parts.empty() ? "" : ", ", p.name, p.seconds);
    parts += part;
  }
  char head[64];
  std::snprintf(head, sizeof(head), "%.3f s (", total);
  return head + parts + ")";
}

void ReportWeightsCache(const char* command, const ModelLoadReport& r) {
  if (r.cache_path.empty() && r.cache_note.empty()) return;
  if (r.matrices_mapped > 0) {
    std::fprintf(stderr, "valet %s: weights cache %s: %d matrices mapped%s\n", command, r.cache_path.c_str(),
                 r.matrices_mapped, r.cache_written ? " (written by this start)" : "");
  } else if (!r.cache_note.empty()) {
    std::fprintf(stderr, "valet %s: warning: weights packed in memory: %s\n", command, r.cache_note.c_str());
  }
}

Result<std::string> WeightsCachePath(const Args& args, const std::string& fallback) {
  Result<std::string> path = args.String("--weights-cache", fallback);
  if (path.ok() && *path == "none") return std::string();
  return path;
}

}  // namespace valet::cli
