// valet pack: a model's packed weights as a file (model/weights_cache.h),
// made ahead of time so that the first start maps them too.
#include <cstdio>

#include "cli_args.h"
#include "commands.h"
#include "kernels/kernel_table.h"
#include "model/llama_model.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (required)"},
    {"--output", "-o", true,
     "the weights cache: a directory (existing, or ending in '/': the file in it named for the model, as "
     "--weights-cache finds it) or a file (required)"},
    {"--remove", nullptr, false, "remove the caches at --output instead (-m not needed)"},
    {"--progress", nullptr, false, "print each stage as it starts, and packing's bytes, on stderr"},
};

const char* StageName(LoadStage stage) {
  switch (stage) {
    case LoadStage::kMap: return "map";
    case LoadStage::kPack: return "pack";
    case LoadStage::kWriteCache: return "write";
    case LoadStage::kPrepare: return "prepare";
  }
  return "?";
}

}  // namespace

int RunPack(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("pack", "-m MODEL -o DIR|FILE", kFlags, argv, &args)) return *code;
  Result<std::string> output = args.String("--output", std::nullopt);
  if (!output.ok()) return Fail("pack", output.status());
  if (args.Has("--remove")) {
    if (Status removed = RemoveWeightsCaches(*output); !removed.ok()) return Fail("pack", removed);
    return 0;
  }
  Result<std::string> model = args.String("--model", std::nullopt);
  if (!model.ok()) return Fail("pack", model.status());
  ModelLoadOptions options;
  options.weights_cache.path = *output;
  options.weights_cache.budget_bytes = UINT64_MAX;  // the file asked for, whatever its size
  if (args.Has("--progress")) {
    // Unbuffered, line by line: a script may act on a stage the moment it starts.
    options.observer.progress = [](LoadStage stage, uint64_t done, uint64_t total) {
      std::fprintf(stderr, "%s %llu %llu\n", StageName(stage), static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(total));
    };
  }
  Result<std::shared_ptr<const LlamaModel>> loaded = LlamaModel::Load(*model, options);
  if (!loaded.ok()) return Fail("pack", loaded.status());
  const ModelLoadReport& r = (*loaded)->load_report();
  if (r.matrices_packed + r.matrices_mapped == 0) {
    std::printf("%s: the active kernels (%s) pack none of its matrices: no cache needed\n", model->c_str(),
                ActiveKernelsName());
    return 0;
  }
  if (r.matrices_mapped == 0) return Fail("pack", IoError(r.cache_note));
  std::printf("%s: %d matrices %s\n", r.cache_path.c_str(), r.matrices_mapped,
              r.cache_written ? "packed and written" : "already packed there");
  return 0;
}

}  // namespace valet::cli
