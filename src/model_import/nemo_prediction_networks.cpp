#include "model_import/nemo_prediction_networks.h"

#include "ir/shape_inference.h"
#include "onnx_import/importer.h"

namespace voxrt::model_import {
namespace {

std::string names_of(const std::vector<ir::Value*>& values) {
  std::string out;
  for (const ir::Value* v : values) out += (out.empty() ? "" : ", ") + v->name;
  return out;
}

bool is_integer(DType t) {
  return t == DType::kI32 || t == DType::kI64;
}

// The stateful prediction network's shape check: [layers, N, hidden] with layers and hidden known.
bool is_state(const ir::Value& v, int layers, int hidden) {
  return v.dtype == DType::kF32 && v.shape.size() == 3 && v.shape[0].is_known() &&
         v.shape[0].value == layers && v.shape[2].is_known() && v.shape[2].value == hidden;
}

ShapeRange rows(std::int64_t max_rows, std::int64_t opt_rows,
                const std::vector<std::int64_t>& before, const std::vector<std::int64_t>& after) {
  auto dims = [&](std::int64_t r) {
    std::vector<std::int64_t> d = before;
    d.push_back(r);
    d.insert(d.end(), after.begin(), after.end());
    return d;
  };
  return ShapeRange{dims(1), dims(opt_rows), dims(max_rows)};
}

}  // namespace

Expected<NemoPredictionNetworks> read_nemo_prediction_networks(
    const std::string& decoder_file, const std::string& joiner_file, int layers, int hidden,
    std::int64_t encoder_dim, std::int64_t classes, const std::string& tokens_file,
    const ModelDirImportOptions& options) {
  VOXRT_ASSIGN_OR_RETURN(auto decoder, onnx_import::import_model_file(decoder_file));
  VOXRT_ASSIGN_OR_RETURN(auto joiner, onnx_import::import_model_file(joiner_file));
  return read_nemo_prediction_networks(std::move(decoder), decoder_file, std::move(joiner),
                                       joiner_file, false, layers, hidden, encoder_dim, classes,
                                       tokens_file, options);
}

Expected<NemoPredictionNetworks> read_nemo_prediction_networks(
    std::unique_ptr<ir::Graph> decoder_graph, const std::string& decoder_file,
    std::unique_ptr<ir::Graph> joiner_graph, const std::string& joiner_file,
    bool joiner_channels_last, int layers, int hidden, std::int64_t encoder_dim,
    std::int64_t classes, const std::string& tokens_file, const ModelDirImportOptions& options) {
  NemoPredictionNetworks n;
  n.decoder_file = decoder_file;
  n.joiner_file = joiner_file;
  // ---- decoder ----
  n.decoder = std::move(decoder_graph);
  ir::Graph* decoder = n.decoder.get();
  const auto& din = decoder->inputs;
  const auto& dout = decoder->outputs;
  if (din.size() != 4 || !is_integer(din[0]->dtype) || !is_integer(din[1]->dtype) ||
      !is_state(*din[2], layers, hidden) || !is_state(*din[3], layers, hidden)) {
    return invalid_argument(decoder_file, ": expected inputs targets [N, 1] and target_length [N] ",
                            "(int32 or int64), then h and c [", layers, ", N, ", hidden,
                            "] (pred_rnn_layers, pred_hidden); found ", names_of(din));
  }
  if (dout.size() != 4) {
    return invalid_argument(decoder_file, ": expected outputs (decoder output, lengths, h', c'), ",
                            "found ", names_of(dout));
  }
  const std::int64_t max_rows = static_cast<std::int64_t>(options.max_batch) * options.max_beam;
  const std::int64_t opt_rows = std::min(options.max_batch, 4);
  // The names go into the bundle as comma-separated lists.
  std::string decoder_inputs, decoder_outputs;
  for (const auto* list : {&din, &dout}) {
    for (const ir::Value* v : *list) {
      if (v->name.find(',') != std::string::npos) {
        return invalid_argument(decoder_file, ": the decoder's tensor name '", v->name,
                                "' holds a comma, which the bundle's name lists cannot hold");
      }
      std::string& names = list == &din ? decoder_inputs : decoder_outputs;
      names += (names.empty() ? "" : ",") + v->name;
    }
  }
  BuilderConfig& decoder_config = n.decoder_config;
  decoder_config = options.build;
  decoder_config.states.clear();
  decoder_config.profiles = {
      OptimizationProfile{"rows",
                          {{din[0]->name, rows(max_rows, opt_rows, {}, {1})},
                           {din[1]->name, rows(max_rows, opt_rows, {}, {})},
                           {din[2]->name, rows(max_rows, opt_rows, {layers}, {hidden})},
                           {din[3]->name, rows(max_rows, opt_rows, {layers}, {hidden})}}}};
  decoder_config.profiling_values[din[0]->name] = Tensor::zeros(din[0]->dtype, {opt_rows, 1});
  decoder_config.profiling_values[din[1]->name] =
      din[1]->dtype == DType::kI32
          ? Tensor::from_vector<std::int32_t>(
                {opt_rows}, std::vector<std::int32_t>(static_cast<std::size_t>(opt_rows), 1))
          : Tensor::from_vector<std::int64_t>(
                {opt_rows}, std::vector<std::int64_t>(static_cast<std::size_t>(opt_rows), 1));

  // ---- joiner ----
  n.joiner = std::move(joiner_graph);
  ir::Graph* joiner = n.joiner.get();
  if (joiner->inputs.size() != 2 || joiner->outputs.empty()) {
    return invalid_argument(joiner_file, ": expected inputs encoder_outputs [N, D, T] and ",
                            "decoder_outputs [N, H, U]; found ", names_of(joiner->inputs));
  }
  ir::Value* j_enc = joiner->inputs[0];
  ir::Value* j_dec = joiner->inputs[1];
  // The widths' axis: 1 in NeMo's joint ([N, D, T], [N, H, U]), 2 channels last.
  const std::size_t width_axis = joiner_channels_last ? 2 : 1;
  const bool shapes_ok =
      j_enc->shape.size() == 3 && j_dec->shape.size() == 3 && j_enc->shape[width_axis].is_known() &&
      j_enc->shape[width_axis].value == encoder_dim && j_dec->shape[width_axis].is_known() &&
      (joiner_channels_last || j_dec->shape[width_axis].value == hidden);
  if (!shapes_ok) {
    return invalid_argument(
        joiner_file, ": expected inputs ",
        joiner_channels_last ? str_cat("[N, T, ", encoder_dim, "]")
                             : str_cat("[N, ", encoder_dim, ", T]"),
        " (the encoder's outputs) and ",
        joiner_channels_last ? std::string("[N, U, decoder_dim]") : str_cat("[N, ", hidden, ", U]"),
        " (the decoder's); found ", ir::sym_shape_to_string(j_enc->shape), " and ",
        ir::sym_shape_to_string(j_dec->shape));
  }
  const std::int64_t decoder_dim = j_dec->shape[width_axis].value;
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(*joiner).with_context(joiner_file));
  ir::Value* logits = joiner->outputs[0];
  if (logits->shape.empty() || !logits->shape.back().is_known()) {
    return invalid_argument(joiner_file, ": the output's last axis (classes) must be known, found ",
                            ir::sym_shape_to_string(logits->shape));
  }
  const std::int64_t width = logits->shape.back().value;
  if (width < classes) {
    return invalid_argument(joiner_file, ": the joiner gives ", width, " logits, fewer than ",
                            tokens_file, "'s ", classes, " tokens");
  }
  // TDT: one logit per duration after the units. sherpa-onnx's layout does not store the
  // durations; Parakeet-TDT's are 0..4, one per extra logit, which is what this assumes.
  n.extra_logits = width - classes;
  const std::int64_t extra = n.extra_logits;
  std::string& durations = n.durations;
  for (std::int64_t d = 0; d < extra; ++d)
    durations += (durations.empty() ? "" : ",") + std::to_string(d);
  BuilderConfig& joiner_config = n.joiner_config;
  joiner_config = options.build;
  joiner_config.states.clear();
  joiner_config.profiles = {OptimizationProfile{
      "rows",
      {{j_enc->name, rows(max_rows, opt_rows, {},
                          joiner_channels_last ? std::vector<std::int64_t>{1, encoder_dim}
                                               : std::vector<std::int64_t>{encoder_dim, 1})},
       {j_dec->name, rows(max_rows, opt_rows, {},
                          joiner_channels_last ? std::vector<std::int64_t>{1, decoder_dim}
                                               : std::vector<std::int64_t>{decoder_dim, 1})}}}};
  n.metadata["voxrt.transducer.joiner_layout"] =
      joiner_channels_last ? "channels_last" : "channels_first";
  n.metadata["voxrt.transducer.pred_rnn_layers"] = std::to_string(layers);
  n.metadata["voxrt.transducer.pred_hidden"] = std::to_string(hidden);
  n.metadata["voxrt.transducer.decoder_inputs"] = decoder_inputs;
  n.metadata["voxrt.transducer.decoder_outputs"] = decoder_outputs;
  n.metadata["voxrt.transducer.joiner_encoder_input"] = j_enc->name;
  // NeMo's greedy decoding config: max_symbols 10.
  n.metadata["voxrt.transducer.max_symbols_per_frame"] = "10";
  if (extra > 0) n.metadata["voxrt.transducer.durations"] = durations;
  return n;
}

Status NemoPredictionNetworks::build(const ModelDirImportOptions& options) {
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(decoder), decoder_file, decoder_config,
                                            options.bundle_dir, "decoder.engine", options));
  return build_bundle_engine(std::move(joiner), joiner_file, joiner_config, options.bundle_dir,
                             "joiner.engine", options);
}

}  // namespace voxrt::model_import
