// The Vosk-compatible WebSocket protocol (docs/server.md): parsing and validating what a client
// sends as text, and building the JSON replies. No networking here, so it is cheap to test.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decode/decoding_choices.h"
#include "decode/decoding_result.h"
#include "stream/encoder_decoder/stream_choices.h"
#include "voxrt/status.h"

namespace voxrt::server {

// Largest phrase_list a client may send, and the longest phrase in it.
inline constexpr std::size_t kMaxPhrases = 1000;
inline constexpr std::size_t kMaxPhraseBytes = 256;
inline constexpr int kMinSampleRateHz = 1000;
inline constexpr int kMaxSampleRateHz = 384000;

struct ClientConfig {
  // Absent: the stream keeps the default (16 kHz, as Vosk's server assumes).
  std::optional<int> sample_rate_hz;
  bool words = false;
  std::vector<std::string> phrase_list;
  // voxrt's per-stream decoding choices (docs/server.md): "decoder" (greedy | beam), "lm"
  // (false: beam search without the server's LM), "beam_width", "lm_weight", "word_bonus",
  // "hotword_bonus", "lexicon_only", "timestamps" (encoder_decoder models: segment times).
  std::optional<decode::DecoderKind> decoder;
  std::optional<bool> use_lm;
  decode::DecodingChoices decoding;
  // encoder_decoder (Whisper) models: "prompt" (the initial prompt), "temperature" (0..1) and
  // "temperature_fallback" (true/false), as the OpenAI endpoint's form fields.
  stream::WhisperStreamChoices whisper;
};

struct ClientMessage {
  enum class Kind { kConfig, kEof };
  Kind kind = Kind::kConfig;
  ClientConfig config;
};

// A text frame: {"config": {...}} or {"eof": 1}. Errors say which field was wrong and why.
Expected<ClientMessage> parse_client_text(std::string_view text);

// {"partial": "..."}; `warning` (when not empty) is added as a "warning" field.
std::string partial_json(std::string_view text, std::string_view warning = {});
// voxrt's additions to a final (Vosk clients ignore them; the live page shows them): why the
// utterance ended and the server's latency figures for it (negative: not measured).
struct FinalFigures {
  // decode::endpoint_reason_name, or "eof" for the final at the end of input.
  std::string_view endpoint;
  // Arrival of the frame that produced the utterance's first non-empty partial to its reply.
  double first_partial_ms = -1;
  // The endpoint's last frame (or the eof) to this final.
  double final_ms = -1;
};

// {"text": "...", "result": [{"word", "start", "end", "conf"}]}; result only when words is set;
// with figures also "endpoint" and "latency": {"first_partial_ms", "final_ms"}.
std::string final_json(const decode::DecodingResult& result, bool words,
                       std::string_view warning = {}, const FinalFigures* figures = nullptr);
// {"error": "...", "kind": "..."}: sent before the server closes a stream it refuses.
std::string error_json(std::string_view kind, std::string_view message);

}  // namespace voxrt::server
