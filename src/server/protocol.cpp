#include "server/protocol.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "server/client_json.h"

namespace voxrt::server {
namespace {

using json = nlohmann::json;

Expected<int> parse_sample_rate(const json& value) {
  if (!value.is_number())
    return invalid_argument("config.sample_rate must be a number, found ", value.type_name());
  const double rate = value.get<double>();
  if (!std::isfinite(rate) || rate != std::floor(rate) || rate < kMinSampleRateHz ||
      rate > kMaxSampleRateHz) {
    return invalid_argument("config.sample_rate must be a whole number of Hz in ", kMinSampleRateHz,
                            "..", kMaxSampleRateHz, ", found ", describe_client_value(value));
  }
  return static_cast<int>(rate);
}

Expected<bool> parse_flag(const json& value, std::string_view field) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer() && (value.get<long long>() == 0 || value.get<long long>() == 1))
    return value.get<long long>() == 1;
  return invalid_argument(field, " must be true, false, 0 or 1, found ",
                          describe_client_value(value));
}

Expected<ClientConfig> parse_config(const json& object) {
  if (!object.is_object())
    return invalid_argument("\"config\" must be an object, found ", object.type_name());
  ClientConfig config;
  if (auto it = object.find("sample_rate"); it != object.end()) {
    VOXRT_ASSIGN_OR_RETURN(config.sample_rate_hz, parse_sample_rate(*it));
  }
  if (auto it = object.find("words"); it != object.end()) {
    VOXRT_ASSIGN_OR_RETURN(config.words, parse_flag(*it, "config.words"));
  }
  if (auto it = object.find("phrase_list"); it != object.end()) {
    if (!it->is_array())
      return invalid_argument("config.phrase_list must be an array of strings, found ",
                              it->type_name());
    if (it->size() > kMaxPhrases)
      return invalid_argument("config.phrase_list has ", it->size(), " entries, at most ",
                              kMaxPhrases, " are allowed");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& phrase = (*it)[i];
      if (!phrase.is_string())
        return invalid_argument("config.phrase_list[", i, "] must be a string, found ",
                                phrase.type_name());
      auto text = phrase.get<std::string>();
      if (text.size() > kMaxPhraseBytes)
        return invalid_argument("config.phrase_list[", i, "] is ", text.size(), " bytes, at most ",
                                kMaxPhraseBytes, " are allowed");
      if (!text.empty()) config.phrase_list.push_back(std::move(text));
    }
  }
  if (auto it = object.find("decoder"); it != object.end()) {
    if (*it != "greedy" && *it != "beam")
      return invalid_argument("config.decoder must be \"greedy\" or \"beam\", found ", it->dump());
    config.decoder = *it == "beam" ? decode::DecoderKind::kBeam : decode::DecoderKind::kGreedy;
  }
  if (auto it = object.find("lm"); it != object.end()) {
    VOXRT_ASSIGN_OR_RETURN(config.use_lm, parse_flag(*it, "config.lm"));
  }
  if (auto it = object.find("lexicon_only"); it != object.end()) {
    VOXRT_ASSIGN_OR_RETURN(config.decoding.lexicon_only, parse_flag(*it, "config.lexicon_only"));
  }
  if (auto it = object.find("timestamps"); it != object.end()) {
    VOXRT_ASSIGN_OR_RETURN(config.decoding.timestamps, parse_flag(*it, "config.timestamps"));
  }
  auto number = [&](const char* key, auto& field) -> Status {
    auto it = object.find(key);
    if (it == object.end()) return Status::ok();
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      return invalid_argument("config.", key, " must be a number, found ", it->dump());
    using Field = typename std::remove_reference_t<decltype(field)>::value_type;
    if constexpr (std::is_integral_v<Field>) {
      if (!it->is_number_integer())
        return invalid_argument("config.", key, " must be a whole number, found ", it->dump());
      const long long value = it->get<long long>();
      // Out of int's range is out of every setting's range: clamp so validate() names it.
      field = static_cast<Field>(std::clamp<long long>(value, -1, 1 << 30));
    } else {
      field = static_cast<Field>(it->get<double>());
    }
    return Status::ok();
  };
  VOXRT_RETURN_IF_ERROR(number("beam_width", config.decoding.beam_width));
  VOXRT_RETURN_IF_ERROR(number("lm_weight", config.decoding.lm_weight));
  VOXRT_RETURN_IF_ERROR(number("word_bonus", config.decoding.word_bonus));
  VOXRT_RETURN_IF_ERROR(number("hotword_bonus", config.decoding.hotword_bonus));
  if (Status valid = config.decoding.validate(); !valid)
    return invalid_argument("config.", valid.message());
  // Whisper-family models: the stream's initial prompt and temperatures (OpenAI's names).
  if (auto it = object.find("prompt"); it != object.end()) {
    if (!it->is_string())
      return invalid_argument("config.prompt must be a string, found ", it->type_name());
    config.whisper.initial_prompt = it->get<std::string>();
  }
  VOXRT_RETURN_IF_ERROR(number("temperature", config.whisper.temperature));
  if (auto it = object.find("temperature_fallback"); it != object.end()) {
    VOXRT_ASSIGN_OR_RETURN(config.whisper.temperature_fallback,
                           parse_flag(*it, "config.temperature_fallback"));
  }
  if (Status valid = config.whisper.validate(); !valid)
    return invalid_argument("config.", valid.message());
  // Other Vosk keys (max_alternatives, nlsml, ...) are accepted and ignored.
  return config;
}

}  // namespace

Expected<ClientMessage> parse_client_text(std::string_view text) {
  VOXRT_ASSIGN_OR_RETURN(json message, parse_client_json(text));
  if (!message.is_object())
    return invalid_argument("text frame must be a JSON object, found ", message.type_name());
  const bool has_config = message.contains("config");
  const bool has_eof = message.contains("eof");
  if (has_config == has_eof)
    return invalid_argument("text frame must hold exactly one of \"config\" or \"eof\"");
  ClientMessage out;
  if (has_eof) {
    VOXRT_ASSIGN_OR_RETURN(bool eof, parse_flag(message["eof"], "eof"));
    if (!eof) {
      return invalid_argument("\"eof\" must be 1 or true, found ",
                              describe_client_value(message["eof"]));
    }
    out.kind = ClientMessage::Kind::kEof;
    return out;
  }
  out.kind = ClientMessage::Kind::kConfig;
  VOXRT_ASSIGN_OR_RETURN(out.config, parse_config(message["config"]));
  return out;
}

std::string partial_json(std::string_view text, std::string_view warning) {
  json out = {{"partial", std::string(text)}};
  if (!warning.empty()) out["warning"] = std::string(warning);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string final_json(const decode::DecodingResult& result, bool words, std::string_view warning,
                       const FinalFigures* figures) {
  json out = json::object();
  if (words) {
    json list = json::array();
    for (const auto& w : result.words) {
      list.push_back(
          {{"word", w.word}, {"start", w.start_s}, {"end", w.end_s}, {"conf", w.confidence}});
    }
    out["result"] = std::move(list);
  }
  out["text"] = result.text;
  // Whisper-family results only (absent otherwise, as Vosk's clients expect).
  if (!result.language.empty()) out["language"] = result.language;
  if (!result.segments.empty()) {
    json list = json::array();
    for (const auto& s : result.segments)
      list.push_back({{"text", s.text}, {"start", s.start_s}, {"end", s.end_s}});
    out["segments"] = std::move(list);
  }
  if (!warning.empty()) out["warning"] = std::string(warning);
  if (figures != nullptr) {
    out["endpoint"] = std::string(figures->endpoint);
    out["latency"] = {{"first_partial_ms", figures->first_partial_ms},
                      {"final_ms", figures->final_ms}};
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_json(std::string_view kind, std::string_view message) {
  json out = {{"error", std::string(message)}, {"kind", std::string(kind)}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace voxrt::server
