#include "server/transcription_request.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "decode/subtitles.h"

namespace voxrt::server {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The value of `key` in a header like `form-data; name="file"; filename="a.wav"`.
std::string header_parameter(std::string_view header, std::string_view key) {
  const std::string wanted = std::string(key) + "=";
  std::size_t at = 0;
  while ((at = header.find(wanted, at)) != std::string_view::npos) {
    const bool starts = at == 0 || header[at - 1] == ';' || header[at - 1] == ' ';
    at += wanted.size();
    if (!starts) continue;
    if (at < header.size() && header[at] == '"') {
      const std::size_t end = header.find('"', at + 1);
      if (end == std::string_view::npos) return {};
      return std::string(header.substr(at + 1, end - at - 1));
    }
    const std::size_t end = header.find(';', at);
    return std::string(header.substr(at, end == std::string_view::npos ? end : end - at));
  }
  return {};
}

// OpenAI's `temperature` form field: a decimal number (range checked by the choices).
Expected<double> parse_temperature(std::string_view text) {
  const std::string value(text);
  char* end = nullptr;
  const double temperature = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(temperature)) {
    return invalid_argument("temperature must be a number from 0 to 1, found '", value, "'");
  }
  return temperature;
}

// voxrt's `temperature_fallback` form field.
Expected<bool> parse_form_flag(std::string_view text, std::string_view field) {
  const std::string value = lower(text);
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  return invalid_argument(field, " must be true, false, 1 or 0, found '", text, "'");
}

}  // namespace

Expected<TranscriptionRequest> parse_transcription_request(std::string_view content_type,
                                                           std::string_view body) {
  if (lower(content_type).rfind("multipart/form-data", 0) != 0)
    return invalid_argument("Content-Type must be multipart/form-data, found '", content_type, "'");
  const std::string boundary = header_parameter(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 200)
    return invalid_argument("multipart/form-data without a usable boundary parameter");
  const std::string delimiter = "--" + boundary;
  TranscriptionRequest request;
  bool have_file = false;
  std::size_t at = body.find(delimiter);
  if (at == std::string_view::npos) return invalid_argument("multipart body has no boundary line");
  for (;;) {
    at += delimiter.size();
    if (body.substr(at, 2) == "--") break;  // closing delimiter
    if (body.substr(at, 2) != "\r\n")
      return invalid_argument("multipart boundary line is malformed");
    at += 2;
    const std::size_t headers_end = body.find("\r\n\r\n", at);
    if (headers_end == std::string_view::npos)
      return invalid_argument("multipart part without the blank line after its headers");
    const std::string_view headers = body.substr(at, headers_end - at);
    const std::size_t content_begin = headers_end + 4;
    const std::size_t next = body.find("\r\n" + delimiter, content_begin);
    if (next == std::string_view::npos) return invalid_argument("multipart part is not terminated");
    const std::string_view content = body.substr(content_begin, next - content_begin);
    std::string name, filename;
    std::size_t line_begin = 0;
    while (line_begin <= headers.size()) {
      std::size_t line_end = headers.find("\r\n", line_begin);
      if (line_end == std::string_view::npos) line_end = headers.size();
      const std::string_view line = headers.substr(line_begin, line_end - line_begin);
      if (lower(line.substr(0, 20)) == "content-disposition:") {
        name = header_parameter(line, "name");
        filename = header_parameter(line, "filename");
      }
      line_begin = line_end + 2;
    }
    if (name == "file") {
      request.file_bytes = std::string(content);
      request.file_name = filename;
      have_file = true;
    } else if (name == "model") {
      request.model = std::string(content);
    } else if (name == "response_format") {
      request.response_format = std::string(content);
    } else if (name == "prompt") {
      request.whisper.initial_prompt = std::string(content);
    } else if (name == "temperature") {
      VOXRT_ASSIGN_OR_RETURN(request.whisper.temperature, parse_temperature(content));
    } else if (name == "temperature_fallback") {
      VOXRT_ASSIGN_OR_RETURN(request.whisper.temperature_fallback,
                             parse_form_flag(content, "temperature_fallback"));
    }
    at = next + 2;
  }
  if (!have_file) return invalid_argument("multipart body has no 'file' part");
  if (request.response_format != "json" && request.response_format != "text" &&
      request.response_format != "verbose_json" && request.response_format != "srt" &&
      request.response_format != "vtt") {
    return invalid_argument("response_format must be json, text, verbose_json, srt or vtt, found '",
                            request.response_format, "'");
  }
  VOXRT_RETURN_IF_ERROR(request.whisper.validate());
  return request;
}

TranscriptionResponse format_transcription(const std::vector<TranscriptionSegment>& segments,
                                           const std::string& response_format, double duration_s) {
  std::string text;
  for (const auto& s : segments) {
    if (s.text.empty()) continue;
    if (!text.empty()) text += ' ';
    text += s.text;
  }
  using json = nlohmann::json;
  if (response_format == "text") return {"text/plain; charset=utf-8", text + "\n"};
  if (response_format == "srt" || response_format == "vtt") {
    std::vector<decode::TimedText> cues;
    for (const auto& s : segments) {
      if (s.text.empty()) continue;
      for (const auto& t : s.timed) cues.push_back({t.start_s, t.end_s, t.text});
      if (!s.timed.empty()) continue;
      cues.push_back({s.words.empty() ? 0.0 : s.words.front().start_s,
                      s.words.empty() ? 0.0 : s.words.back().end_s, s.text});
    }
    if (response_format == "srt") return {"application/x-subrip", decode::to_srt(cues)};
    return {"text/vtt; charset=utf-8", decode::to_vtt(cues)};
  }
  if (response_format == "json") {
    return {"application/json",
            json{{"text", text}}.dump(-1, ' ', false, json::error_handler_t::replace)};
  }
  json words = json::array();
  json list = json::array();
  int id = 0;
  std::string language;
  for (const auto& s : segments) {
    if (s.text.empty()) continue;
    if (language.empty()) language = s.language;
    for (const auto& t : s.timed)
      list.push_back({{"id", id++}, {"start", t.start_s}, {"end", t.end_s}, {"text", t.text}});
    if (!s.timed.empty()) continue;
    const double start = s.words.empty() ? 0.0 : s.words.front().start_s;
    const double end = s.words.empty() ? 0.0 : s.words.back().end_s;
    list.push_back({{"id", id++}, {"start", start}, {"end", end}, {"text", s.text}});
    for (const auto& w : s.words)
      words.push_back({{"word", w.word}, {"start", w.start_s}, {"end", w.end_s}});
  }
  json out = {{"task", "transcribe"},
              {"duration", duration_s},
              {"text", text},
              {"segments", list},
              {"words", words}};
  // OpenAI's verbose_json names the language; voxrt knows it for Whisper-family models (a code).
  if (!language.empty()) out["language"] = language;
  return {"application/json", out.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace voxrt::server
