// The bodies of the small POST endpoints, parsed apart from HTTP so they can
// be tested as functions: /v1/lifecycle, /v1/power and /tokenize. All go through
// ParseClientJson (client_json.h) and its nesting limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "server/api_error.h"
#include "valet/scheduler.h"

namespace valet {

// {"event": "ON_STOP"} (any case) -> the event; else a 400 naming "event".
std::variant<LifecycleEvent, ApiError> ParseLifecycleRequest(std::string_view body);

// A power event: any of {"charging": bool, "battery_percent": -1..100,
// "power_save": bool, "battery_low": bool}; the fields not named keep their
// last reported values (Android reports them in separate broadcasts).
struct PowerUpdate {
  std::optional<bool> charging;
  std::optional<int32_t> battery_percent;
  std::optional<bool> power_save;
  std::optional<bool> battery_low;

  PowerState Apply(PowerState last) const;
};
// At least one field, no other, each of its type and range; else a 400.
std::variant<PowerUpdate, ApiError> ParsePowerRequest(std::string_view body);

struct TokenizeRequest {
  std::string content;
  bool add_special = false;  // BOS, as llama-server's flag means
};
// {"content": string, "add_special": boolean (optional)}; else a 400.
std::variant<TokenizeRequest, ApiError> ParseTokenizeRequest(std::string_view body);

}  // namespace valet
