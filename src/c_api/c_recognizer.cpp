// voxrt_recognizer_*: a SharedRecognizer (embed/shared_recognizer.h) behind a C handle.
#include "c_api/c_api_errors.h"
#include "c_api/c_api_handles.h"

using voxrt::c_api::guarded;

extern "C" {

void voxrt_recognizer_options_init(voxrt_recognizer_options* options) {
  if (options == nullptr) return;
  const voxrt::stream::RecognizerConfig defaults;
  *options = voxrt_recognizer_options{};
  options->struct_size = sizeof(voxrt_recognizer_options);
  options->max_streams = 64;
  options->max_batch = defaults.max_batch;
  options->threads = defaults.threads;
  options->decoder = VOXRT_DECODER_GREEDY;
  options->beam_width = 0;  // the model's tuned value with an LM, else the built-in default
  options->lm_path = nullptr;
  options->vad = VOXRT_VAD_ENERGY;
}

voxrt_status voxrt_recognizer_create(const voxrt_engine* engine,
                                     const voxrt_recognizer_options* options,
                                     voxrt_recognizer** recognizer) {
  if (recognizer != nullptr) *recognizer = nullptr;
  return guarded("voxrt_recognizer_create", [&]() -> voxrt::Status {
    if (engine == nullptr || recognizer == nullptr) {
      return voxrt::invalid_argument("engine and recognizer must not be NULL");
    }
    voxrt_recognizer_options given;
    VOXRT_RETURN_IF_ERROR(voxrt::c_api::read_options(options, voxrt_recognizer_options_init,
                                                     "voxrt_recognizer_options", given));
    voxrt::stream::RecognizerConfig config;
    config.engine_path = engine->path;
    config.max_streams = given.max_streams;
    config.max_batch = given.max_batch;
    config.threads = given.threads;
    switch (given.decoder) {
      case VOXRT_DECODER_GREEDY: config.decoder = voxrt::stream::DecoderKind::kGreedy; break;
      case VOXRT_DECODER_BEAM: config.decoder = voxrt::stream::DecoderKind::kBeam; break;
      default:
        return voxrt::invalid_argument("options.decoder is ", static_cast<int>(given.decoder),
                                       ", expected VOXRT_DECODER_GREEDY (0) or _BEAM (1)");
    }
    if (given.beam_width < 0)
      return voxrt::invalid_argument("options.beam_width is ", given.beam_width,
                                     ", expected 0 (the model's) or 1..1024");
    if (given.beam_width > 0) config.decoding.beam_width = given.beam_width;
    if (given.lm_path != nullptr) config.lm_path = given.lm_path;
    switch (given.vad) {
      case VOXRT_VAD_OFF: config.vad = voxrt::stream::VadKind::kOff; break;
      case VOXRT_VAD_ENERGY: config.vad = voxrt::stream::VadKind::kEnergy; break;
      default:
        return voxrt::invalid_argument("options.vad is ", static_cast<int>(given.vad),
                                       ", expected VOXRT_VAD_OFF (0) or _ENERGY (1)");
    }
    VOXRT_ASSIGN_OR_RETURN(auto shared, voxrt::embed::SharedRecognizer::create(config));
    auto handle = std::make_unique<voxrt_recognizer>();
    handle->shared = std::move(shared);
    *recognizer = handle.release();
    return voxrt::Status::ok();
  });
}

void voxrt_recognizer_destroy(voxrt_recognizer* recognizer) {
  delete recognizer;
}

voxrt_status voxrt_recognizer_decode(voxrt_recognizer* recognizer, voxrt_stream* const* streams,
                                     size_t count, int* engine_calls) {
  if (engine_calls != nullptr) *engine_calls = 0;
  return guarded("voxrt_recognizer_decode", [&]() -> voxrt::Status {
    if (recognizer == nullptr || (streams == nullptr && count > 0)) {
      return voxrt::invalid_argument("recognizer and streams must not be NULL");
    }
    std::vector<voxrt::embed::SharedStream*> shared;
    shared.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (streams[i] == nullptr) return voxrt::invalid_argument("streams[", i, "] is NULL");
      shared.push_back(streams[i]->shared.get());
    }
    VOXRT_ASSIGN_OR_RETURN(const int calls, recognizer->shared->decode(shared));
    if (engine_calls != nullptr) *engine_calls = calls;
    return voxrt::Status::ok();
  });
}

}  // extern "C"
