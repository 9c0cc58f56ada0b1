// Errors are values at the library boundary: every fallible call returns Status or Expected<T>,
// and no exception crosses the public API. Messages say what was expected, what was found and
// where (file, node, op, offset).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace voxrt {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kUnsupported,
  kOutOfRange,
  kCorrupt,
  kVersionMismatch,
  kResourceExhausted,
  kFailedPrecondition,
  kIoError,
  kInternal,
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "where: message", for adding the file, node or offset as an error travels up.
  Status with_context(std::string_view where) const;
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Concatenates anything streamable; used to build error messages without <format> (GCC 12).
template <typename... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <typename... Parts>
Status invalid_argument(const Parts&... parts) {
  return {StatusCode::kInvalidArgument, str_cat(parts...)};
}
template <typename... Parts>
Status unsupported(const Parts&... parts) {
  return {StatusCode::kUnsupported, str_cat(parts...)};
}
template <typename... Parts>
Status not_found(const Parts&... parts) {
  return {StatusCode::kNotFound, str_cat(parts...)};
}
template <typename... Parts>
Status corrupt(const Parts&... parts) {
  return {StatusCode::kCorrupt, str_cat(parts...)};
}
template <typename... Parts>
Status internal_error(const Parts&... parts) {
  return {StatusCode::kInternal, str_cat(parts...)};
}
template <typename... Parts>
Status io_error(const Parts&... parts) {
  return {StatusCode::kIoError, str_cat(parts...)};
}
template <typename... Parts>
Status out_of_range(const Parts&... parts) {
  return {StatusCode::kOutOfRange, str_cat(parts...)};
}
template <typename... Parts>
Status failed_precondition(const Parts&... parts) {
  return {StatusCode::kFailedPrecondition, str_cat(parts...)};
}
template <typename... Parts>
Status resource_exhausted(const Parts&... parts) {
  return {StatusCode::kResourceExhausted, str_cat(parts...)};
}
template <typename... Parts>
Status version_mismatch(const Parts&... parts) {
  return {StatusCode::kVersionMismatch, str_cat(parts...)};
}

// A value or the Status that explains why there is none (std::expected arrives in C++23).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}         // NOLINT: implicit by design
  Expected(Status status) : storage_(std::move(status)) {}  // NOLINT: implicit by design

  bool has_value() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<T>(storage_); }
  const T& value() const& { return std::get<T>(storage_); }
  T&& value() && { return std::get<T>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // The error; Status::ok() when a value is present.
  Status status() const { return has_value() ? Status::ok() : std::get<Status>(storage_); }

 private:
  std::variant<T, Status> storage_;
};

}  // namespace voxrt

#define VOXRT_CONCAT_INNER(a, b) a##b
#define VOXRT_CONCAT(a, b) VOXRT_CONCAT_INNER(a, b)

#define VOXRT_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::voxrt::Status voxrt_status_ = (expr);           \
    if (!voxrt_status_.is_ok()) return voxrt_status_; \
  } while (0)

#define VOXRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.has_value()) return tmp.status();        \
  lhs = std::move(tmp).value()

// VOXRT_ASSIGN_OR_RETURN(auto x, make_x()); declares x or returns the error.
#define VOXRT_ASSIGN_OR_RETURN(lhs, expr) \
  VOXRT_ASSIGN_OR_RETURN_IMPL(VOXRT_CONCAT(voxrt_expected_, __LINE__), lhs, expr)
