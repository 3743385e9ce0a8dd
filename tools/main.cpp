// valet: the command-line front end. `valet <command> --help` for flags.
#include <cstdio>
#include <cstring>
#include <span>

#include "commands.h"
#include "valet/status.h"

namespace valet::cli {

int Fail(const char* command, const Status& status) {
  std::fprintf(stderr, "valet %s: error: %s\n", command, status.message().c_str());
  const bool bad_input = status.code() != StatusCode::kIo && status.code() != StatusCode::kInternal;
  return bad_input ? 2 : 1;
}

}  // namespace valet::cli

namespace {

struct Command {
  const char* name;
  int (*run)(std::span<char* const>);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"generate", valet::cli::RunGenerate, "generate text from a prompt"},
    {"info", valet::cli::RunInfo, "print a model's metadata, tensors and memory"},
    {"tokenize", valet::cli::RunTokenize, "print the token ids of a text (--json: {\"tokens\":[...]})"},
    {"synth-model", valet::cli::RunSynthModel, "write a seeded random Llama GGUF (the built-in models)"},
    {"bench-engine", valet::cli::RunBenchEngine, "prefill/decode throughput (pp512/tg128)"},
    {"bench-constraint", valet::cli::RunBenchConstraint, "decode under an output constraint against free"},
    {"bench-resume", valet::cli::RunBenchResume, "cost of resuming a parked sequence, by park kind"},
    {"bench-contention", valet::cli::RunBenchContention, "chat under indexing: TTFT/throughput per scheduling arm"},
    {"demo", valet::cli::RunDemo, "the headline: bench-contention in ~2 minutes on the bench model"},
    {"template", valet::cli::RunTemplate, "render a chat template (model's or a .jinja file) over messages"},
    {"bench-trim", valet::cli::RunBenchTrim, "what onTrimMemory's advice on the weights frees, and the next step's cost"},
    {"bench-jank", valet::cli::RunBenchJank, "missed UI frames while background inference runs: idle, plain, valet"},
    {"pack", valet::cli::RunPack, "write a model's packed weights as a file that later loads map (--weights-cache)"},
    {"serve", valet::cli::RunServe, "OpenAI-compatible HTTP server with tiers, lifecycle and metrics"},
    {"bench-serve", valet::cli::RunBenchServe, "chat under indexing over HTTP (valet serve, llama-server): TTFT/TPOT/E2E"},
};

void PrintHelp(std::FILE* out) {
  std::fprintf(out, "usage: valet <command> [flags]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-14s %s\n", c.name, c.summary);
  std::fprintf(out, "\n`valet <command> --help` lists a command's flags.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintHelp(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    PrintHelp(stdout);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) == 0) return c.run(std::span<char* const>(argv + 2, argc - 2));
  }
  std::fprintf(stderr, "valet: error: unknown command '%s' (try `valet --help`)\n", argv[1]);
  return 2;
}
