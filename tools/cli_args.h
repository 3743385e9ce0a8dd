// Flag parsing for the valet CLI: every command declares its flags, values are
// validated with a range, and any mistake becomes a one-line error (exit 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_layout.h"
#include "valet/status.h"

namespace valet {
struct ModelLoadReport;
struct LoadPhase;
}  // namespace valet

namespace valet::cli {

// The --kv-type flag every engine command takes.
inline constexpr const char* kKvTypeHelp = "KV cache element type: f16 | q8_0 | f32 (default f16; q8_0 needs head_dim a multiple of 32)";

// The --weights-cache flag of the commands that load a model for long.
inline constexpr const char* kWeightsCacheHelp =
    "packed weights as a file, mapped by later starts instead of repacking: a directory (the file in it named for "
    "the model) or a file; made by this start when missing or stale (see valet pack); 'none': none";

struct FlagSpec {
  const char* name;        // "--temp"
  const char* short_name;  // "-t", or nullptr
  bool takes_value;
  const char* help;
};

class Args {
 public:
  static Result<Args> Parse(std::span<const FlagSpec> specs, std::span<char* const> argv);

  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  Result<std::string> String(const std::string& name, std::optional<std::string> fallback) const;
  Result<int64_t> Int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  Result<double> Double(const std::string& name, double fallback, double min, double max) const;
  // --kv-type: f16 (the default), q8_0 or f32.
  Result<KvType> KvTypeFlag() const;
  // Every value given for a repeatable flag, in order.
  std::vector<std::string> All(const std::string& name) const;

 private:
  std::multimap<std::string, std::string> values_;
};

std::string Usage(const char* command, const char* synopsis, std::span<const FlagSpec> specs);

}  // namespace valet::cli

namespace valet::cli {

// Says on stderr how the load came by its packed weights, when a weights
// cache was asked for: mapped, written, or why not.
void ReportWeightsCache(const char* command, const ModelLoadReport& report);
// "<total> s (<phase> <s>, ...)": where a load spent its time.
std::string LoadProfileText(std::span<const LoadPhase> phases);

// Parses `argv` for `command`. Returns the exit code to stop with (--help
// prints usage and gives 0; a parse error prints it and gives 2) or nothing
// when the command should go on with `*out`.
std::optional<int> ParseCommandLine(const char* command, const char* synopsis, std::span<const FlagSpec> specs,
                                    std::span<char* const> argv, Args* out);

// --weights-cache's path ("" for none: the word, or no flag and no `fallback`).
Result<std::string> WeightsCachePath(const Args& args, const std::string& fallback = "");

}  // namespace valet::cli
