#include "stream/transducer/lstm_transducer_networks.h"

#include <algorithm>
#include <sstream>

#include "stream/batch_limit.h"
#include "stream/engine_io_names.h"
#include "stream/model_metadata.h"
#include "stream/transducer/joiner_batches.h"

namespace voxrt::stream {
namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

// Positions of `names` among `infos`; errors name the missing one and what the engine has.
Expected<std::vector<int>> positions(const std::vector<TensorInfo>& infos,
                                     const std::vector<std::string>& names, const std::string& key,
                                     const std::string& where) {
  std::vector<int> at;
  for (const std::string& name : names) {
    auto it = std::find_if(infos.begin(), infos.end(),
                           [&](const TensorInfo& i) { return i.name == name; });
    if (it == infos.end()) {
      return invalid_argument(where, ": ", key, " names '", name,
                              "', which the engine lacks; it has ", names_of(infos));
    }
    at.push_back(static_cast<int>(it - infos.begin()));
  }
  return at;
}

Tensor integers(DType dtype, Dims dims, std::span<const std::int64_t> values) {
  Tensor t = Tensor::uninitialized(dtype, std::move(dims));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kI32) {
      t.data<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]);
    } else {
      t.data<std::int64_t>()[i] = values[i];
    }
  }
  return t;
}

}  // namespace

Expected<std::unique_ptr<LstmTransducerNetworks>> LstmTransducerNetworks::create(
    std::shared_ptr<const Engine> decoder, std::shared_ptr<const Engine> joiner,
    const std::map<std::string, std::string>& metadata, int vocab_size, int blank_id, int threads,
    const std::string& where) {
  auto n = std::unique_ptr<LstmTransducerNetworks>(new LstmTransducerNetworks());
  n->decoder_ = std::move(decoder);
  n->joiner_ = std::move(joiner);
  n->vocab_size_ = vocab_size;
  n->blank_id_ = blank_id;
  VOXRT_ASSIGN_OR_RETURN(
      n->layers_, metadata_int(metadata, "voxrt.transducer.pred_rnn_layers", 0, true, where));
  VOXRT_ASSIGN_OR_RETURN(n->hidden_,
                         metadata_int(metadata, "voxrt.transducer.pred_hidden", 0, true, where));
  auto durations = metadata.find("voxrt.transducer.durations");
  if (durations != metadata.end()) {
    for (const std::string& d : split_commas(durations->second)) {
      try {
        n->durations_.push_back(std::stoi(d));
      } catch (...) {
        return invalid_argument(where, ": voxrt.transducer.durations '", durations->second,
                                "': expected comma-separated frame counts");
      }
      if (n->durations_.back() < 0) {
        return invalid_argument(where, ": voxrt.transducer.durations '", durations->second,
                                "' has a negative duration");
      }
    }
  }
  VOXRT_ASSIGN_OR_RETURN(std::string in_names,
                         metadata_string(metadata, "voxrt.transducer.decoder_inputs", where));
  VOXRT_ASSIGN_OR_RETURN(std::string out_names,
                         metadata_string(metadata, "voxrt.transducer.decoder_outputs", where));
  const auto in_list = split_commas(in_names);
  const auto out_list = split_commas(out_names);
  const std::size_t per_layer_names = 2 + 2 * static_cast<std::size_t>(n->layers_);
  if ((in_list.size() != 4 && in_list.size() != per_layer_names) ||
      out_list.size() != in_list.size()) {
    return invalid_argument(where, ": voxrt.transducer.decoder_inputs and decoder_outputs name ",
                            "as many tensors each: targets, target_length, then h, c (stacked) or ",
                            "h_0, c_0, ... per layer; the outputs, lengths, then the new states; ",
                            "found '", in_names, "' and '", out_names, "'");
  }
  VOXRT_ASSIGN_OR_RETURN(auto in_at, positions(n->decoder_->inputs(), in_list,
                                               "voxrt.transducer.decoder_inputs", where));
  VOXRT_ASSIGN_OR_RETURN(auto out_at, positions(n->decoder_->outputs(), out_list,
                                                "voxrt.transducer.decoder_outputs", where));
  if (n->decoder_->inputs().size() != in_list.size()) {
    return invalid_argument(where, ": the decoder engine takes ", names_of(n->decoder_->inputs()),
                            "; expected exactly ", in_names);
  }
  n->targets_ = in_at[0];
  n->target_length_ = in_at[1];
  n->out_ = out_at[0];
  // Stacked states are [layers, N, hidden]; per-layer ones [N, hidden] (with one layer the
  // name count alone cannot tell).
  const auto& first_state = n->decoder_->inputs()[static_cast<std::size_t>(in_at[2])];
  n->stacked_states_ = first_state.dims.size() == 3;
  if (!n->stacked_states_ && in_list.size() != per_layer_names) {
    return invalid_argument(where, ": the decoder's state '", first_state.name,
                            "' is per layer (rank ", first_state.dims.size(), "), so ",
                            per_layer_names, " inputs were expected for ", n->layers_,
                            " layers (voxrt.transducer.pred_rnn_layers); found '", in_names, "'");
  }
  for (std::size_t i = 2; i < in_at.size(); i += 2) {
    n->h_in_.push_back(in_at[i]);
    n->c_in_.push_back(in_at[i + 1]);
    n->h_out_.push_back(out_at[i]);
    n->c_out_.push_back(out_at[i + 1]);
  }
  n->targets_dtype_ = n->decoder_->inputs()[static_cast<std::size_t>(n->targets_)].dtype;
  n->length_dtype_ = n->decoder_->inputs()[static_cast<std::size_t>(n->target_length_)].dtype;
  for (DType t : {n->targets_dtype_, n->length_dtype_}) {
    if (t != DType::kI32 && t != DType::kI64) {
      return invalid_argument(where, ": the decoder's targets and target_length must be int32 or ",
                              "int64, found ", dtype_name(t));
    }
  }
  const std::string joiner_encoder = metadata.count("voxrt.transducer.joiner_encoder_input")
                                         ? metadata.at("voxrt.transducer.joiner_encoder_input")
                                         : std::string("encoder_outputs");
  const auto& joiner_inputs = n->joiner_->inputs();
  if (joiner_inputs.size() != 2 || n->joiner_->outputs().empty()) {
    return invalid_argument(where, ": the joiner engine must take two inputs; it takes ",
                            names_of(joiner_inputs));
  }
  const int encoder_at = joiner_inputs[0].name == joiner_encoder   ? 0
                         : joiner_inputs[1].name == joiner_encoder ? 1
                                                                   : -1;
  if (encoder_at < 0) {
    return invalid_argument(where, ": the joiner has no input '", joiner_encoder,
                            "' (voxrt.transducer.joiner_encoder_input); it has ",
                            names_of(joiner_inputs));
  }
  n->joiner_encoder_first_ = encoder_at == 0;
  const std::string joiner_layout = metadata.count("voxrt.transducer.joiner_layout")
                                        ? metadata.at("voxrt.transducer.joiner_layout")
                                        : std::string("channels_first");
  if (joiner_layout != "channels_first" && joiner_layout != "channels_last") {
    return invalid_argument(where, ": voxrt.transducer.joiner_layout '", joiner_layout,
                            "': expected channels_first ([N, dim, T], NeMo) or channels_last ",
                            "([N, T, dim], torchaudio)");
  }
  n->joiner_channels_last_ = joiner_layout == "channels_last";
  const std::size_t width_axis = n->joiner_channels_last_ ? 2 : 1;
  const auto& enc_info = joiner_inputs[static_cast<std::size_t>(encoder_at)];
  const auto& dec_info = joiner_inputs[static_cast<std::size_t>(1 - encoder_at)];
  // NeMo's decoder output is the LSTM's (pred_hidden wide); torchaudio's is projected.
  if (enc_info.dims.size() != 3 || dec_info.dims.size() != 3 || enc_info.dims[width_axis] <= 0 ||
      dec_info.dims[width_axis] <= 0 ||
      (!n->joiner_channels_last_ && dec_info.dims[width_axis] != n->hidden_)) {
    return invalid_argument(where, ": the joiner's inputs must be ",
                            n->joiner_channels_last_
                                ? "[N, T, encoder_dim] and [N, U, decoder_dim]"
                                : "[N, encoder_dim, T] and [N, pred_hidden, U]",
                            " with static widths (pred_hidden ", n->hidden_, "); found ",
                            dims_to_string(enc_info.dims), " and ", dims_to_string(dec_info.dims));
  }
  n->encoder_dim_ = static_cast<int>(enc_info.dims[width_axis]);
  n->decoder_dim_ = static_cast<int>(dec_info.dims[width_axis]);
  const std::int64_t width = n->joiner_->outputs()[0].dims.back();
  const std::int64_t want = vocab_size + static_cast<std::int64_t>(n->durations_.size());
  if (width != want) {
    return invalid_argument(where, ": the joiner gives ", width, " logits per row, expected ", want,
                            " (", vocab_size, " units with the blank",
                            n->durations_.empty() ? "" : " and the durations", ")");
  }
  constexpr std::int64_t kUnboundedRows = 1 << 16;
  n->decoder_max_rows_ =
      largest_profile_batch(*n->decoder_,
                            n->decoder_->inputs()[static_cast<std::size_t>(n->targets_)].name)
          .value_or(kUnboundedRows);
  n->joiner_max_rows_ =
      std::min(largest_profile_batch(*n->joiner_, joiner_inputs[0].name).value_or(kUnboundedRows),
               largest_profile_batch(*n->joiner_, joiner_inputs[1].name).value_or(kUnboundedRows));
  VOXRT_ASSIGN_OR_RETURN(n->decoder_context_, n->decoder_->create_context(threads));
  VOXRT_ASSIGN_OR_RETURN(n->joiner_context_, n->joiner_->create_context(threads));
  return n;
}

Status LstmTransducerNetworks::run_decoder(std::span<const std::int64_t> units,
                                           std::span<const float> states, int rows,
                                           std::vector<float>& decoder_out,
                                           std::vector<float>& next_states) {
  const auto layer_values = static_cast<std::size_t>(hidden_);
  const std::size_t half = static_cast<std::size_t>(layers_) * layer_values;
  const std::size_t row_state = 2 * half;
  decoder_out.assign(static_cast<std::size_t>(rows) * decoder_dim_, 0.0f);
  next_states.assign(static_cast<std::size_t>(rows) * row_state, 0.0f);
  // Where layer l's values of row r sit in an engine state tensor: stacked [layers, N, hidden]
  // (one tensor for every layer), or per layer [N, hidden] (tensor l).
  const auto engine_offset = [&](std::int64_t n, int l, std::int64_t r) {
    return stacked_states_ ? (static_cast<std::size_t>(l) * n + r) * layer_values
                           : static_cast<std::size_t>(r) * layer_values;
  };
  const std::size_t state_tensors = stacked_states_ ? 1 : static_cast<std::size_t>(layers_);
  for (std::int64_t begin = 0; begin < rows; begin += decoder_max_rows_) {
    const std::int64_t n = std::min<std::int64_t>(decoder_max_rows_, rows - begin);
    std::vector<Tensor> inputs(2 + 2 * state_tensors);
    inputs[static_cast<std::size_t>(targets_)] =
        integers(targets_dtype_, {n, 1},
                 units.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(n)));
    inputs[static_cast<std::size_t>(target_length_)] =
        integers(length_dtype_, {n}, std::vector<std::int64_t>(static_cast<std::size_t>(n), 1));
    const Dims state_dims = stacked_states_ ? Dims{layers_, n, hidden_} : Dims{n, hidden_};
    std::vector<Tensor> h(state_tensors), c(state_tensors);
    for (std::size_t t = 0; t < state_tensors; ++t) {
      h[t] = Tensor::uninitialized(DType::kF32, state_dims);
      c[t] = Tensor::uninitialized(DType::kF32, state_dims);
    }
    // A row's state is every layer's h, then every layer's c.
    for (std::int64_t r = 0; r < n; ++r) {
      const float* row = states.data() + static_cast<std::size_t>(begin + r) * row_state;
      for (int l = 0; l < layers_; ++l) {
        const std::size_t t = stacked_states_ ? 0 : static_cast<std::size_t>(l);
        const std::size_t at = engine_offset(n, l, r);
        std::copy_n(row + l * layer_values, layer_values, h[t].data<float>() + at);
        std::copy_n(row + half + l * layer_values, layer_values, c[t].data<float>() + at);
      }
    }
    for (std::size_t t = 0; t < state_tensors; ++t) {
      inputs[static_cast<std::size_t>(h_in_[t])] = std::move(h[t]);
      inputs[static_cast<std::size_t>(c_in_[t])] = std::move(c[t]);
    }
    VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> out, decoder_context_->run(inputs));
    ++decoder_calls_;
    const Tensor& g = out[static_cast<std::size_t>(out_)];
    const std::int64_t state_values = element_count(state_dims);
    bool shapes_ok = g.element_count() == n * decoder_dim_;
    for (std::size_t t = 0; t < state_tensors; ++t) {
      shapes_ok = shapes_ok &&
                  out[static_cast<std::size_t>(h_out_[t])].element_count() == state_values &&
                  out[static_cast<std::size_t>(c_out_[t])].element_count() == state_values;
    }
    if (!shapes_ok) {
      return invalid_argument("transducer decoder output is ", dims_to_string(g.dims()),
                              " (expected ", n, " x ", decoder_dim_, " values) and its states ",
                              "must be ", dims_to_string(state_dims));
    }
    // [N, hidden, 1] or [N, 1, decoder_dim]: a row's output is contiguous.
    std::copy_n(g.data<float>(), n * decoder_dim_,
                decoder_out.data() + static_cast<std::size_t>(begin) * decoder_dim_);
    for (std::int64_t r = 0; r < n; ++r) {
      float* row = next_states.data() + static_cast<std::size_t>(begin + r) * row_state;
      for (int l = 0; l < layers_; ++l) {
        const std::size_t t = stacked_states_ ? 0 : static_cast<std::size_t>(l);
        const std::size_t at = engine_offset(n, l, r);
        const Tensor& h2 = out[static_cast<std::size_t>(h_out_[t])];
        const Tensor& c2 = out[static_cast<std::size_t>(c_out_[t])];
        std::copy_n(h2.data<float>() + at, layer_values, row + l * layer_values);
        std::copy_n(c2.data<float>() + at, layer_values, row + half + l * layer_values);
      }
    }
  }
  return Status::ok();
}

Status LstmTransducerNetworks::run_joiner(std::span<const float> encoder_frames,
                                          std::span<const float> decoder_out, int rows,
                                          std::vector<float>& logits) {
  const JoinerLayout layout{
      .encoder_dim = encoder_dim_,
      .decoder_dim = decoder_dim_,
      .logits_width = vocab_size_ + static_cast<std::int64_t>(durations_.size()),
      .max_rows = joiner_max_rows_,
      .encoder_first = joiner_encoder_first_,
      .unit_axis = joiner_channels_last_ ? JoinerLayout::UnitAxis::kLeading
                                         : JoinerLayout::UnitAxis::kTrailing};
  return run_joiner_in_batches(*joiner_context_, layout, encoder_frames, decoder_out, rows, logits,
                               joiner_calls_);
}

}  // namespace voxrt::stream
