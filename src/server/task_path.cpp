#include "server/task_path.h"

#include "durable/task_journal.h"

namespace valet {

namespace {

// A task key is at most 128 bytes, each at most 3 once escaped.
constexpr size_t kMaxEscapedId = 3 * 128;

ApiError InvalidId(std::string message) { return BadRequest(std::move(message), "id", "invalid_task_id"); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> PercentDecode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    const int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

}  // namespace

std::optional<std::variant<TaskPath, ApiError>> ParseTaskPath(std::string_view path) {
  if (path.substr(0, kTasksPrefix.size()) != kTasksPrefix) return std::nullopt;
  std::string_view rest = path.substr(kTasksPrefix.size());
  TaskPath out;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash + 1) != "result") return std::nullopt;
    out.result = true;
    rest = rest.substr(0, slash);
  }
  if (rest.empty()) return std::nullopt;
  if (rest.size() > kMaxEscapedId) {
    return InvalidId("the task id is longer than " + std::to_string(kMaxEscapedId) + " bytes");
  }
  std::optional<std::string> id = PercentDecode(rest);
  if (!id) return InvalidId("the task id has a malformed percent escape");
  if (!CheckTaskKey(*id).ok()) {
    return InvalidId("a task id is 1 to 128 of A-Z a-z 0-9 _ . - and does not start with '.'");
  }
  out.id = std::move(*id);
  return out;
}

}  // namespace valet
