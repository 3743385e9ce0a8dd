#include "common/json.h"

#include <fstream>
#include <sstream>

namespace valet {

namespace {

// Validates syntax and nesting without building anything.
class DepthCheck {
 public:
  using json = nlohmann::json;
  explicit DepthCheck(int max_depth) : max_depth_(max_depth) {}

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) { return true; }
  bool string(json::string_t&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool key(json::string_t&) { return true; }
  bool start_object(size_t) { return Enter(); }
  bool start_array(size_t) { return Enter(); }
  bool end_object() { return Leave(); }
  bool end_array() { return Leave(); }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception&) {
    result_.error_position = position;
    return false;
  }

  JsonCheck& result() { return result_; }

 private:
  bool Enter() {
    result_.too_deep = ++depth_ > max_depth_;
    return !result_.too_deep;
  }
  bool Leave() {
    --depth_;
    return true;
  }

  const int max_depth_;
  int depth_ = 0;
  JsonCheck result_;
};

}  // namespace

JsonCheck CheckJson(std::string_view text, int max_depth) {
  DepthCheck check(max_depth);
  check.result().ok = nlohmann::json::sax_parse(text, &check);
  return check.result();
}

Result<Json> ParseJson(std::string_view text, int max_depth) {
  const JsonCheck check = CheckJson(text, max_depth);
  if (check.too_deep) {
    return Corrupt("JSON nests objects and arrays deeper than " + std::to_string(max_depth) + " levels");
  }
  if (!check.ok) return Corrupt("invalid JSON at byte " + std::to_string(check.error_position));
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Corrupt("invalid JSON");
  return parsed;
}

Result<Json> ReadJsonFile(const std::string& path, int max_depth) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (!in.good() && !in.eof()) return IoError("cannot read " + path);
  Result<Json> parsed = ParseJson(buffer.str(), max_depth);
  if (!parsed.ok()) return Status(parsed.status().code(), path + ": " + parsed.status().message());
  return parsed;
}

const Json* FindMember(const Json& value, std::string_view key) {
  if (!value.is_object()) return nullptr;
  auto it = value.find(key);
  return it == value.end() ? nullptr : &*it;
}

std::string DumpJson(const Json& value, int indent) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

}  // namespace valet
