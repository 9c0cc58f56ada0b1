// The C API's error channel: a thread's last error message, and the guard that turns a Status
// (or an exception that escaped the C++ layers, e.g. std::bad_alloc) into a voxrt_status, so
// nothing C++ crosses the C boundary.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "voxrt/status.h"
#include "voxrt/voxrt_c.h"

namespace voxrt::c_api {

voxrt_status fail(const Status& status);
voxrt_status fail(voxrt_status code, std::string message);
voxrt_status to_c_status(StatusCode code);

// Options from the caller, or the defaults `init` writes when there are none; a struct of
// another size (another ABI version) is refused. `type_name` is the C type, for the message.
template <typename Options>
Status read_options(const Options* given, void (*init)(Options*), const char* type_name,
                    Options& out) {
  init(&out);
  if (given == nullptr) return Status::ok();
  if (given->struct_size != sizeof(Options)) {
    return version_mismatch("options.struct_size is ", given->struct_size, ", this library's ",
                            type_name, " has ", sizeof(Options), " bytes (call ", type_name,
                            "_init)");
  }
  out = *given;
  return Status::ok();
}

// Runs `body` (returning voxrt::Status) and converts the outcome; `where` names the C function.
template <typename Body>
voxrt_status guarded(const char* where, Body&& body) noexcept {
  try {
    Status status = body();
    if (status) return VOXRT_OK;
    return fail(status.with_context(where));
  } catch (const std::bad_alloc&) {
    return fail(VOXRT_RESOURCE_EXHAUSTED, std::string(where) + ": out of memory");
  } catch (const std::exception& e) {
    return fail(VOXRT_INTERNAL, std::string(where) + ": unexpected exception: " + e.what());
  } catch (...) {
    return fail(VOXRT_INTERNAL, std::string(where) + ": unexpected exception");
  }
}

}  // namespace voxrt::c_api
