// How `voxrt transcribe` writes results: txt (the default; "FILE: text" lines on stdout,
// optionally with [start --> end] times), json (one object per result, partials included on
// stdout), srt, vtt and tsv (start and end in ms, text), to stdout or, with --output-dir, one
// file per input named after it (as whisper.cpp's -otxt/-osrt/-ovtt/-oj).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stream/recognizer.h"

namespace voxrt::cli {

enum class OutputFormat { kTxt, kJson, kSrt, kVtt, kTsv };

Expected<OutputFormat> parse_output_format(std::string_view name);
const char* output_extension(OutputFormat format);

struct OutputOptions {
  OutputFormat format = OutputFormat::kTxt;
  bool timestamps = false;  // txt: "[HH:MM:SS.mmm --> HH:MM:SS.mmm] text"
};

// One result as it arrives, for stdout: json gives every result (partials too), txt every final
// ("FILE: text"), the others nothing (their document comes at the end of the file). `file` is
// the input's name as given.
std::string render_result(const OutputOptions& options, const std::string& file,
                          const stream::StreamResult& result);
// A finished input's document from its finals: what --output-dir writes, and what stdout gets
// for srt, vtt and tsv. txt: one utterance a line; json: one object a line.
std::string render_document(const OutputOptions& options, const std::string& file,
                            const std::vector<stream::StreamResult>& finals);
// DIR/<input's file name without its extension>.<format's extension>; stdin is "stdin".
std::string output_path(const std::string& dir, const std::string& input, OutputFormat format);

}  // namespace voxrt::cli
