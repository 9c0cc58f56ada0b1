#include "c_api/c_api_errors.h"

namespace voxrt::c_api {
namespace {

thread_local std::string last_error;

// voxrt_status mirrors voxrt::StatusCode value for value.
static_assert(static_cast<int>(StatusCode::kOk) == VOXRT_OK);
static_assert(static_cast<int>(StatusCode::kInvalidArgument) == VOXRT_INVALID_ARGUMENT);
static_assert(static_cast<int>(StatusCode::kNotFound) == VOXRT_NOT_FOUND);
static_assert(static_cast<int>(StatusCode::kUnsupported) == VOXRT_UNSUPPORTED);
static_assert(static_cast<int>(StatusCode::kOutOfRange) == VOXRT_OUT_OF_RANGE);
static_assert(static_cast<int>(StatusCode::kCorrupt) == VOXRT_CORRUPT);
static_assert(static_cast<int>(StatusCode::kVersionMismatch) == VOXRT_VERSION_MISMATCH);
static_assert(static_cast<int>(StatusCode::kResourceExhausted) == VOXRT_RESOURCE_EXHAUSTED);
static_assert(static_cast<int>(StatusCode::kFailedPrecondition) == VOXRT_FAILED_PRECONDITION);
static_assert(static_cast<int>(StatusCode::kIoError) == VOXRT_IO_ERROR);
static_assert(static_cast<int>(StatusCode::kInternal) == VOXRT_INTERNAL);

}  // namespace

voxrt_status to_c_status(StatusCode code) {
  return static_cast<voxrt_status>(code);
}

voxrt_status fail(const Status& status) {
  return fail(to_c_status(status.code()), status.message());
}

voxrt_status fail(voxrt_status code, std::string message) {
  last_error = std::move(message);
  return code;
}

}  // namespace voxrt::c_api

extern "C" const char* voxrt_last_error(void) {
  return voxrt::c_api::last_error.c_str();
}
