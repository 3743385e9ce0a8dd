// The binary and unary operators of template expressions (`+ - * / // % **
// ~ == != < > <= >= in`, `not`, unary minus). `+` joins a string with a
// number as the reference renderer does; results larger than `max_bytes`
// are refused so repeated doubling cannot exhaust memory.
#pragma once

#include <string_view>

#include "chat/value.h"
#include "valet/status.h"

namespace valet::chat {

Result<Value> ApplyBinary(std::string_view op, const Value& a, const Value& b, size_t max_bytes);
Result<Value> ApplyUnary(std::string_view op, const Value& v);

}  // namespace valet::chat
