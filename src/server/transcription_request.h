// POST /v1/audio/transcriptions (OpenAI-compatible): the multipart/form-data body, its audio,
// and the response formats. No networking here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "decode/decoding_result.h"
#include "stream/encoder_decoder/stream_choices.h"
#include "voxrt/status.h"

namespace voxrt::server {

struct TranscriptionRequest {
  std::string file_bytes;  // the uploaded audio file
  std::string file_name;
  std::string model;
  std::string response_format = "json";  // json | text | verbose_json | srt | vtt
  // Whisper-family models: `prompt` (the initial prompt), `temperature` (0..1) and voxrt's
  // `temperature_fallback` (true/false); other models refuse them (400 bad_config).
  stream::WhisperStreamChoices whisper;
};

// `content_type` is the request's Content-Type header (multipart/form-data; boundary=...).
Expected<TranscriptionRequest> parse_transcription_request(std::string_view content_type,
                                                           std::string_view body);

struct TranscriptionSegment {
  std::string text;
  std::vector<decode::WordResult> words;
  // The model's own segments with times (Whisper-family models decoding with timestamps): the
  // verbose_json segments and the srt/vtt cues, instead of one per final timed by its words.
  std::vector<decode::SegmentResult> timed;
  std::string language;  // Whisper-family models: the language's code
};
struct TranscriptionResponse {
  std::string content_type;
  std::string body;
};
TranscriptionResponse format_transcription(const std::vector<TranscriptionSegment>& segments,
                                           const std::string& response_format, double duration_s);

}  // namespace voxrt::server
