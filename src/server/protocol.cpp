#include "server/protocol.h"

#include <cmath>
#include <nlohmann/json.hpp>

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
                            "..", kMaxSampleRateHz, ", found ", value.dump());
  }
  return static_cast<int>(rate);
}

Expected<bool> parse_flag(const json& value, std::string_view field) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer() && (value.get<long long>() == 0 || value.get<long long>() == 1))
    return value.get<long long>() == 1;
  return invalid_argument(field, " must be true, false, 0 or 1, found ", value.dump());
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
  // Other Vosk keys (max_alternatives, nlsml, ...) are accepted and ignored.
  return config;
}

}  // namespace

Expected<ClientMessage> parse_client_text(std::string_view text) {
  json message = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) return invalid_argument("text frame is not valid JSON");
  if (!message.is_object())
    return invalid_argument("text frame must be a JSON object, found ", message.type_name());
  const bool has_config = message.contains("config");
  const bool has_eof = message.contains("eof");
  if (has_config == has_eof)
    return invalid_argument("text frame must hold exactly one of \"config\" or \"eof\"");
  ClientMessage out;
  if (has_eof) {
    VOXRT_ASSIGN_OR_RETURN(bool eof, parse_flag(message["eof"], "eof"));
    if (!eof) return invalid_argument("\"eof\" must be 1 or true, found ", message["eof"].dump());
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

std::string final_json(const decode::DecodingResult& result, bool words, std::string_view warning) {
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
  if (!warning.empty()) out["warning"] = std::string(warning);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_json(std::string_view kind, std::string_view message) {
  json out = {{"error", std::string(message)}, {"kind", std::string(kind)}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace voxrt::server
