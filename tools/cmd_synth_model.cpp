// valet synth-model: write one of the built-in seeded random models.
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "cli_args.h"
#include "commands.h"
#include "gguf/gguf_file.h"
#include "testing/model/synthetic_model.h"

namespace valet::cli {
using namespace valet::testing;
namespace {

constexpr FlagSpec kFlags[] = {
    {"--preset", nullptr, true, "tiny | bench | 3b-shape (required)"},
    {"--output", "-o", true, "GGUF file to write (required)"},
    {"--type", nullptr, true,
     "weight type: f32 | f16 | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 | q2_k | q3_k | q4_k (= q4_k_m) "
     "| q5_k | iq4_nl | iq4_xs (default f32)"},
    {"--arch", nullptr, true, "architecture: llama | qwen2 | qwen3 | phi3 | gemma2 | gemma3 (default llama)"},
    {"--seed", nullptr, true, "weight seed (default 42)"},
    {"--vocab", nullptr, true, "a GGUF whose tokenizer (tokenizer.* keys) replaces the built-in one"},
};

struct Flags {
  SynthModelOptions model;
  std::string path;
};

Result<Flags> ReadFlags(const Args& a) {
  Flags f;
  VALET_ASSIGN_OR_RETURN(std::string preset, a.String("--preset", std::nullopt));
  VALET_ASSIGN_OR_RETURN(f.model.preset, ParseSynthPreset(preset));
  VALET_ASSIGN_OR_RETURN(f.path, a.String("--output", std::nullopt));
  if (f.path.empty()) return InvalidArgument("--output must not be empty");
  VALET_ASSIGN_OR_RETURN(std::string type, a.String("--type", "f32"));
  VALET_ASSIGN_OR_RETURN(f.model.type, ParseSynthType(type));
  VALET_ASSIGN_OR_RETURN(f.model.arch, a.String("--arch", "llama"));
  VALET_ASSIGN_OR_RETURN(int64_t seed, a.Int("--seed", 42, 0, INT64_MAX));
  f.model.seed = static_cast<uint64_t>(seed);
  VALET_ASSIGN_OR_RETURN(f.model.vocab_path, a.String("--vocab", ""));
  return f;
}

}  // namespace

int RunSynthModel(std::span<char* const> argv) {
  Args args;
  if (auto code =
          ParseCommandLine("synth-model", "--preset NAME -o FILE [flags]", kFlags, argv, &args)) {
    return *code;
  }
  Result<Flags> flags = ReadFlags(args);
  if (!flags.ok()) return Fail("synth-model", flags.status());
  const SynthModelOptions& m = flags->model;
  Status written = WriteSyntheticModel(m, flags->path);
  if (!written.ok()) return Fail("synth-model", written);
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(flags->path, ec);
  if (ec) return Fail("synth-model", IoError(flags->path + ": cannot stat: " + ec.message()));
  // Counted in the written file: the family and a --vocab change the preset's shape.
  Result<GgufFile> file = GgufFile::Open(flags->path);
  if (!file.ok()) return Fail("synth-model", file.status());
  int64_t params = 0;
  for (const GgufTensorInfo& t : file->tensors()) params += t.element_count();
  std::printf("%s: %s, preset %s, type %s, seed %llu, %lld parameters (%.1fM), %ju bytes (%.1f MB)\n",
              flags->path.c_str(), m.arch.c_str(), SynthPresetName(m.preset), SynthTypeName(m.type),
              static_cast<unsigned long long>(m.seed), static_cast<long long>(params), params / 1e6,
              size, size / 1e6);
  return 0;
}

}  // namespace valet::cli
