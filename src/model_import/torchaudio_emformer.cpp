// A torchaudio Emformer RNN-T (torchaudio.models.emformer_rnnt_model / emformer_rnnt_base, the
// model of torchaudio.pipelines.EMFORMER_RNNT_BASE_LIBRISPEECH) exported to ONNX by a user of
// torchaudio's streaming (online ASR) tutorial: torchaudio writes no ONNX exporter of its own, so
// the files are the RNNT's three modules (rnnt.transcriber, rnnt.predictor, rnnt.joiner) traced
// with torch.onnx.export, their argument names kept, next to the pipeline's assets:
// - transcriber.onnx: _EmformerEncoder.infer - input [N, segment + right context, n_mels],
//   lengths [N], and the Emformer's per-layer states flattened (each input X returns new_X, the
//   batch on the axis its dynamic_axes call like input's batch) -> output [N, segment / stride,
//   D], output_lengths, new_<state>. The time reduction stride and the right context are read
//   from the graph: lengths -> Div(stride) -> Sub(right context / stride) -> output_lengths.
// - predictor.onnx: _Predictor.forward for one token - targets [N, 1], target_lengths [N],
//   then h_i, c_i [N, hidden] per LSTM layer -> output [N, 1, D], output_lengths, new_h_i, new_c_i.
// - joiner.onnx: _Joiner.forward - source_encodings [N, T, D], target_encodings [N, U, D] (the
//   lengths drop out of the trace) -> output [N, T, U, classes].
// - global_stats.json: the pipeline's {"mean": [...], "invstddev": [...]} per mel bin.
// - one *.model: the pipeline's SentencePiece model; the blank is the class after its pieces
//   (EMFORMER_RNNT_BASE_LIBRISPEECH: 4096 pieces, blank 4096).
// The front end is RNNTBundle's (16 kHz, n_fft 400, hop 160: audio/torchaudio_log_mel.h); the
// bundle's family is transducer_stateful (stream/transducer/stateful_transducer_model.h).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/shape_inference.h"
#include "model_import/icefall_encoder.h"
#include "model_import/import_support.h"
#include "model_import/sentencepiece_pieces.h"
#include "model_import/torchaudio_layouts.h"
#include "onnx_import/importer.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

constexpr const char* kTranscriber = "transcriber.onnx";
constexpr const char* kPredictor = "predictor.onnx";
constexpr const char* kJoiner = "joiner.onnx";
constexpr const char* kGlobalStats = "global_stats.json";
// torchaudio's own pipelines' default greedy limit is not fixed (RNNTBeamSearch has none); a few
// units per 40 ms frame is more than speech needs.
constexpr int kMaxSymbolsPerFrame = 3;

std::string names_of(const std::vector<ir::Value*>& values) {
  std::string out;
  for (const ir::Value* v : values) out += (out.empty() ? "" : ", ") + v->name;
  return out;
}

std::string floats_text(const std::vector<float>& values) {
  std::string out;
  char buffer[32];
  for (float v : values) {
    std::snprintf(buffer, sizeof(buffer), "%.9g", static_cast<double>(v));
    out += (out.empty() ? "" : ",") + std::string(buffer);
  }
  return out;
}

// An integer scalar constant, or nothing.
std::optional<std::int64_t> int_constant(const ir::Value* v) {
  if (v == nullptr || !v->is_constant() || v->constant->element_count() != 1) return std::nullopt;
  const Tensor& t = *v->constant;
  if (t.dtype() == DType::kI64) return t.data<std::int64_t>()[0];
  if (t.dtype() == DType::kI32) return t.data<std::int32_t>()[0];
  return std::nullopt;
}

// The node that reads `v`, skipping Casts (the exporter casts lengths between int types).
ir::Node* next_through_casts(const ir::Graph& g, const ir::Value* v) {
  for (;;) {
    const auto readers = g.consumers(v);
    if (readers.size() != 1) return nullptr;
    if (readers[0]->op != ir::OpKind::kCast) return readers[0];
    v = readers[0]->output(0);
  }
}

struct TimeLayout {
  int stride = 0;         // the time reduction's
  int right_context = 0;  // feature frames
  int segment = 0;        // feature frames
};

// _TimeReduction divides the lengths by its stride and Emformer.infer subtracts its right
// context (in reduced frames): the two constants of the lengths' path to output_lengths.
Expected<TimeLayout> read_time_layout(const ir::Graph& g, int window, const std::string& file) {
  const std::string expected =
      ": expected the lengths' path of _EmformerEncoder.infer (lengths -> Div by the time "
      "reduction stride -> Sub of the reduced right context -> output_lengths)";
  ir::Node* div = next_through_casts(g, g.find_value("lengths"));
  if (div == nullptr || div->op != ir::OpKind::kDiv) return invalid_argument(file, expected);
  const auto stride = int_constant(div->input(1));
  ir::Node* sub = next_through_casts(g, div->output(0));
  if (!stride || *stride < 1 || sub == nullptr || sub->op != ir::OpKind::kSub)
    return invalid_argument(file, expected, "; found no integer Div and Sub");
  const auto reduced_right = int_constant(sub->input(1));
  if (!reduced_right || *reduced_right < 0)
    return invalid_argument(file, expected, "; the Sub's operand is not an integer constant");
  TimeLayout t;
  t.stride = static_cast<int>(*stride);
  t.right_context = static_cast<int>(*reduced_right) * t.stride;
  t.segment = window - t.right_context;
  if (t.segment < t.stride || t.segment % t.stride != 0) {
    return invalid_argument(file, ": a window of ", window, " frames with stride ", t.stride,
                            " and right context ", t.right_context,
                            " frames leaves no whole segment");
  }
  return t;
}

struct GlobalStats {
  std::vector<float> mean;
  std::vector<float> invstddev;
};

Expected<GlobalStats> read_global_stats(const std::string& path, int mel_bins) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return not_found(path, ": missing (torchaudio's RNN-T pipeline normalises its features with ",
                     "the global stats file, {\"mean\": [...], \"invstddev\": [...]})");
  }
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return invalid_argument(path, ": expected a JSON object {\"mean\", \"invstddev\"}");
  GlobalStats stats;
  for (const auto& [key, field] : {std::pair<const char*, std::vector<float>*>{"mean", &stats.mean},
                                   {"invstddev", &stats.invstddev}}) {
    if (!j.contains(key) || !j[key].is_array())
      return invalid_argument(path, ": no array '", key, "'");
    for (const auto& v : j[key]) {
      if (!v.is_number())
        return invalid_argument(path, ": '", key, "' holds a non-number ", v.dump());
      field->push_back(v.get<float>());
    }
    if (static_cast<int>(field->size()) != mel_bins) {
      return invalid_argument(path, ": '", key, "' has ", field->size(), " values, expected ",
                              mel_bins, " (the transcriber's input width)");
    }
  }
  return stats;
}

Expected<std::string> find_sentencepiece_model(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".model") found.push_back(entry.path().string());
  }
  if (found.size() != 1) {
    return not_found(dir, ": expected one SentencePiece model (*.model, the pipeline's ",
                     "spm_bpe_*.model), found ", found.size());
  }
  return found[0];
}

}  // namespace

bool is_torchaudio_emformer_dir(const std::string& dir) {
  return fs::exists(fs::path(dir) / kTranscriber) && fs::exists(fs::path(dir) / kPredictor) &&
         fs::exists(fs::path(dir) / kJoiner);
}

Expected<ModelDirImportReport> import_torchaudio_emformer(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "torchaudio-emformer-rnnt";
  report.family = "transducer_stateful";
  const std::string transcriber_file = (fs::path(dir) / kTranscriber).string();
  const std::string predictor_file = (fs::path(dir) / kPredictor).string();
  const std::string joiner_file = (fs::path(dir) / kJoiner).string();
  VOXRT_ASSIGN_OR_RETURN(std::string spm_file, find_sentencepiece_model(dir));
  // The units are the model's pieces without the model ("pieces": joined, word markers as
  // spaces), which is what torchaudio's token processor prints, but for the unknown and end
  // pieces it drops.
  VOXRT_ASSIGN_OR_RETURN(auto spm, read_sentencepiece_pieces(spm_file));
  std::vector<std::string> pieces;
  for (const auto& p : spm) pieces.push_back(p.piece);
  const int blank_id = static_cast<int>(pieces.size());
  pieces.push_back("<blank>");
  const std::int64_t classes = blank_id + 1;
  const std::int64_t max_rows = static_cast<std::int64_t>(options.max_batch) * options.max_beam;
  const std::int64_t opt_rows = std::min(options.max_batch, 4);

  // ---- transcriber ----
  VOXRT_ASSIGN_OR_RETURN(auto transcriber, onnx_import::import_model_file(transcriber_file));
  ir::Graph& t = *transcriber;
  ir::Value* input = t.find_value("input");
  ir::Value* lengths = t.find_value("lengths");
  ir::Value* output = t.find_value("output");
  if (input == nullptr || lengths == nullptr || input->shape.size() != 3 ||
      !input->shape[1].is_known() || !input->shape[2].is_known() || output == nullptr ||
      !t.is_graph_output(output)) {
    return invalid_argument(transcriber_file, ": expected _EmformerEncoder.infer's inputs 'input' ",
                            "[N, segment + right context, n_mels] (static), 'lengths' [N] and the ",
                            "states, and an output 'output'; found inputs ", names_of(t.inputs),
                            " and outputs ", names_of(t.outputs));
  }
  const int window = static_cast<int>(input->shape[1].value);
  const int mel_bins = static_cast<int>(input->shape[2].value);
  const std::string batch_symbol = input->shape[0].symbol;
  VOXRT_ASSIGN_OR_RETURN(TimeLayout time, read_time_layout(t, window, transcriber_file));
  std::vector<ExportedState> states;
  for (const ir::Value* in : t.inputs) {
    if (in == input || in == lengths) continue;
    ir::Value* paired = t.find_value("new_" + in->name);
    if (paired == nullptr || !t.is_graph_output(paired)) {
      return invalid_argument(transcriber_file, ": unexpected input '", in->name,
                              "': neither input, lengths nor a state with an output 'new_",
                              in->name, "'");
    }
    const int axis = batch_axis_of(*in, batch_symbol);
    if (axis < 0) {
      return invalid_argument(transcriber_file, ": state '", in->name, "' ",
                              ir::sym_shape_to_string(in->shape), " has no axis named like ",
                              "input's batch ('", batch_symbol,
                              "'); its dynamic_axes must name it");
    }
    for (const auto& d : in->shape) {
      if (d.is_known() && d.value == 0) {
        return unsupported(transcriber_file, ": state '", in->name, "' is empty (",
                           ir::sym_shape_to_string(in->shape),
                           "): an Emformer without a memory bank (max_memory_size 0, as "
                           "emformer_rnnt_base) exports zero-sized states, which the state slot "
                           "pool cannot hold, and torch's legacy empty tensors (Concat and "
                           "Reshape of a 1-D empty memory) that ONNX does not define; not "
                           "supported yet");
      }
    }
    states.push_back({in->name, paired->name, axis});
  }
  // output_lengths is the window's, always whole: the family does not read it.
  std::vector<ir::Value*> kept_outputs;
  for (ir::Value* o : t.outputs) {
    if (o->name != "output_lengths") kept_outputs.push_back(o);
  }
  t.outputs = kept_outputs;
  VOXRT_RETURN_IF_ERROR(make_states_batch_first(t, states).with_context(transcriber_file));
  BuilderConfig encoder_config = options.build;
  encoder_config.states.clear();
  for (const auto& s : states) encoder_config.states.push_back({s.input, s.output});
  const std::int64_t opt_streams = std::min(options.max_batch, 4);
  encoder_config.profiles = {OptimizationProfile{
      "streams",
      {{"input", rows_range(options.max_batch, {window, mel_bins}, opt_streams)},
       {"lengths", rows_range(options.max_batch, {}, opt_streams)}}}};
  encoder_config.profiling_values["lengths"] =
      lengths->dtype == DType::kI32
          ? Tensor::from_vector<std::int32_t>({opt_streams},
                                              std::vector<std::int32_t>(opt_streams, window))
          : Tensor::from_vector<std::int64_t>({opt_streams},
                                              std::vector<std::int64_t>(opt_streams, window));

  // ---- predictor ----
  VOXRT_ASSIGN_OR_RETURN(auto predictor, onnx_import::import_model_file(predictor_file));
  const auto& pin = predictor->inputs;
  const auto& pout = predictor->outputs;
  if (pin.size() < 4 || pin.size() % 2 != 0 || pout.size() != pin.size() ||
      pin[0]->name != "targets" || pin[1]->name != "target_lengths") {
    return invalid_argument(predictor_file,
                            ": expected _Predictor.forward's inputs targets [N, 1], ",
                            "target_lengths [N], then h_i, c_i [N, hidden] per LSTM layer, and as ",
                            "many outputs (output, output_lengths, new states); found inputs ",
                            names_of(pin), " and outputs ", names_of(pout));
  }
  const int layers = static_cast<int>(pin.size() - 2) / 2;
  const ir::Value* h0 = pin[2];
  if (h0->shape.size() != 2 || !h0->shape[1].is_known()) {
    return invalid_argument(predictor_file, ": state '", h0->name, "' must be [N, hidden] with ",
                            "hidden known, found ", ir::sym_shape_to_string(h0->shape));
  }
  const std::int64_t hidden = h0->shape[1].value;
  std::string decoder_inputs, decoder_outputs;
  BuilderConfig predictor_config = options.build;
  predictor_config.states.clear();
  OptimizationProfile predictor_profile{"rows", {}};
  for (std::size_t i = 0; i < pin.size(); ++i) {
    for (const ir::Value* v : {pin[i], pout[i]}) {
      if (v->name.find(',') != std::string::npos) {
        return invalid_argument(predictor_file, ": the tensor name '", v->name,
                                "' holds a comma, which the bundle's name lists cannot hold");
      }
    }
    decoder_inputs += (i == 0 ? "" : ",") + pin[i]->name;
    decoder_outputs += (i == 0 ? "" : ",") + pout[i]->name;
    const Dims rest = i == 0 ? Dims{1} : i == 1 ? Dims{} : Dims{hidden};
    if (i >= 2 && (pin[i]->shape.size() != 2 || !pin[i]->shape[1].is_known() ||
                   pin[i]->shape[1].value != hidden)) {
      return invalid_argument(predictor_file, ": state '", pin[i]->name, "' must be [N, ", hidden,
                              "] as ", h0->name, ", found ",
                              ir::sym_shape_to_string(pin[i]->shape));
    }
    predictor_profile.inputs[pin[i]->name] = rows_range(max_rows, rest, opt_rows);
  }
  predictor_config.profiles = {predictor_profile};
  predictor_config.profiling_values["targets"] = Tensor::zeros(pin[0]->dtype, {opt_rows, 1});
  predictor_config.profiling_values["target_lengths"] =
      pin[1]->dtype == DType::kI32
          ? Tensor::from_vector<std::int32_t>({opt_rows}, std::vector<std::int32_t>(opt_rows, 1))
          : Tensor::from_vector<std::int64_t>({opt_rows}, std::vector<std::int64_t>(opt_rows, 1));

  // ---- joiner ----
  VOXRT_ASSIGN_OR_RETURN(auto joiner, onnx_import::import_model_file(joiner_file));
  ir::Value* j_src = joiner->find_value("source_encodings");
  ir::Value* j_tgt = joiner->find_value("target_encodings");
  if (joiner->inputs.size() != 2 || j_src == nullptr || j_tgt == nullptr ||
      joiner->outputs.size() != 1 || j_src->shape.size() != 3 || j_tgt->shape.size() != 3 ||
      !j_src->shape[2].is_known() || !j_tgt->shape[2].is_known()) {
    return invalid_argument(joiner_file, ": expected _Joiner.forward's source_encodings [N, T, D] ",
                            "and target_encodings [N, U, D] (D known; the lengths drop out of the ",
                            "trace) and one output; found inputs ", names_of(joiner->inputs));
  }
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(*joiner).with_context(joiner_file));
  ir::Value* logits = joiner->outputs[0];
  if (logits->shape.empty() || !logits->shape.back().is_known() ||
      logits->shape.back().value != classes) {
    return invalid_argument(joiner_file, ": expected ", classes, " logits per row (", blank_id,
                            " pieces of ", spm_file, " and the blank), found ",
                            ir::sym_shape_to_string(logits->shape));
  }
  const std::int64_t encoder_dim = j_src->shape[2].value;
  BuilderConfig joiner_config = options.build;
  joiner_config.states.clear();
  joiner_config.profiles = {OptimizationProfile{
      "rows",
      {{"source_encodings", rows_range(max_rows, {1, encoder_dim}, opt_rows)},
       {"target_encodings", rows_range(max_rows, {1, j_tgt->shape[2].value}, opt_rows)}}}};

  // ---- the front end ----
  VOXRT_ASSIGN_OR_RETURN(GlobalStats stats,
                         read_global_stats((fs::path(dir) / kGlobalStats).string(), mel_bins));

  // ---- the bundle ----
  stream::BundleManifest manifest;
  manifest.family = "transducer_stateful";
  manifest.engines = {
      {"encoder", "encoder.engine"}, {"decoder", "decoder.engine"}, {"joiner", "joiner.engine"}};
  auto& m = manifest.metadata;
  m["voxrt.model_family"] = "transducer_stateful";
  m["voxrt.feature.type"] = "torchaudio_log_mel";
  m["voxrt.feature.num_bins"] = std::to_string(mel_bins);
  m["voxrt.feature.mean"] = floats_text(stats.mean);
  m["voxrt.feature.inv_std"] = floats_text(stats.invstddev);
  m["voxrt.vocabulary"] = vocabulary_lines(pieces);
  m["voxrt.unit"] = "pieces";
  m["voxrt.blank_id"] = std::to_string(blank_id);
  m["voxrt.chunk_frames"] = std::to_string(window);
  m["voxrt.shift_frames"] = std::to_string(time.segment);
  m["voxrt.subsampling"] = std::to_string(time.stride);
  m["voxrt.chunk_pad"] = "silence";
  m["voxrt.transducer.encoder_features_input"] = "input";
  m["voxrt.transducer.encoder_lengths_input"] = "lengths";
  m["voxrt.transducer.encoder_output"] = "output";
  m["voxrt.transducer.pred_rnn_layers"] = std::to_string(layers);
  m["voxrt.transducer.pred_hidden"] = std::to_string(hidden);
  m["voxrt.transducer.decoder_inputs"] = decoder_inputs;
  m["voxrt.transducer.decoder_outputs"] = decoder_outputs;
  m["voxrt.transducer.joiner_encoder_input"] = "source_encodings";
  m["voxrt.transducer.joiner_layout"] = "channels_last";
  m["voxrt.transducer.max_symbols_per_frame"] = std::to_string(kMaxSymbolsPerFrame);
  manifest.source = {{"layout", report.layout},
                     {"transcriber", kTranscriber},
                     {"predictor", kPredictor},
                     {"joiner", kJoiner},
                     {"global_stats", kGlobalStats},
                     {"sentencepiece_model", fs::path(spm_file).filename().string()}};
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(transcriber), transcriber_file,
                                            encoder_config, options.bundle_dir, "encoder.engine",
                                            options));
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(predictor), predictor_file, predictor_config,
                                            options.bundle_dir, "decoder.engine", options));
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(joiner), joiner_file, joiner_config,
                                            options.bundle_dir, "joiner.engine", options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  report.notes.push_back(str_cat(states.size(), " Emformer states, window ", window,
                                 " frames (segment ", time.segment, " + right context ",
                                 time.right_context, "), time reduction ", time.stride,
                                 ", prediction LSTM ", layers, " x ", hidden, ", ", classes,
                                 " classes (blank ", blank_id, " last)"));
  report.notes.push_back(
      "front end: torchaudio's RNN-T pipeline (16 kHz, n_fft 400, hop 160, HTK mel, "
      "piecewise-linear log of the power at int16 scale, global stats)");
  return report;
}

}  // namespace voxrt::model_import
