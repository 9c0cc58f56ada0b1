#include "voxrt/status.h"

namespace voxrt {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kCorrupt: return "corrupt";
    case StatusCode::kVersionMismatch: return "version mismatch";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

Status Status::with_context(std::string_view where) const {
  if (is_ok()) return *this;
  return {code_, str_cat(where, ": ", message_)};
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return str_cat(status_code_name(code_), ": ", message_);
}

}  // namespace voxrt
