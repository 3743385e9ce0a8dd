#include "server/status_requests.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "server/client_json.h"

namespace valet {

namespace {

using nlohmann::json;

constexpr LifecycleEvent kEvents[] = {LifecycleEvent::kOnCreate, LifecycleEvent::kOnStart, LifecycleEvent::kOnResume,
                                      LifecycleEvent::kOnPause,  LifecycleEvent::kOnStop,  LifecycleEvent::kOnDestroy};

std::optional<LifecycleEvent> EventFromName(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  for (LifecycleEvent e : kEvents) {
    if (name == LifecycleEventName(e)) return e;
  }
  return std::nullopt;
}

}  // namespace

std::variant<LifecycleEvent, ApiError> ParseLifecycleRequest(std::string_view body_text) {
  std::variant<json, ApiError> parsed = ParseClientJson(body_text);
  if (ApiError* e = std::get_if<ApiError>(&parsed)) return std::move(*e);
  const json& body = std::get<json>(parsed);
  auto event = body.is_object() ? body.find("event") : body.end();
  const bool named = body.is_object() && event != body.end() && event->is_string();
  if (std::optional<LifecycleEvent> e = named ? EventFromName(event->get<std::string>()) : std::nullopt) return *e;
  return BadRequest("expected {\"event\": one of ON_CREATE, ON_START, ON_RESUME, ON_PAUSE, ON_STOP, ON_DESTROY}",
                    "event", "invalid_value");
}

PowerState PowerUpdate::Apply(PowerState last) const {
  if (charging) last.charging = *charging;
  if (battery_percent) last.battery_percent = *battery_percent;
  if (power_save) last.power_save = *power_save;
  if (battery_low) last.battery_low = *battery_low;
  return last;
}

std::variant<PowerUpdate, ApiError> ParsePowerRequest(std::string_view body_text) {
  std::variant<json, ApiError> parsed = ParseClientJson(body_text);
  if (ApiError* e = std::get_if<ApiError>(&parsed)) return std::move(*e);
  const json& body = std::get<json>(parsed);
  if (!body.is_object() || body.empty()) {
    return ApiErrorOf(400, "expected an object with any of charging, battery_percent, power_save, battery_low",
                      "invalid_value");
  }
  PowerUpdate u;
  for (const auto& [key, v] : body.items()) {
    std::optional<bool>* flag = key == "charging"     ? &u.charging
                                : key == "power_save"  ? &u.power_save
                                : key == "battery_low" ? &u.battery_low
                                                       : nullptr;
    if (flag != nullptr) {
      if (!v.is_boolean()) return BadRequest("'" + key + "' must be a boolean", key, "invalid_type");
      *flag = v.get<bool>();
    } else if (key == "battery_percent") {
      if (!v.is_number_integer() || v.get<int64_t>() < -1 || v.get<int64_t>() > 100) {
        return BadRequest("'battery_percent' must be an integer from -1 (unknown) to 100", key, "invalid_value");
      }
      u.battery_percent = static_cast<int32_t>(v.get<int64_t>());
    } else {
      return BadRequest("unknown field '" + key + "'", key, "unknown_field");
    }
  }
  return u;
}

std::variant<TokenizeRequest, ApiError> ParseTokenizeRequest(std::string_view body_text) {
  std::variant<json, ApiError> parsed = ParseClientJson(body_text);
  if (ApiError* e = std::get_if<ApiError>(&parsed)) return std::move(*e);
  const json& body = std::get<json>(parsed);
  auto content = body.is_object() ? body.find("content") : body.end();
  if (!body.is_object() || content == body.end() || !content->is_string()) {
    return BadRequest("expected {\"content\": string, \"add_special\": boolean}", "content", "invalid_type");
  }
  TokenizeRequest r;
  r.content = content->get<std::string>();
  auto add_special = body.find("add_special");
  if (add_special != body.end() && !add_special->is_boolean()) {
    return BadRequest("'add_special' must be a boolean", "add_special", "invalid_type");
  }
  r.add_special = add_special != body.end() && add_special->get<bool>();
  return r;
}

}  // namespace valet
