// valet bench-serve: bench-contention's chat-under-indexing load sent over
// HTTP to valet serve or llama-server, reported as vLLM's `bench serve` does.
#include <cstdio>
#include <cstdlib>

#include "cli_args.h"
#include "commands.h"
#include "load_average.h"
#include "testing/bench/serve_bench.h"

namespace valet::cli {
using namespace valet::testing;
namespace {

constexpr FlagSpec kFlags[] = {
    {"--url", nullptr, true, "the server, http://HOST:PORT (required)"},
    {"--api", nullptr, true, "openai (valet serve: tiers in the body) | llamacpp (llama-server: no tiers); default openai"},
    {"--model", nullptr, true, "the requests' \"model\" field (default valet)"},
    {"--seed", nullptr, true, "workload seed (default 1)"},
    {"--temperature", nullptr, true, "every request's temperature, 0 = greedy (default: the load's 0.8)"},
    {"--turns", "-n", true, "chat turns per arm (default 16)"},
    {"--block", nullptr, true, "chat turns per block; the arms alternate block by block (default 4)"},
    {"--think-min", nullptr, true, "shortest think time before a chat turn, seconds (default 0.6)"},
    {"--think-max", nullptr, true, "longest think time, seconds (default 1.6)"},
    {"--doc-tokens", nullptr, true, "indexer document size in tokens (default 768, bench-contention's)"},
    {"--indexers", nullptr, true, "indexer documents in flight under chat (default 1)"},
    {"--json", nullptr, false, "print the report as JSON instead of text"},
};

Result<ServeBenchOptions> ReadFlags(const Args& a) {
  ServeBenchOptions o;
  VALET_ASSIGN_OR_RETURN(o.target.url, a.String("--url", std::nullopt));
  VALET_ASSIGN_OR_RETURN(std::string api, a.String("--api", "openai"));
  VALET_ASSIGN_OR_RETURN(o.target.api, ApiFlavorFromName(api));
  VALET_ASSIGN_OR_RETURN(o.target.model, a.String("--model", "valet"));
  VALET_ASSIGN_OR_RETURN(int64_t seed, a.Int("--seed", 1, 0, INT64_MAX));
  o.seed = static_cast<uint64_t>(seed);
  if (a.Has("--temperature")) {
    VALET_ASSIGN_OR_RETURN(double t, a.Double("--temperature", 0.0, 0.0, 2.0));
    o.target.temperature = static_cast<float>(t);
  }
  VALET_ASSIGN_OR_RETURN(o.turns, a.Int("--turns", o.turns, 1, 10000));
  VALET_ASSIGN_OR_RETURN(o.block_turns, a.Int("--block", o.block_turns, 1, 10000));
  VALET_ASSIGN_OR_RETURN(o.think_min_s, a.Double("--think-min", o.think_min_s, 0.0, 3600.0));
  VALET_ASSIGN_OR_RETURN(o.think_max_s, a.Double("--think-max", std::max(o.think_min_s, o.think_max_s), o.think_min_s, 3600.0));
  VALET_ASSIGN_OR_RETURN(o.doc_tokens, a.Int("--doc-tokens", o.doc_tokens, 1, 1 << 20));
  VALET_ASSIGN_OR_RETURN(o.indexers, a.Int("--indexers", o.indexers, 1, 256));
  return o;
}

}  // namespace

int RunBenchServe(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("bench-serve", "--url URL [--api openai|llamacpp] [--turns N] [--json] [flags]",
                                   kFlags, argv, &args)) {
    return *code;
  }
  Result<ServeBenchOptions> options = ReadFlags(args);
  if (!options.ok()) return Fail("bench-serve", options.status());
  const std::string load_before = LoadAverage();
  Result<ServeBenchReport> report =
      RunServeBench(*options, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  if (!report.ok()) return Fail("bench-serve", report.status());
  report->load_average = load_before + " (start), " + LoadAverage() + " (end)";
  if (args.Has("--json")) {
    std::printf("%s", ServeReportJson(*report).c_str());
  } else {
    std::printf("%s%s | %s\n", ServeReportText(*report).c_str(), options->target.url.c_str(),
                report->load_average.c_str());
  }
  return report->all_completed() ? 0 : 1;
}

}  // namespace valet::cli
