// The durable-task URLs, /v1/tasks/{id} and /v1/tasks/{id}/result. The id
// comes from the client: it is bounded before it is decoded, percent-decoded
// once, and must then be a task key (CheckTaskKey: 1-128 of [A-Za-z0-9_.-],
// not starting with '.'), so no URL ever names a file outside the journal
// directory.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "server/api_error.h"

namespace valet {

inline constexpr std::string_view kTasksPrefix = "/v1/tasks/";

struct TaskPath {
  std::string id;       // a valid task key
  bool result = false;  // .../result
};

// nullopt when `path` is not under /v1/tasks/ in one of the two shapes (no
// route: 404); a 400 ("invalid_task_id") for an id that is too long, badly
// escaped or no task key.
std::optional<std::variant<TaskPath, ApiError>> ParseTaskPath(std::string_view path);

}  // namespace valet
