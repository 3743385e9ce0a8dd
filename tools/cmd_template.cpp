// valet template: render a chat template (a model's tokenizer.chat_template or
// a .jinja file) over a conversation and print the prompt exactly as the model
// would see it.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "cli_args.h"
#include "commands.h"
#include "common/json.h"
#include "gguf/gguf_file.h"
#include "tokenizer/vocabulary.h"

namespace valet::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model whose tokenizer.chat_template to use (built-in chatml when it has none)"},
    {"--file", nullptr, true, "Jinja template file instead of a model"},
    {"--messages", nullptr, true, "JSON file {\"messages\": [...]}; other top-level keys become template variables"},
    {"--add-generation-prompt", nullptr, false, "end with the assistant turn's opening"},
    {"--bos", nullptr, true, "bos_token text (default: the model's BOS token, or empty with --file)"},
    {"--eos", nullptr, true, "eos_token text (default: the model's EOS token, or empty with --file)"},
};

struct TemplateSource {
  std::string text;  // empty: use the built-in chatml
  std::string bos;
  std::string eos;
};

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed");
  return ss.str();
}

std::string TokenTextOrEmpty(const Vocabulary& vocab, int32_t id) {
  return vocab.Contains(id) ? vocab.TokenText(id) : std::string();
}

Result<TemplateSource> FromModel(const std::string& path) {
  VALET_ASSIGN_OR_RETURN(GgufFile file, GgufFile::Open(path));
  VALET_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::FromGguf(file));
  TemplateSource source;
  source.bos = TokenTextOrEmpty(vocab, vocab.bos_id());
  source.eos = TokenTextOrEmpty(vocab, vocab.eos_id());
  if (file.Find("tokenizer.chat_template") != nullptr) {
    VALET_ASSIGN_OR_RETURN(std::string_view text, file.GetString("tokenizer.chat_template"));
    source.text = std::string(text);
  }
  return source;
}

Result<TemplateSource> ReadSource(const Args& args) {
  if (args.Has("--model") == args.Has("--file")) return InvalidArgument("give exactly one of --model and --file");
  TemplateSource source;
  if (args.Has("--model")) {
    VALET_ASSIGN_OR_RETURN(std::string path, args.String("--model", std::nullopt));
    VALET_ASSIGN_OR_RETURN(source, FromModel(path));
    if (source.text.empty()) {
      std::fprintf(stderr, "valet template: %s has no tokenizer.chat_template; using the built-in %s\n",
                   path.c_str(), std::string(chat::kChatMlName).c_str());
    }
  } else {
    VALET_ASSIGN_OR_RETURN(std::string path, args.String("--file", std::nullopt));
    VALET_ASSIGN_OR_RETURN(source.text, ReadText(path));
  }
  VALET_ASSIGN_OR_RETURN(source.bos, args.String("--bos", source.bos));
  VALET_ASSIGN_OR_RETURN(source.eos, args.String("--eos", source.eos));
  return source;
}

// {"messages": [...], "tools": ..., ...}: messages apart, the rest as variables.
Result<chat::ChatRenderInput> ReadConversation(const std::string& path) {
  VALET_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  Result<Json> json = ParseJson(text);
  if (!json.ok()) return InvalidArgument(path + ": " + json.status().message());
  auto messages = json->find("messages");
  if (!json->is_object() || messages == json->end() || !messages->is_array()) {
    return InvalidArgument(path + ": expected an object with a \"messages\" array");
  }
  chat::ChatRenderInput input;
  input.messages = std::move(*messages);
  json->erase("messages");
  input.variables = std::move(*json);
  return input;
}

Result<std::string> Render(const Args& args) {
  VALET_ASSIGN_OR_RETURN(TemplateSource source, ReadSource(args));
  VALET_ASSIGN_OR_RETURN(std::string messages_path, args.String("--messages", std::nullopt));
  VALET_ASSIGN_OR_RETURN(chat::ChatRenderInput input, ReadConversation(messages_path));
  input.add_generation_prompt = args.Has("--add-generation-prompt");
  input.bos_token = source.bos;
  input.eos_token = source.eos;
  VALET_ASSIGN_OR_RETURN(chat::ChatTemplate tmpl, source.text.empty() ? chat::ChatTemplate::Builtin(chat::kChatMlName)
                                                                       : chat::ChatTemplate::Parse(source.text));
  return tmpl.Render(input);
}

}  // namespace

int RunTemplate(std::span<char* const> argv) {
  Args args;
  const char* synopsis = "(-m MODEL | --file T.jinja) --messages M.json [--add-generation-prompt] [--bos S --eos S]";
  if (auto code = ParseCommandLine("template", synopsis, kFlags, argv, &args)) return *code;
  Result<std::string> prompt = Render(args);
  if (!prompt.ok()) return Fail("template", prompt.status());
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return 0;
}

}  // namespace valet::cli
