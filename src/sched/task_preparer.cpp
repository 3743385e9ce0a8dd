#include "sched/task_preparer.h"

#include <string>
#include <utility>

namespace valet {

TaskPreparer::TaskPreparer(const EngineInterface& engine, ChatRendererOptions chat_options)
    : engine_(engine),
      context_length_(engine.context_length()),
      eog_tokens_(engine.eog_tokens()),
      chat_(ChatRenderer::ForFormat(engine.chat_format(), chat_options)) {}

Status TaskPreparer::CheckFields(const TaskRequest& request) const {
  if (Result<Tier> tier = TierFromInt(static_cast<int>(request.tier)); !tier.ok()) return tier.status();
  if (!request.tools.empty() && request.messages.empty()) {
    return InvalidArgument("tools reach the model through its chat template: they need messages");
  }
  if (request.messages.empty() && request.prompt.empty() && request.prompt_tokens.empty()) {
    return InvalidArgument("empty prompt");
  }
  if (!request.prompt_tokens.empty()) {
    if (!request.messages.empty() || !request.prompt.empty() || !request.system_prompt.empty()) {
      return InvalidArgument("prompt_tokens is the whole prompt: messages, prompt and system_prompt must be empty");
    }
    for (int32_t t : request.prompt_tokens) {
      if (t < 0) return InvalidArgument("negative prompt token id " + std::to_string(t));
    }
  }
  if (request.max_tokens < 0) {
    return InvalidArgument("max_tokens must be positive, or 0 for the rest of the context; got " +
                           std::to_string(request.max_tokens));
  }
  if (request.max_tokens >= context_length_) {
    return OutOfRange("max_tokens " + std::to_string(request.max_tokens) + " leaves no room for a prompt in a " +
                      std::to_string(context_length_) + "-token context");
  }
  if (request.top_logprobs < -1 || request.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("top_logprobs must be -1 (none) or 0.." + std::to_string(kMaxTopLogprobs) + ", got " +
                           std::to_string(request.top_logprobs));
  }
  for (const std::string& s : request.stop) {
    if (s.empty()) return InvalidArgument("empty stop string");
  }
  return Status::Ok();
}

Status TaskPreparer::Tokenize(const TaskRequest& request, PreparedTask* out) const {
  if (!request.prompt_tokens.empty()) {
    // Token ids are the prompt exactly as given: no BOS, no template.
    out->prompt = request.prompt_tokens;
    return Status::Ok();
  }
  RenderedPrompt rendered;
  if (!request.messages.empty()) {
    VALET_ASSIGN_OR_RETURN(rendered, chat_.RenderChat(request.system_prompt, request.messages, request.tools));
    out->stop.stop_strings.insert(out->stop.stop_strings.end(), chat_.stop_strings().begin(),
                                  chat_.stop_strings().end());
  } else {
    rendered = ChatRenderer::RenderRaw(request.system_prompt, request.prompt);
  }
  if (!rendered.shared.empty()) {
    out->spec.shared_prefix = engine_.Tokenize(rendered.shared, {.add_bos = true, .literal = rendered.shared_literal});
    out->spec.prefix_rank = static_cast<int32_t>(request.tier);
  }
  const TokenizeOptions own{.add_bos = out->spec.shared_prefix.empty(), .literal = rendered.own_literal};
  out->prompt = engine_.Tokenize(rendered.own, own);
  if (out->prompt.empty()) return InvalidArgument("the prompt tokenizes to nothing");
  return Status::Ok();
}

Status TaskPreparer::FitContext(PreparedTask* out) const {
  const int64_t prompt = out->prompt_tokens();
  const int32_t asked = out->request.max_tokens;
  if (asked == 0 && prompt >= context_length_) {
    return OutOfRange("the prompt (" + std::to_string(prompt) + " tokens) fills the context of " +
                      std::to_string(context_length_) + ", leaving no room to generate");
  }
  if (asked > 0 && prompt + asked > context_length_) {
    return OutOfRange("prompt (" + std::to_string(prompt) + " tokens) plus max_tokens (" + std::to_string(asked) +
                      ") exceed the context of " + std::to_string(context_length_));
  }
  out->until_context_end = asked == 0;
  // The last generated token is never fed back, so it needs no position.
  out->max_tokens = asked > 0 ? asked : static_cast<int32_t>(context_length_ - prompt);
  return Status::Ok();
}

Result<PreparedTask> TaskPreparer::Prepare(TaskRequest request) const {
  VALET_RETURN_IF_ERROR(CheckFields(request));
  PreparedTask out;
  out.stop.stop_strings = request.stop;
  VALET_RETURN_IF_ERROR(Tokenize(request, &out));
  out.spec.sampling = request.sampling;
  out.spec.top_logprobs = request.top_logprobs;
  VALET_ASSIGN_OR_RETURN(out.tool_use, ToolUse::Plan(chat_.tool_syntax(), request));
  // The request keeps its own fields (a durable task's journal replays them).
  out.spec.constraint = out.tool_use && out.tool_use->constraint().active() ? out.tool_use->constraint()
                                                                             : request.constraint;
  VALET_RETURN_IF_ERROR(engine_.CheckConstraint(out.spec.constraint));
  out.request = std::move(request);
  VALET_RETURN_IF_ERROR(FitContext(&out));
  out.stop.eos_token_ids = eog_tokens_;
  out.stop.max_tokens = out.max_tokens;
  // Refuses what StopChecker would, so admission cannot fail on it.
  VALET_RETURN_IF_ERROR(StopChecker::Create(out.stop).status());
  return out;
}

}  // namespace valet
