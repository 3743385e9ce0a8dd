#include "server/client_json.h"

#include <cstddef>
#include <string>

namespace valet {

namespace {

using nlohmann::json;

// Validates syntax and nesting without building anything.
class DepthCheck {
 public:
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) { return true; }
  bool string(json::string_t&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool key(json::string_t&) { return true; }
  bool start_object(std::size_t) { return Enter(); }
  bool start_array(std::size_t) { return Enter(); }
  bool end_object() { return Leave(); }
  bool end_array() { return Leave(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) {
    error_position_ = position;
    return false;
  }

  bool too_deep() const { return too_deep_; }
  std::size_t error_position() const { return error_position_; }

 private:
  bool Enter() {
    too_deep_ = ++depth_ > kMaxClientJsonDepth;
    return !too_deep_;
  }
  bool Leave() {
    --depth_;
    return true;
  }

  int depth_ = 0;
  bool too_deep_ = false;
  std::size_t error_position_ = 0;
};

ApiError InvalidJson(std::string message) { return BadRequest(std::move(message), "", "invalid_json"); }

}  // namespace

std::variant<json, ApiError> ParseClientJson(std::string_view body) {
  DepthCheck check;
  if (!json::sax_parse(body, &check)) {
    if (check.too_deep()) {
      return InvalidJson("the request body nests objects and arrays deeper than " +
                         std::to_string(kMaxClientJsonDepth) + " levels");
    }
    return InvalidJson("the request body is not valid JSON (at byte " + std::to_string(check.error_position()) + ")");
  }
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return InvalidJson("the request body is not valid JSON");
  return parsed;
}

}  // namespace valet
