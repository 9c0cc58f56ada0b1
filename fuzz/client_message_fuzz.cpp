// libFuzzer target: what a client sends the server. Arbitrary bytes as a WebSocket text frame
// (parse_client_text: {"config": {...}} / {"eof": 1}) and as a multipart/form-data upload body
// (parse_transcription_request). Bad input must give an error, never a crash or an exception;
// an accepted config must respect the protocol's limits; replies must be valid JSON even for
// text that is not UTF-8.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "server/protocol.h"
#include "server/transcription_request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace voxrt::server;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto message = parse_client_text(text);
  if (message && message->kind == ClientMessage::Kind::kConfig) {
    const ClientConfig& config = message->config;
    if (config.sample_rate_hz &&
        (*config.sample_rate_hz < kMinSampleRateHz || *config.sample_rate_hz > kMaxSampleRateHz))
      __builtin_trap();
    if (config.phrase_list.size() > kMaxPhrases) __builtin_trap();
    for (const auto& phrase : config.phrase_list) {
      if (phrase.empty() || phrase.size() > kMaxPhraseBytes) __builtin_trap();
    }
  }
  // Replies that echo client text (errors, partials) stay parseable JSON.
  const std::string reply = error_json("bad_request", text);
  if (nlohmann::json::parse(reply, nullptr, false).is_discarded()) __builtin_trap();
  if (nlohmann::json::parse(partial_json(text, text), nullptr, false).is_discarded())
    __builtin_trap();

  auto request = parse_transcription_request("multipart/form-data; boundary=XyZ", text);
  if (request && request->response_format != "json" && request->response_format != "text" &&
      request->response_format != "verbose_json")
    __builtin_trap();
  return 0;
}
