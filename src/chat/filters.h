// The filters (`x | name(args)`) and tests (`x is name(args)`) templates may
// use. The parser rejects names not listed here, so a template that needs a
// missing filter fails at Parse with the filter's name, not halfway through a render.
#pragma once

#include <string_view>

#include "chat/value.h"
#include "valet/status.h"

namespace valet::chat {

bool IsKnownFilter(std::string_view name);
bool IsKnownTest(std::string_view name);

Result<Value> ApplyFilter(std::string_view name, const Value& operand, const CallArgs& args);
Result<bool> ApplyTest(std::string_view name, const Value& operand, const CallArgs& args);

}  // namespace valet::chat
