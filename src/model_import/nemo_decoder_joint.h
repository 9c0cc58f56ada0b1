// NeMo's own export of a transducer's prediction and joint networks in one file
// (EncDecRNNTModel.export writes decoder_joint-<name>.onnx from RNNTDecoderJoint):
//   inputs  encoder_outputs [B, D, T], targets [B, U] int32, target_length [B] int32,
//           input_states_1 / input_states_2 [pred_rnn_layers, B, pred_hidden] (the LSTM's h, c)
//   outputs outputs [B, T, U, classes] (the joint), prednet_lengths [B], output_states_1 / _2.
// The transducer families call the prediction network once per emitted unit and the joint once
// per frame and hypothesis, so the import splits the graph where the joint first reads the
// prediction network's result: every node that does not depend on encoder_outputs is the
// decoder's, the others the joiner's, and the one value that crosses from the first to the
// second (the prediction output, or its joint projection where the export computes it apart
// from the encoder's) becomes the decoder's output and the joiner's input. The crossing value
// is flattened to [N, 1, width] so that a row's values are contiguous, and the joiner takes the
// encoder's frames as [N, T, D] (a Transpose into NeMo's [B, D, T]): the family's channels_last
// joiner layout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "voxrt/status.h"

namespace voxrt::model_import {

struct NemoDecoderJointSplit {
  // inputs targets, target_length, input_states_1, input_states_2; outputs decoder_outputs
  // [N, 1, width], prednet_lengths, output_states_1, output_states_2.
  std::unique_ptr<ir::Graph> decoder;
  // inputs encoder_outputs [N, T, D] and decoder_outputs [N, 1, width]; output outputs.
  std::unique_ptr<ir::Graph> joiner;
  std::string crossing;  // the value cut, for the import report
  std::int64_t width = 0;
};

// Errors name the file and say what was expected and found (another input or output, a joint
// that reads more than one value of the prediction network, a crossing value of unknown width).
Expected<NemoDecoderJointSplit> split_nemo_decoder_joint(const std::string& file);

}  // namespace voxrt::model_import
