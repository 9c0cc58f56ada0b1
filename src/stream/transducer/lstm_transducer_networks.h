// LSTM prediction networks and their joint networks as engines, behind the stateful search's
// interface (decode/stateful_transducer_search.h). Two exports:
// - NeMo (docs/model_contract.md "transducer_offline"): decoder targets [N, 1] (int32 or int64),
//   target_length [N], h and c [layers, N, hidden] -> output [N, hidden, 1], lengths, h', c';
//   joiner encoder frame [N, encoder_dim, 1] and decoder output [N, hidden, 1] -> logits
//   [N, 1, 1, units (+ durations)] (NeMo's RNNTDecoder and RNNTJoint exports);
// - torchaudio's RNN-T ("transducer_stateful"): decoder targets [N, 1], target_lengths [N], then
//   h_0, c_0, h_1, c_1, ... [N, hidden] per layer -> output [N, 1, decoder_dim], lengths, then the
//   new states in the same order; joiner [N, 1, encoder_dim] and [N, 1, decoder_dim] -> [N, 1,
//   1, units] (voxrt.transducer.joiner_layout channels_last).
// The names come from the bundle's voxrt.transducer.decoder_inputs / decoder_outputs, in that
// order; the states' rank tells the two apart. A hypothesis's state is every h then every c
// (layers x hidden each), so the search sees one row.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decode/stateful_transducer_search.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

class LstmTransducerNetworks final : public decode::StatefulTransducerNetworks {
 public:
  static Expected<std::unique_ptr<LstmTransducerNetworks>> create(
      std::shared_ptr<const Engine> decoder, std::shared_ptr<const Engine> joiner,
      const std::map<std::string, std::string>& metadata, int vocab_size, int blank_id, int threads,
      const std::string& where);

  int vocab_size() const override { return vocab_size_; }
  int blank_id() const override { return blank_id_; }
  const std::vector<int>& durations() const override { return durations_; }
  int state_size() const override { return 2 * layers_ * hidden_; }
  int decoder_dim() const override { return decoder_dim_; }
  int encoder_dim() const override { return encoder_dim_; }
  Status run_decoder(std::span<const std::int64_t> units, std::span<const float> states, int rows,
                     std::vector<float>& decoder_out, std::vector<float>& next_states) override;
  Status run_joiner(std::span<const float> encoder_frames, std::span<const float> decoder_out,
                    int rows, std::vector<float>& logits) override;
  long long decoder_calls() const { return decoder_calls_; }
  long long joiner_calls() const { return joiner_calls_; }

 private:
  LstmTransducerNetworks() = default;

  std::shared_ptr<const Engine> decoder_;
  std::shared_ptr<const Engine> joiner_;
  std::unique_ptr<ExecutionContext> decoder_context_;
  std::unique_ptr<ExecutionContext> joiner_context_;
  // Engine input positions of targets and target_length, and of the states: one h and one c
  // [layers, N, hidden] (stacked), or one per layer [N, hidden]; output positions of the decoder
  // output and of the new states, in the same order.
  int targets_ = 0, target_length_ = 1;
  std::vector<int> h_in_, c_in_;
  int out_ = 0;
  std::vector<int> h_out_, c_out_;
  bool stacked_states_ = true;
  DType targets_dtype_ = DType::kI32;
  DType length_dtype_ = DType::kI32;
  bool joiner_encoder_first_ = true;
  // The joiner's inputs as [N, dim, 1] (NeMo) or [N, 1, dim] (torchaudio).
  bool joiner_channels_last_ = false;
  int layers_ = 0;
  int hidden_ = 0;
  int decoder_dim_ = 0;
  int encoder_dim_ = 0;
  int vocab_size_ = 0;
  int blank_id_ = 0;
  std::vector<int> durations_;
  // Rows per engine call (the profiles' largest batch); more rows run in pieces.
  std::int64_t decoder_max_rows_ = 0;
  std::int64_t joiner_max_rows_ = 0;
  long long decoder_calls_ = 0;
  long long joiner_calls_ = 0;
};

}  // namespace voxrt::stream
