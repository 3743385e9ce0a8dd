// Status and Result<T>: the error values used everywhere inside valet.
// Errors are values, never exceptions: a corrupt file or a bad flag is an
// expected outcome, and the C API must not let anything unwind through it.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

#include "valet/export.h"

namespace valet {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // caller passed something malformed (bad flag, bad tier)
  kNotFound,          // missing file, tensor or key
  kCorrupt,           // input file violates its format
  kUnsupported,       // well-formed but not something valet handles
  kOutOfRange,        // request exceeds a limit (context, budget)
  kResourceExhausted, // pool or store is full
  kIo,                // the OS refused a read/write/map
  kInternal,          // a broken invariant surfaced as an error
  kAborted,           // stopped early on request; nothing changed, safe to redo
};

VALET_API const char* StatusCodeName(StatusCode code);

class [[nodiscard]] VALET_API Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Corrupt: <message>", for logs and one-line CLI errors.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIo, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result built from an OK status carries no value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace valet

#define VALET_CONCAT_INNER_(a, b) a##b
#define VALET_CONCAT_(a, b) VALET_CONCAT_INNER_(a, b)

// Propagates a non-OK Status out of the enclosing function.
#define VALET_RETURN_IF_ERROR(expr)              \
  do {                                           \
    ::valet::Status valet_status_ = (expr);      \
    if (!valet_status_.ok()) return valet_status_; \
  } while (0)

// `VALET_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or propagates the error.
#define VALET_ASSIGN_OR_RETURN(lhs, rexpr) \
  VALET_ASSIGN_OR_RETURN_IMPL_(VALET_CONCAT_(valet_result_, __LINE__), lhs, rexpr)
#define VALET_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                 \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
