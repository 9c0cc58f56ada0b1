// NeMo's transducer prediction and joint networks as sherpa-onnx's NeMo transducer scripts export
// them (NeMo's own exporters for RNNTDecoder and RNNTJoint), shared by the offline
// (nemo_transducer.cpp) and cache-aware streaming (nemo_cache_aware_transducer.cpp) imports:
// - decoder*.onnx: targets [N, 1], target_length [N], h and c [pred_rnn_layers, N, pred_hidden]
//   -> output [N, pred_hidden, 1], lengths, h', c' (by position; NeMo's exported names such as
//   states.1 / onnx::Slice_3 are kept);
// - joiner*.onnx: encoder_outputs [N, D, T], decoder_outputs [N, H, U] -> [N, T, U, classes]:
//   the units with the blank, then for a TDT model one logit per duration.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "model_import/import_support.h"

namespace voxrt::model_import {

struct NemoPredictionNetworks {
  std::string decoder_file;
  std::string joiner_file;
  std::unique_ptr<ir::Graph> decoder;
  std::unique_ptr<ir::Graph> joiner;
  // Profiles of 1..max_batch x max_beam rows.
  BuilderConfig decoder_config;
  BuilderConfig joiner_config;
  // Joiner logits past the classes (TDT durations) and the durations assumed for them
  // ("0,1,2,3,4": sherpa-onnx's layout does not store them; Parakeet-TDT's are 0..4).
  std::int64_t extra_logits = 0;
  std::string durations;
  // voxrt.transducer.* keys: pred_rnn_layers, pred_hidden, decoder_inputs / outputs,
  // joiner_encoder_input, max_symbols_per_frame (NeMo's greedy default 10), durations (TDT).
  std::map<std::string, std::string> metadata;

  // Builds decoder.engine and joiner.engine into the bundle (the graphs are moved out).
  Status build(const ModelDirImportOptions& options);
};

// `layers` and `hidden`: the encoder's pred_rnn_layers and pred_hidden metadata; `encoder_dim`:
// D of the encoder's output; `classes`: tokens.txt's count with the blank (`tokens_file`, for
// errors). Errors name the file and say what was expected and found.
Expected<NemoPredictionNetworks> read_nemo_prediction_networks(
    const std::string& decoder_file, const std::string& joiner_file, int layers, int hidden,
    std::int64_t encoder_dim, std::int64_t classes, const std::string& tokens_file,
    const ModelDirImportOptions& options);

// The same from graphs already imported (`decoder_file` and `joiner_file` name them in errors).
// `joiner_channels_last`: the joiner takes [N, T, D] and [N, U, decoder_dim] of any width (NeMo's
// own decoder_joint export once split: nemo_decoder_joint.h) instead of [N, D, T] and
// [N, pred_hidden, U].
Expected<NemoPredictionNetworks> read_nemo_prediction_networks(
    std::unique_ptr<ir::Graph> decoder, const std::string& decoder_file,
    std::unique_ptr<ir::Graph> joiner, const std::string& joiner_file, bool joiner_channels_last,
    int layers, int hidden, std::int64_t encoder_dim, std::int64_t classes,
    const std::string& tokens_file, const ModelDirImportOptions& options);

}  // namespace voxrt::model_import
