#include "transcript_output.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "decode/subtitles.h"

namespace voxrt::cli {
namespace {

// From the words, or (Whisper-family models, which give no word times) the segments.
double utterance_start(const decode::DecodingResult& r) {
  if (!r.words.empty()) return r.words.front().start_s;
  return r.segments.empty() ? 0.0 : r.segments.front().start_s;
}
double utterance_end(const decode::DecodingResult& r) {
  if (!r.words.empty()) return r.words.back().end_s;
  return r.segments.empty() ? 0.0 : r.segments.back().end_s;
}

std::string timed(const decode::DecodingResult& r) {
  return "[" + decode::subtitle_timestamp(utterance_start(r), '.') + " --> " +
         decode::subtitle_timestamp(utterance_end(r), '.') + "] " + r.text;
}

std::string json_line(const std::string& file, const stream::StreamResult& r) {
  nlohmann::json words = nlohmann::json::array();
  for (const auto& w : r.result.words) {
    words.push_back(
        {{"word", w.word}, {"start", w.start_s}, {"end", w.end_s}, {"conf", w.confidence}});
  }
  nlohmann::json line = {
      {"file", file}, {"text", r.result.text}, {"is_final", r.result.is_final}, {"words", words}};
  // Whisper-family results: the language detected or named, and the timestamp segments.
  if (!r.result.language.empty()) line["language"] = r.result.language;
  if (!r.result.segments.empty()) {
    nlohmann::json segments = nlohmann::json::array();
    for (const auto& s : r.result.segments)
      segments.push_back({{"text", s.text}, {"start", s.start_s}, {"end", s.end_s}});
    line["segments"] = segments;
  }
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

Expected<OutputFormat> parse_output_format(std::string_view name) {
  if (name == "txt") return OutputFormat::kTxt;
  if (name == "json") return OutputFormat::kJson;
  if (name == "srt") return OutputFormat::kSrt;
  if (name == "vtt") return OutputFormat::kVtt;
  if (name == "tsv") return OutputFormat::kTsv;
  return invalid_argument("--output-format '", name, "': expected txt, json, srt, vtt or tsv");
}

const char* output_extension(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTxt: return "txt";
    case OutputFormat::kJson: return "json";
    case OutputFormat::kSrt: return "srt";
    case OutputFormat::kVtt: return "vtt";
    case OutputFormat::kTsv: return "tsv";
  }
  return "txt";
}

std::string render_result(const OutputOptions& options, const std::string& file,
                          const stream::StreamResult& result) {
  if (options.format == OutputFormat::kJson) return json_line(file, result);
  if (options.format != OutputFormat::kTxt || !result.result.is_final) return "";
  return file + ": " + (options.timestamps ? timed(result.result) : result.result.text) + "\n";
}

std::string render_document(const OutputOptions& options, const std::string& file,
                            const std::vector<stream::StreamResult>& finals) {
  std::string out;
  std::vector<decode::TimedText> cues;
  for (const stream::StreamResult& r : finals) {
    if (r.result.text.empty() && finals.size() > 1) continue;
    switch (options.format) {
      case OutputFormat::kTxt:
        out += (options.timestamps ? timed(r.result) : r.result.text) + "\n";
        break;
      case OutputFormat::kJson: out += json_line(file, r); break;
      case OutputFormat::kTsv:
        if (!r.result.text.empty()) {
          out += std::to_string(std::llround(utterance_start(r.result) * 1000)) + "\t" +
                 std::to_string(std::llround(utterance_end(r.result) * 1000)) + "\t" +
                 r.result.text + "\n";
        }
        break;
      case OutputFormat::kSrt:
      case OutputFormat::kVtt:
        cues.push_back({utterance_start(r.result), utterance_end(r.result), r.result.text});
        break;
    }
  }
  if (options.format == OutputFormat::kTsv) return "start\tend\ttext\n" + out;
  if (options.format == OutputFormat::kSrt) return decode::to_srt(cues);
  if (options.format == OutputFormat::kVtt) return decode::to_vtt(cues);
  return out;
}

std::string output_path(const std::string& dir, const std::string& input, OutputFormat format) {
  const std::string stem = input == "-" ? "stdin" : std::filesystem::path(input).stem().string();
  return (std::filesystem::path(dir) / (stem + "." + output_extension(format))).string();
}

}  // namespace voxrt::cli
