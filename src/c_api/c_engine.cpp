// voxrt_engine_*: building and loading engine files.
#include "c_api/c_api_errors.h"
#include "c_api/c_api_handles.h"
#include "embed/streaming_engine_build.h"
#include "voxrt/engine.h"

using voxrt::c_api::fail;
using voxrt::c_api::guarded;

extern "C" {

uint32_t voxrt_abi_version(void) {
  return VOXRT_C_ABI_VERSION;
}

const char* voxrt_version(void) {
  return VOXRT_VERSION_TEXT;
}

const char* voxrt_status_name(voxrt_status status) {
  if (status < VOXRT_OK || status > VOXRT_INTERNAL) return "unknown";
  return voxrt::status_code_name(static_cast<voxrt::StatusCode>(status)).data();
}

void voxrt_build_options_init(voxrt_build_options* options) {
  if (options == nullptr) return;
  const voxrt::embed::StreamingBuildOptions defaults;
  *options = voxrt_build_options{};
  options->struct_size = sizeof(voxrt_build_options);
  options->threads = defaults.threads;
  options->autotune = defaults.autotune ? 1 : 0;
  options->timing_cache_path = nullptr;
  options->max_batch = defaults.max_batch;
}

voxrt_status voxrt_engine_build(const char* onnx_path, const char* engine_path,
                                const voxrt_build_options* options) {
  return guarded("voxrt_engine_build", [&]() -> voxrt::Status {
    if (onnx_path == nullptr || engine_path == nullptr) {
      return voxrt::invalid_argument("onnx_path and engine_path must not be NULL");
    }
    voxrt_build_options given;
    VOXRT_RETURN_IF_ERROR(voxrt::c_api::read_options(options, voxrt_build_options_init,
                                                     "voxrt_build_options", given));
    voxrt::embed::StreamingBuildOptions build;
    build.threads = given.threads;
    build.autotune = given.autotune != 0;
    build.timing_cache_path = given.timing_cache_path ? given.timing_cache_path : "";
    build.max_batch = given.max_batch;
    return voxrt::embed::build_streaming_engine(onnx_path, engine_path, build);
  });
}

voxrt_status voxrt_engine_load(const char* engine_path, voxrt_engine** engine) {
  if (engine != nullptr) *engine = nullptr;
  return guarded("voxrt_engine_load", [&]() -> voxrt::Status {
    if (engine_path == nullptr || engine == nullptr) {
      return voxrt::invalid_argument("engine_path and engine must not be NULL");
    }
    // Loading checks the file (magic, version, checksum, target); the recognizer loads its own
    // instance, so only what the handle reports is kept here.
    VOXRT_ASSIGN_OR_RETURN(auto loaded, voxrt::Engine::load_file(engine_path));
    auto handle = std::make_unique<voxrt_engine>();
    handle->path = engine_path;
    handle->metadata = loaded->metadata();
    *engine = handle.release();
    return voxrt::Status::ok();
  });
}

void voxrt_engine_destroy(voxrt_engine* engine) {
  delete engine;
}

const char* voxrt_engine_metadata(const voxrt_engine* engine, const char* key) {
  if (engine == nullptr || key == nullptr) return nullptr;
  auto it = engine->metadata.find(key);
  return it == engine->metadata.end() ? nullptr : it->second.c_str();
}

}  // extern "C"
