// Helpers the layout importers share: finding an exporter's files by pattern, reading their
// metadata, making state inputs batch-first, building one engine of a bundle.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "model_import/model_dir_import.h"

namespace voxrt::model_import {

// The one file in `dir` whose name starts with `prefix` and ends with `suffix` (full-precision
// exports preferred over ".int8." ones). Errors list what was looked for and what was found.
Expected<std::string> find_one_file(const std::string& dir, const std::string& prefix,
                                    const std::string& suffix, const std::string& role);
// Whether some file in `dir` starts with `prefix` and ends with `suffix`.
bool has_file(const std::string& dir, const std::string& prefix, const std::string& suffix);

// An integer of an exporter's metadata_props; errors name the file and key.
Expected<int> exporter_int(const ir::Graph& graph, const std::string& key, const std::string& file);

// A streaming state as exported: input `input`, output `output`, the batch on axis `batch_axis`.
struct ExportedState {
  std::string input;
  std::string output;
  int batch_axis = 0;
};

// The axis of `value` whose symbolic dim is `batch_symbol`; -1 if none.
int batch_axis_of(const ir::Value& value, const std::string& batch_symbol);

// Rewrites the graph so every state is batch-first (the slot pool's layout): a state input
// whose batch is on axis a > 0 becomes a batch-first input followed by a Transpose, and its
// output gets a Transpose back. The names stay the exporter's.
Status make_states_batch_first(ir::Graph& graph, const std::vector<ExportedState>& states);

// Builds `graph` (already rewritten) into `bundle_dir`/`engine_file` with `config`.
Status build_bundle_engine(std::unique_ptr<ir::Graph> graph, const std::string& source_file,
                           const BuilderConfig& config, const std::string& bundle_dir,
                           const std::string& engine_file, const ModelDirImportOptions& options);

// icefall / sherpa-onnx tokens.txt: "<piece> <id>" per line. Returns the pieces in id order;
// errors give file:line.
Expected<std::vector<std::string>> read_tokens_txt(const std::string& path);

// The contract keys of sherpa-onnx's (kaldi-native-fbank's) default front end: 16 kHz, 25/10 ms
// povey frames, `num_bins` mel bins from 20 Hz to Nyquist - 400 Hz, dither 0, no snip_edges,
// int16-scaled samples, log of the power (floor: float epsilon).
std::map<std::string, std::string> sherpa_fbank_metadata(int num_bins);

// The pieces as voxrt.vocabulary (one per line).
std::string vocabulary_lines(const std::vector<std::string>& pieces);

}  // namespace voxrt::model_import
