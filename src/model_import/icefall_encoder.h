// The streaming encoder of icefall's exports (transducer encoders and streaming CTC models share
// its conventions): input x [N, T, num_bins]; every cache input X returns new_X, its batch on the
// axis whose dynamic_axes name is x's batch ("N"); the streaming Conformer's processed_lens [N]
// is an input without an output; metadata T (frames per call) and decode_chunk_len (frames
// consumed per call). Read once here, with the caches made batch-first for the slot pool.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "model_import/import_support.h"

namespace voxrt::model_import {

struct IcefallStreamingEncoder {
  std::string file;
  std::unique_ptr<ir::Graph> graph;  // caches batch-first
  std::string model_type;            // the metadata's, or empty
  int chunk_frames = 0;              // T
  int shift_frames = 0;              // decode_chunk_len
  int subsampling = 4;
  int num_bins = 0;
  std::vector<ExportedState> states;
  std::string processed_input;  // "processed_lens" or empty
  std::vector<std::string> notes;

  // The encoder's build: its caches as state pairs, one profile of 1..max_batch streams.
  BuilderConfig build_config(const ModelDirImportOptions& options) const;
};

// `output`: the name of the non-cache output ("encoder_out", "log_probs").
Expected<IcefallStreamingEncoder> read_icefall_streaming_encoder(const std::string& file,
                                                                 const std::string& output);

// The contract keys of an icefall streaming model for sherpa-onnx's front end: features
// (sherpa_fbank_metadata), the tokens as model-less pieces with <blk> as blank, chunk, shift and
// subsampling, and the digital-silence frame as the padding of a stream's last chunks.
std::map<std::string, std::string> streaming_contract(int num_bins,
                                                      const std::vector<std::string>& pieces,
                                                      int chunk_frames, int shift_frames,
                                                      int subsampling);

// Rows 1..max_rows (opt `opt_rows`) of an input whose other dims are `rest`.
ShapeRange rows_range(std::int64_t max_rows, const std::vector<std::int64_t>& rest,
                      std::int64_t opt_rows);

}  // namespace voxrt::model_import
