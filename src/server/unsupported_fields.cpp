#include "server/unsupported_fields.h"

#include <string>

namespace valet {

namespace {

using nlohmann::json;

enum class Kind { kParameter, kValue };

struct Rule {
  const char* field;
  bool chat;
  bool completions;
  Kind kind;
  bool (*harmless)(const json& value);  // the value valet gives anyway
  const char* why;
};

bool EmptyOrNull(const json& v) { return v.is_null() || ((v.is_array() || v.is_object() || v.is_string()) && v.empty()); }
bool IsOne(const json& v) { return v.is_null() || (v.is_number_integer() && v.get<int64_t>() == 1); }
bool IsFalse(const json& v) { return v.is_null() || (v.is_boolean() && !v.get<bool>()); }
bool NoneOrAuto(const json& v) { return v.is_null() || v == "none" || v == "auto"; }
bool TextModality(const json& v) { return v.is_null() || (v.is_array() && v.size() == 1 && v[0] == "text"); }

constexpr Rule kRules[] = {
    {"functions", true, false, Kind::kParameter, EmptyOrNull, "valet does not call functions"},
    {"function_call", true, false, Kind::kValue, NoneOrAuto, "valet does not call functions"},
    {"logit_bias", true, true, Kind::kParameter, EmptyOrNull, "valet does not bias logits"},
    {"n", true, true, Kind::kValue, IsOne, "valet generates one choice per request"},
    // Not a chat field at OpenAI; refused there too rather than read and ignored.
    {"best_of", true, true, Kind::kValue, IsOne, "valet generates one choice per request"},
    {"suffix", false, true, Kind::kParameter, EmptyOrNull, "valet does not insert text before a suffix"},
    {"echo", false, true, Kind::kValue, IsFalse, "valet does not echo the prompt"},
    {"audio", true, false, Kind::kParameter, EmptyOrNull, "valet answers in text only"},
    {"modalities", true, false, Kind::kValue, TextModality, "valet answers in text only"},
    {"prediction", true, false, Kind::kParameter, EmptyOrNull, "valet does not use predicted outputs"},
    {"web_search_options", true, false, Kind::kParameter, EmptyOrNull, "valet does not search the web"},
};

}  // namespace

std::optional<ApiError> RefuseUnsupportedFields(const json& body, Endpoint endpoint) {
  const bool chat = endpoint == Endpoint::kChatCompletions;
  for (const Rule& rule : kRules) {
    if (!(chat ? rule.chat : rule.completions)) continue;
    auto it = body.find(rule.field);
    if (it == body.end() || rule.harmless(*it)) continue;
    const bool parameter = rule.kind == Kind::kParameter;
    return BadRequest(std::string("'") + rule.field + "' is not supported" + (parameter ? "" : " with this value") +
                          ": " + rule.why,
                      rule.field, parameter ? "unsupported_parameter" : "unsupported_value");
  }
  return std::nullopt;
}

}  // namespace valet
