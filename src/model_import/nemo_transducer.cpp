// NeMo Conformer/FastConformer transducers (EncDecRNNTBPEModel, Parakeet-TDT) as sherpa-onnx's
// NeMo export scripts leave them (they run NeMo's own exporters for the three modules;
// sherpa-onnx's offline-transducer-nemo-model.cc reads them):
// - encoder*.onnx: audio_signal [N, n_mels, T] f32, length [N] i64 -> outputs [N, D, T'],
//   encoded_lengths; metadata vocab_size (NeMo's decoder.vocab_size: WITHOUT the blank),
//   normalize_type, subsampling_factor, pred_rnn_layers, pred_hidden, model_type, url;
// - decoder*.onnx: targets [N, 1], target_length [N], h and c [pred_rnn_layers, N, pred_hidden]
//   -> output [N, pred_hidden, 1], lengths, h', c' (in that order; NeMo's exported names such as
//   states.1 / onnx::Slice_3 are kept as they are);
// - joiner*.onnx: encoder_outputs [N, D, T], decoder_outputs [N, H, U] -> [N, T, U, classes]:
//   the units with the blank (tokens.txt), then for a TDT model one logit per duration;
// - tokens.txt with <blk> LAST (NeMo's blank id is the vocabulary size).
// The bundle's family is transducer_offline (stream/transducer/offline_transducer_model.h).
#include <filesystem>

#include "ir/shape_inference.h"
#include "model_import/import_support.h"
#include "model_import/nemo_layouts.h"
#include "model_import/nemo_offline_encoder.h"
#include "onnx_import/importer.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

constexpr const char* kEncoderOutput = "outputs";

std::string names_of(const std::vector<ir::Value*>& values) {
  std::string out;
  for (const ir::Value* v : values) out += (out.empty() ? "" : ", ") + v->name;
  return out;
}

std::string metadata_text(const ir::Graph& graph, const std::string& key) {
  auto it = graph.metadata.find(key);
  return it == graph.metadata.end() ? std::string() : it->second;
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

bool is_nemo_transducer_dir(const std::string& dir) {
  // (tokens.txt is not part of the test: a NeMo folder without it gets this importer's error.)
  if (!has_file(dir, "encoder", ".onnx") || !has_file(dir, "decoder", ".onnx") ||
      !has_file(dir, "joiner", ".onnx"))
    return false;
  // icefall's stateless decoder takes one input (y); NeMo's LSTM decoder takes the targets,
  // their lengths and its two states. The decoder is small: reading it is cheap.
  auto decoder_file = find_one_file(dir, "decoder", ".onnx", "decoder");
  if (!decoder_file) return false;
  auto decoder = onnx_import::import_model_file(*decoder_file);
  return decoder.has_value() && (*decoder)->inputs.size() == 4;
}

Expected<ModelDirImportReport> import_nemo_transducer(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-sherpa-onnx-transducer";
  report.family = "transducer_offline";
  VOXRT_ASSIGN_OR_RETURN(std::string encoder_file,
                         find_one_file(dir, "encoder", ".onnx", "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_file,
                         find_one_file(dir, "decoder", ".onnx", "decoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string joiner_file, find_one_file(dir, "joiner", ".onnx", "joiner"));
  const std::string tokens_file = (fs::path(dir) / "tokens.txt").string();
  if (!fs::exists(tokens_file)) {
    return not_found(dir, ": no tokens.txt (sherpa-onnx's NeMo export writes the tokenizer's ",
                     "pieces as '<piece> <id>' lines, <blk> last)");
  }
  VOXRT_ASSIGN_OR_RETURN(std::vector<std::string> pieces, read_tokens_txt(tokens_file));
  if (pieces.back() != "<blk>") {
    return invalid_argument(tokens_file, ": the last token is '", pieces.back(),
                            "', expected <blk> (NeMo's blank is the last class)");
  }
  const auto classes = static_cast<std::int64_t>(pieces.size());

  // ---- encoder ----
  VOXRT_ASSIGN_OR_RETURN(auto encoder, onnx_import::import_model_file(encoder_file));
  for (const ir::Value* input : encoder->inputs) {
    if (input->name != kNemoFeaturesInput && input->name != kNemoLengthInput) {
      return invalid_argument(encoder_file, ": unexpected input '", input->name,
                              "': a NeMo transducer encoder takes audio_signal [N, n_mels, T] and "
                              "length [N] (cache-aware streaming exports are not supported)");
    }
  }
  ir::Value* signal = encoder->find_value(kNemoFeaturesInput);
  ir::Value* length = encoder->find_value(kNemoLengthInput);
  if (encoder->inputs.size() != 2 || signal == nullptr || length == nullptr ||
      signal->shape.size() != 3 || !signal->shape[1].is_known() || length->dtype != DType::kI64) {
    return invalid_argument(encoder_file,
                            ": expected inputs audio_signal [N, n_mels, T] f32 "
                            "(n_mels known) and length [N] int64; found ",
                            names_of(encoder->inputs));
  }
  const int n_mels = static_cast<int>(signal->shape[1].value);
  ir::Value* encoded = encoder->find_value(kEncoderOutput);
  if (encoded == nullptr || !encoder->is_graph_output(encoded)) {
    return invalid_argument(encoder_file, ": expected an output 'outputs' [N, D, T'] (NeMo's ",
                            "encoder export), found ", names_of(encoder->outputs));
  }
  if (!encoder->metadata.count("normalize_type")) {
    return invalid_argument(encoder_file,
                            ": metadata_props has no 'normalize_type' (sherpa-onnx's "
                            "NeMo export scripts write it; was the file exported by one?)");
  }
  VOXRT_ASSIGN_OR_RETURN(const int vocab_size, exporter_int(*encoder, "vocab_size", encoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int subsampling,
                         exporter_int(*encoder, "subsampling_factor", encoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int layers, exporter_int(*encoder, "pred_rnn_layers", encoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int hidden, exporter_int(*encoder, "pred_hidden", encoder_file));
  if (vocab_size + 1 != classes) {
    return invalid_argument(encoder_file, ": metadata vocab_size ", vocab_size,
                            " (NeMo's, without the blank) but ", tokens_file, " has ", classes,
                            " tokens with the blank; expected vocab_size + 1 tokens");
  }
  const std::string normalize = metadata_text(*encoder, "normalize_type");
  VOXRT_ASSIGN_OR_RETURN(audio::NemoFeatureConfig front_end,
                         sherpa_nemo_front_end(n_mels, normalize.empty() ? "NA" : normalize));
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(*encoder).with_context(encoder_file));
  if (encoded->shape.size() != 3 || !encoded->shape[1].is_known()) {
    return invalid_argument(encoder_file, ": outputs must be [N, D, T'] with D known, found ",
                            ir::sym_shape_to_string(encoded->shape));
  }
  const std::int64_t encoder_dim = encoded->shape[1].value;
  // Encoded lengths are not needed: the family computes them with NeMo's rule.
  encoder->outputs = {encoded};

  // ---- decoder ----
  VOXRT_ASSIGN_OR_RETURN(auto decoder, onnx_import::import_model_file(decoder_file));
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
  BuilderConfig decoder_config = options.build;
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
  VOXRT_ASSIGN_OR_RETURN(auto joiner, onnx_import::import_model_file(joiner_file));
  if (joiner->inputs.size() != 2 || joiner->outputs.empty()) {
    return invalid_argument(joiner_file, ": expected inputs encoder_outputs [N, D, T] and ",
                            "decoder_outputs [N, H, U]; found ", names_of(joiner->inputs));
  }
  ir::Value* j_enc = joiner->inputs[0];
  ir::Value* j_dec = joiner->inputs[1];
  if (j_enc->shape.size() != 3 || j_dec->shape.size() != 3 || !j_enc->shape[1].is_known() ||
      j_enc->shape[1].value != encoder_dim || !j_dec->shape[1].is_known() ||
      j_dec->shape[1].value != hidden) {
    return invalid_argument(joiner_file, ": expected inputs [N, ", encoder_dim,
                            ", T] (the encoder's outputs) and [N, ", hidden,
                            ", U] (the decoder's); found ", ir::sym_shape_to_string(j_enc->shape),
                            " and ", ir::sym_shape_to_string(j_dec->shape));
  }
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
  const std::int64_t extra = width - classes;
  const std::string url = metadata_text(*encoder, "url");
  const bool url_says_tdt = url.find("tdt") != std::string::npos;
  if (url_says_tdt && extra == 0) {
    return invalid_argument(encoder_file, ": metadata url '", url, "' names a TDT model, but ",
                            joiner_file, " gives ", width, " logits, no more than the ", classes,
                            " tokens (no duration logits)");
  }
  std::string durations;
  for (std::int64_t d = 0; d < extra; ++d)
    durations += (durations.empty() ? "" : ",") + std::to_string(d);
  BuilderConfig joiner_config = options.build;
  joiner_config.states.clear();
  joiner_config.profiles = {
      OptimizationProfile{"rows",
                          {{j_enc->name, rows(max_rows, opt_rows, {}, {encoder_dim, 1})},
                           {j_dec->name, rows(max_rows, opt_rows, {}, {hidden, 1})}}}};
  const std::string joiner_encoder_input = j_enc->name;

  // ---- the bundle ----
  stream::BundleManifest manifest;
  manifest.family = "transducer_offline";
  manifest.engines = {
      {"encoder", "encoder.engine"}, {"decoder", "decoder.engine"}, {"joiner", "joiner.engine"}};
  manifest.metadata =
      nemo_offline_contract(front_end, subsampling, "transducer_offline", kEncoderOutput);
  manifest.metadata["voxrt.vocabulary"] = vocabulary_lines(pieces);
  manifest.metadata["voxrt.unit"] = "pieces";
  manifest.metadata["voxrt.blank_id"] = std::to_string(classes - 1);
  manifest.metadata["voxrt.transducer.pred_rnn_layers"] = std::to_string(layers);
  manifest.metadata["voxrt.transducer.pred_hidden"] = std::to_string(hidden);
  manifest.metadata["voxrt.transducer.decoder_inputs"] = decoder_inputs;
  manifest.metadata["voxrt.transducer.decoder_outputs"] = decoder_outputs;
  manifest.metadata["voxrt.transducer.joiner_encoder_input"] = joiner_encoder_input;
  // NeMo's greedy decoding config: max_symbols 10.
  manifest.metadata["voxrt.transducer.max_symbols_per_frame"] = "10";
  if (extra > 0) manifest.metadata["voxrt.transducer.durations"] = durations;
  manifest.source = {{"layout", report.layout},
                     {"encoder", fs::path(encoder_file).filename().string()},
                     {"decoder", fs::path(decoder_file).filename().string()},
                     {"joiner", fs::path(joiner_file).filename().string()},
                     {"tokens", "tokens.txt"}};
  report.notes.push_back(
      str_cat("model_type ",
              metadata_text(*encoder, "model_type").empty() ? "(none)"
                                                            : metadata_text(*encoder, "model_type"),
              ", ", extra > 0 ? "TDT (durations " + durations + ")" : std::string("RNN-T"), ", ",
              n_mels, " mel bins, normalize ", audio::nemo_normalize_name(front_end.normalize),
              ", subsampling ", subsampling, ", prediction LSTM ", layers, " x ", hidden, ", ",
              classes, " tokens (blank last)"));
  report.notes.push_back(
      "front end: NeMo's defaults (the layout keeps no preprocessor settings): 16 kHz, 25/10 ms, "
      "n_fft 512, preemph 0.97");
  VOXRT_RETURN_IF_ERROR(build_nemo_offline_encoder(std::move(encoder), n_mels, encoder_file,
                                                   front_end, "encoder.engine", options));
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(decoder), decoder_file, decoder_config,
                                            options.bundle_dir, "decoder.engine", options));
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(joiner), joiner_file, joiner_config,
                                            options.bundle_dir, "joiner.engine", options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

}  // namespace voxrt::model_import
