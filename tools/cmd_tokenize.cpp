// valet tokenize: the token ids a model's tokenizer gives a text, as llama.cpp's
// tokenizer would (BOS where the vocabulary asks for it, special tokens parsed).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "cli_args.h"
#include "commands.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (required)"},
    {"--prompt", "-p", true, "text to tokenize (this or --prompt-file)"},
    {"--prompt-file", nullptr, true, "file whose bytes, as they are (NUL bytes too), are the text; at most 64 MiB"},
    {"--no-bos", nullptr, false, "do not add BOS even when the vocabulary asks for it"},
    {"--no-special", nullptr, false, "treat special-token texts (\"<|im_start|>\") as plain text"},
    {"--json", nullptr, false, "print {\"tokens\":[...]} instead of space-separated ids"},
};

Result<std::unique_ptr<Tokenizer>> OpenTokenizer(const std::string& path) {
  VALET_ASSIGN_OR_RETURN(GgufFile file, GgufFile::Open(path));
  VALET_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::FromGguf(file));
  Result<std::unique_ptr<Tokenizer>> tok =
      Tokenizer::Create(std::make_shared<const Vocabulary>(std::move(vocab)));
  if (!tok.ok()) return Status(tok.status().code(), path + ": " + tok.status().message());
  return tok;
}

// The text is read whole, so its size is bounded first.
constexpr std::streamoff kMaxPromptFileBytes = std::streamoff{64} << 20;

Result<std::string> ReadPromptFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return NotFound(path + ": cannot open");
  const std::streamoff size = in.tellg();
  if (size < 0) return IoError(path + ": cannot tell its size");
  if (size > kMaxPromptFileBytes) {
    return InvalidArgument(path + ": " + std::to_string(size) + " bytes, more than the 64 MiB a prompt file may have");
  }
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  if (!in.read(text.data(), size)) return IoError(path + ": read failed");
  return text;
}

Result<std::string> ReadText(const Args& args) {
  if (args.Has("--prompt") == args.Has("--prompt-file")) {
    return InvalidArgument("give exactly one of --prompt and --prompt-file");
  }
  if (args.Has("--prompt")) return args.String("--prompt", std::nullopt);
  VALET_ASSIGN_OR_RETURN(const std::string path, args.String("--prompt-file", std::nullopt));
  return ReadPromptFile(path);
}

}  // namespace

int RunTokenize(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("tokenize", "-m MODEL (-p TEXT | --prompt-file FILE)", kFlags, argv, &args))
    return *code;
  Result<std::string> path = args.String("--model", std::nullopt);
  if (!path.ok()) return Fail("tokenize", path.status());
  Result<std::string> text = ReadText(args);
  if (!text.ok()) return Fail("tokenize", text.status());
  Result<std::unique_ptr<Tokenizer>> tok = OpenTokenizer(*path);
  if (!tok.ok()) return Fail("tokenize", tok.status());
  const EncodeOptions options{.add_bos = !args.Has("--no-bos"),
                              .add_eos = true,
                              .parse_special = !args.Has("--no-special")};
  const std::vector<int32_t> ids = (*tok)->Encode(*text, options);
  const bool json = args.Has("--json");
  std::string out = json ? "{\"tokens\":[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += json ? "," : " ";
    out += std::to_string(ids[i]);
  }
  out += json ? "]}\n" : "\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace valet::cli
