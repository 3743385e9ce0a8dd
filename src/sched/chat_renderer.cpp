#include "sched/chat_renderer.h"

#include <cassert>
#include <cctype>

#include "chat/tool_calls.h"

namespace valet {

namespace {

constexpr std::string_view kChatMlEndOfTurn = "<|im_end|>";

Status CheckRoles(const std::vector<ChatMessage>& messages) {
  bool any_content = false;
  for (const ChatMessage& m : messages) {
    if (m.role != "user" && m.role != "assistant" && m.role != "system" && m.role != "tool") {
      return InvalidArgument("unknown chat role '" + m.role + "' (expected system, user, assistant or tool)");
    }
    if (!m.tool_calls.empty() && m.role != "assistant") {
      return InvalidArgument("a '" + m.role + "' message with tool calls (only the assistant calls tools)");
    }
    if (!m.tool_call_id.empty() && m.role != "tool") {
      return InvalidArgument("a '" + m.role + "' message with a tool_call_id (only a tool message answers a call)");
    }
    any_content = any_content || !m.content.empty() || !m.tool_calls.empty();
  }
  if (!any_content) return InvalidArgument("chat messages are all empty");
  return Status::Ok();
}

// 1-64 of [A-Za-z0-9_-], as OpenAI's API takes function names.
bool ValidToolName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// A name as an error message quotes it: at most 64 bytes of what was sent.
std::string Quoted(std::string_view name) {
  return "'" + std::string(name.substr(0, 64)) + (name.size() > 64 ? "...'" : "'");
}

// A JSON object from its text (`what` names it in the error).
Result<Json> ObjectFromText(std::string_view text, const std::string& what) {
  if (text.size() > kMaxToolSchemaBytes) {
    return InvalidArgument(what + " is over " + std::to_string(kMaxToolSchemaBytes) + " bytes");
  }
  Result<Json> parsed = ParseJson(text);
  if (!parsed.ok()) return InvalidArgument(what + " is not JSON: " + parsed.status().message());
  if (!parsed->is_object()) return InvalidArgument(what + " is not a JSON object");
  return parsed;
}

Result<Json> Message(const ChatMessage& message) {
  Json m = Json::object();
  m["role"] = message.role;
  m["content"] = message.content;
  if (!message.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& c : message.tool_calls) {
      if (!ValidToolName(c.name)) return InvalidArgument("tool call name " + Quoted(c.name) + " is not 1-64 of [A-Za-z0-9_-]");
      VALET_ASSIGN_OR_RETURN(Json arguments, ObjectFromText(c.arguments, "the arguments of a call to " + c.name));
      calls.push_back(Json{{"id", c.id}, {"type", "function"},
                           {"function", Json{{"name", c.name}, {"arguments", std::move(arguments)}}}});
    }
    m["tool_calls"] = std::move(calls);
  }
  if (!message.tool_call_id.empty()) m["tool_call_id"] = message.tool_call_id;
  return m;
}

// For a template that does not show tools: what valet tells the model
// instead, in the generic syntax chat/tool_calls.h reads back.
std::string ToolsInstruction(const Json& tools) {
  std::string out =
      "You may call one of these tools: answer with only a JSON object {\"name\": <the tool's name>, "
      "\"arguments\": <an object of its arguments>}. Otherwise answer in text.\nTools:";
  for (const Json& t : tools) {
    out += '\n';
    out += DumpJson(t.at("function"));
  }
  return out;
}

Result<Json> ToolsJson(std::span<const ToolDefinition> tools) {
  if (tools.size() > kMaxTools) {
    return InvalidArgument(std::to_string(tools.size()) + " tools (at most " + std::to_string(kMaxTools) + ")");
  }
  Json out = Json::array();
  for (const ToolDefinition& t : tools) {
    if (!ValidToolName(t.name)) return InvalidArgument("tool name " + Quoted(t.name) + " is not 1-64 of [A-Za-z0-9_-]");
    Json parameters = Json{{"type", "object"}};
    if (!t.parameters.empty()) {
      VALET_ASSIGN_OR_RETURN(parameters, ObjectFromText(t.parameters, "the parameters of tool " + t.name));
    }
    Json function{{"name", t.name}};
    if (!t.description.empty()) function["description"] = t.description;
    function["parameters"] = std::move(parameters);
    out.push_back(Json{{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

}  // namespace

ChatRenderer ChatRenderer::ForFormat(const ChatFormat& format, ChatRendererOptions options) {
  ChatRenderer r;
  r.format_ = format;
  r.literal_content_ = options.literal_content;
  if (!format.special_texts.empty()) {
    r.special_texts_ = std::make_shared<const chat::SpecialTexts>(format.special_texts);
  }
  if (!format.template_source.empty()) {
    Result<chat::ChatTemplate> parsed = chat::ChatTemplate::Parse(format.template_source);
    if (parsed.ok()) {
      r.template_ = std::make_shared<const chat::ChatTemplate>(std::move(parsed).value());
      r.uses_model_template_ = true;
      r.tool_syntax_ = ToolCallSyntaxForTemplate(format.template_source);
      return r;
    }
    r.fallback_reason_ = "the model's chat template could not be parsed (" + parsed.status().message() +
                         "); using the built-in ChatML";
  } else {
    r.fallback_reason_ = "the model has no chat template; using the built-in ChatML";
  }
  Result<chat::ChatTemplate> chatml = chat::ChatTemplate::Builtin(chat::kChatMlName);
  assert(chatml.ok() && "the built-in ChatML template parses");
  r.template_ = std::make_shared<const chat::ChatTemplate>(std::move(chatml).value());
  r.stop_strings_ = {std::string(kChatMlEndOfTurn)};
  return r;
}

Result<RenderedPrompt> ChatRenderer::RenderChat(std::string_view system_prompt, const std::vector<ChatMessage>& messages,
                                                std::span<const ToolDefinition> tools) const {
  VALET_RETURN_IF_ERROR(CheckRoles(messages));
  chat::ChatRenderInput input;
  input.messages = Json::array();
  if (!system_prompt.empty()) input.messages.push_back(Json{{"role", "system"}, {"content", system_prompt}});
  for (const ChatMessage& m : messages) {
    VALET_ASSIGN_OR_RETURN(Json message, Message(m));
    input.messages.push_back(std::move(message));
  }
  if (!tools.empty()) {
    VALET_ASSIGN_OR_RETURN(Json tools_json, ToolsJson(tools));
    if (tool_syntax_.template_shows_tools) {
      input.variables = Json{{"tools", std::move(tools_json)}};
    } else if (Json& first = input.messages.front(); first["role"] == "system") {
      first["content"] = first["content"].get<std::string>() + "\n\n" + ToolsInstruction(tools_json);
    } else {
      input.messages.insert(input.messages.begin(), Json{{"role", "system"}, {"content", ToolsInstruction(tools_json)}});
    }
  }
  input.add_generation_prompt = true;
  input.bos_token = format_.bos_token;
  input.eos_token = format_.eos_token;
  input.special_texts = special_texts_.get();
  input.literal_content = literal_content_;
  VALET_ASSIGN_OR_RETURN(chat::SplitPrompt split, template_->RenderSplit(input));
  // Only a task's own system prompt is shared: a system message inside
  // `messages` belongs to that conversation.
  RenderedPrompt r{std::move(split.shared), std::move(split.own), std::move(split.shared_literal),
                   std::move(split.own_literal)};
  if (!system_prompt.empty()) return r;
  return RenderedPrompt{"", r.shared + r.own, {}, JoinedLiteral(r)};
}

std::vector<ByteRange> JoinedLiteral(const RenderedPrompt& prompt) {
  std::vector<ByteRange> joined = prompt.shared_literal;
  for (const ByteRange& r : prompt.own_literal) joined.push_back({r.begin + prompt.shared.size(), r.length});
  return joined;
}

RenderedPrompt ChatRenderer::RenderRaw(std::string_view system_prompt, std::string_view prompt) {
  RenderedPrompt r;
  if (!system_prompt.empty()) r.shared = std::string(system_prompt) + "\n\n";
  r.own = prompt;
  return r;
}

}  // namespace valet
