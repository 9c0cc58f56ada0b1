// voxrt_stream_*: feeding audio, decoding and polling results.
#include <cstddef>
#include <cstring>
#include <new>

#include "audio/audio_io.h"
#include "c_api/c_api_errors.h"
#include "c_api/c_api_handles.h"

using voxrt::c_api::guarded;

namespace {

voxrt_endpoint to_c_endpoint(voxrt::decode::EndpointReason reason) {
  using voxrt::decode::EndpointReason;
  switch (reason) {
    case EndpointReason::kNone: return VOXRT_ENDPOINT_NONE;
    case EndpointReason::kRule1TrailingSilence: return VOXRT_ENDPOINT_TRAILING_SILENCE;
    case EndpointReason::kRule2TrailingSilenceAfterSpeech:
      return VOXRT_ENDPOINT_SILENCE_AFTER_SPEECH;
    case EndpointReason::kRule3MaxUtteranceLength: return VOXRT_ENDPOINT_MAX_UTTERANCE_LENGTH;
    case EndpointReason::kVadEndOfSpeech: return VOXRT_ENDPOINT_VAD_END_OF_SPEECH;
  }
  return VOXRT_ENDPOINT_NONE;
}

// A result, its words and their text in one allocation, so voxrt_result_destroy frees it whole
// whatever the caller did with the pointers.
voxrt_result* copy_result(const voxrt::stream::StreamResult& r) {
  const auto& words = r.result.words;
  std::size_t text_bytes = r.result.text.size() + 1;
  for (const auto& w : words) text_bytes += w.word.size() + 1;
  const std::size_t words_offset = sizeof(voxrt_result);
  const std::size_t text_offset = words_offset + words.size() * sizeof(voxrt_word);
  static_assert(sizeof(voxrt_result) % alignof(voxrt_word) == 0);
  auto* block = new std::byte[text_offset + text_bytes];
  auto* result = new (block) voxrt_result{};
  auto* word_array = reinterpret_cast<voxrt_word*>(block + words_offset);
  char* text = reinterpret_cast<char*>(block + text_offset);
  auto copy_text = [&](const std::string& from) {
    char* at = text;
    std::memcpy(at, from.c_str(), from.size() + 1);
    text += from.size() + 1;
    return at;
  };
  result->text = copy_text(r.result.text);
  for (std::size_t i = 0; i < words.size(); ++i) {
    new (word_array + i)
        voxrt_word{copy_text(words[i].word), words[i].start_s, words[i].end_s, words[i].confidence};
  }
  result->is_final = r.result.is_final ? 1 : 0;
  result->utterance = r.utterance;
  result->endpoint = to_c_endpoint(r.endpoint);
  result->words = words.empty() ? nullptr : word_array;
  result->word_count = words.size();
  return result;
}

voxrt::Status feed(voxrt_stream* stream, const float* samples, size_t count) {
  if (stream == nullptr) return voxrt::invalid_argument("stream must not be NULL");
  if (samples == nullptr && count > 0) return voxrt::invalid_argument("samples is NULL");
  if (count == 0) return voxrt::Status::ok();
  return stream->shared->stream().accept_pcm(std::span<const float>(samples, count));
}

}  // namespace

extern "C" {

void voxrt_stream_options_init(voxrt_stream_options* options) {
  if (options == nullptr) return;
  const voxrt::stream::StreamOptions defaults;
  *options = voxrt_stream_options{};
  options->struct_size = sizeof(voxrt_stream_options);
  options->sample_rate_hz = defaults.sample_rate_hz;
  options->hotwords = nullptr;
  options->hotword_count = 0;
  options->hotword_bonus = -1.0f;  // the model's tuned value, else the built-in default
}

voxrt_status voxrt_stream_create(voxrt_recognizer* recognizer, const voxrt_stream_options* options,
                                 voxrt_stream** stream) {
  if (stream != nullptr) *stream = nullptr;
  return guarded("voxrt_stream_create", [&]() -> voxrt::Status {
    if (recognizer == nullptr || stream == nullptr) {
      return voxrt::invalid_argument("recognizer and stream must not be NULL");
    }
    voxrt_stream_options given;
    VOXRT_RETURN_IF_ERROR(voxrt::c_api::read_options(options, voxrt_stream_options_init,
                                                     "voxrt_stream_options", given));
    voxrt::stream::StreamOptions stream_options;
    stream_options.sample_rate_hz = given.sample_rate_hz;
    if (given.hotword_bonus >= 0.0f) stream_options.decoding.hotword_bonus = given.hotword_bonus;
    if (given.hotwords == nullptr && given.hotword_count > 0) {
      return voxrt::invalid_argument("options.hotwords is NULL with hotword_count ",
                                     given.hotword_count);
    }
    for (size_t i = 0; i < given.hotword_count; ++i) {
      if (given.hotwords[i] == nullptr)
        return voxrt::invalid_argument("options.hotwords[", i, "] is NULL");
      stream_options.hotwords.emplace_back(given.hotwords[i]);
    }
    VOXRT_ASSIGN_OR_RETURN(auto shared, recognizer->shared->open_stream(stream_options));
    auto handle = std::make_unique<voxrt_stream>();
    handle->shared = std::move(shared);
    *stream = handle.release();
    return voxrt::Status::ok();
  });
}

void voxrt_stream_destroy(voxrt_stream* stream) {
  delete stream;
}

voxrt_status voxrt_stream_accept_f32(voxrt_stream* stream, const float* samples, size_t count) {
  return guarded("voxrt_stream_accept_f32", [&] { return feed(stream, samples, count); });
}

voxrt_status voxrt_stream_accept_s16(voxrt_stream* stream, const int16_t* samples, size_t count) {
  return guarded("voxrt_stream_accept_s16", [&]() -> voxrt::Status {
    if (stream == nullptr) return voxrt::invalid_argument("stream must not be NULL");
    if (samples == nullptr && count > 0) return voxrt::invalid_argument("samples is NULL");
    stream->converted.resize(count);
    for (size_t i = 0; i < count; ++i) stream->converted[i] = samples[i] / 32768.0f;
    return feed(stream, stream->converted.data(), count);
  });
}

voxrt_status voxrt_stream_input_finished(voxrt_stream* stream) {
  return guarded("voxrt_stream_input_finished", [&]() -> voxrt::Status {
    if (stream == nullptr) return voxrt::invalid_argument("stream must not be NULL");
    return stream->shared->stream().input_finished();
  });
}

voxrt_status voxrt_stream_decode(voxrt_stream* stream) {
  return guarded("voxrt_stream_decode", [&]() -> voxrt::Status {
    if (stream == nullptr) return voxrt::invalid_argument("stream must not be NULL");
    voxrt::embed::SharedStream* one = stream->shared.get();
    return one->owner().decode(std::span<voxrt::embed::SharedStream* const>(&one, 1)).status();
  });
}

int voxrt_stream_is_finished(const voxrt_stream* stream) {
  return stream != nullptr && stream->shared->stream().finished() ? 1 : 0;
}

voxrt_status voxrt_stream_poll(voxrt_stream* stream, voxrt_result** result) {
  if (result != nullptr) *result = nullptr;
  return guarded("voxrt_stream_poll", [&]() -> voxrt::Status {
    if (stream == nullptr || result == nullptr) {
      return voxrt::invalid_argument("stream and result must not be NULL");
    }
    for (auto& r : stream->shared->stream().take_results()) stream->pending.push_back(std::move(r));
    if (stream->pending.empty()) return voxrt::Status::ok();
    *result = copy_result(stream->pending.front());
    stream->pending.pop_front();
    return voxrt::Status::ok();
  });
}

void voxrt_result_destroy(voxrt_result* result) {
  // Every member is trivially destructible: releasing copy_result's block is enough.
  delete[] reinterpret_cast<std::byte*>(result);
}

voxrt_status voxrt_read_audio_file(const char* path, float** samples, size_t* count,
                                   int* sample_rate_hz) {
  if (samples != nullptr) *samples = nullptr;
  if (count != nullptr) *count = 0;
  return guarded("voxrt_read_audio_file", [&]() -> voxrt::Status {
    if (path == nullptr || samples == nullptr || count == nullptr || sample_rate_hz == nullptr) {
      return voxrt::invalid_argument("path, samples, count and sample_rate_hz must not be NULL");
    }
    VOXRT_ASSIGN_OR_RETURN(auto clip, voxrt::audio::read_audio_file(path));
    auto copy = std::make_unique<float[]>(clip.samples.size());
    std::memcpy(copy.get(), clip.samples.data(), clip.samples.size() * sizeof(float));
    *samples = copy.release();
    *count = clip.samples.size();
    *sample_rate_hz = clip.sample_rate_hz;
    return voxrt::Status::ok();
  });
}

void voxrt_samples_destroy(float* samples) {
  delete[] samples;
}

}  // extern "C"
