// icefall's streaming transducer exports as sherpa-onnx reads them (icefall's export-onnx.py
// and export-onnx-streaming.py; sherpa-onnx's online-*-transducer-model.cc): encoder*.onnx,
// decoder*.onnx, joiner*.onnx and tokens.txt.
// - encoder: input x [N, T, num_bins] plus caches; each cache input X returns new_X; the batch
//   axis of a cache is the one its dynamic_axes call "N" (axis 1 or 2 for LSTM/Conformer
//   caches, 0 for Zipformer2 convolution caches). Conformer's processed_lens [N] is an input
//   without an output: the frames the stream has processed. Metadata: model_type, T (frames per
//   call), decode_chunk_len (frames consumed per call).
// - decoder: y int64 [N, context_size] -> decoder_out [N, joiner_dim]; metadata context_size,
//   vocab_size.
// - joiner: encoder_out [N, joiner_dim], decoder_out [N, joiner_dim] -> logit [N, vocab_size].
#include <filesystem>
#include <set>

#include "model_import/icefall_encoder.h"
#include "model_import/icefall_layouts.h"
#include "model_import/import_support.h"
#include "onnx_import/importer.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;

namespace {

const std::set<std::string> kEncoderTypes = {"conformer", "lstm", "zipformer", "zipformer2",
                                             "ebranchformer"};

Expected<std::unique_ptr<ir::Graph>> load(const std::string& path) {
  return onnx_import::import_model_file(path);
}

}  // namespace

bool is_icefall_transducer_dir(const std::string& dir) {
  return has_file(dir, "encoder", ".onnx") && has_file(dir, "decoder", ".onnx") &&
         has_file(dir, "joiner", ".onnx");
}

Expected<ModelDirImportReport> import_icefall_transducer(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "icefall-transducer";
  report.family = "transducer";
  VOXRT_ASSIGN_OR_RETURN(std::string encoder_file,
                         find_one_file(dir, "encoder", ".onnx", "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_file,
                         find_one_file(dir, "decoder", ".onnx", "decoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string joiner_file, find_one_file(dir, "joiner", ".onnx", "joiner"));
  const std::string tokens_file = (fs::path(dir) / "tokens.txt").string();
  if (!fs::exists(tokens_file))
    return not_found(dir, ": no tokens.txt (icefall's token table, '<piece> <id>' per line)");
  VOXRT_ASSIGN_OR_RETURN(std::vector<std::string> pieces, read_tokens_txt(tokens_file));

  // ---- encoder ----
  VOXRT_ASSIGN_OR_RETURN(IcefallStreamingEncoder encoder,
                         read_icefall_streaming_encoder(encoder_file, "encoder_out"));
  if (encoder.model_type.empty()) {
    return invalid_argument(encoder_file,
                            ": metadata_props has no 'model_type' (icefall's "
                            "export-onnx.py writes it; sherpa-onnx needs it too)");
  }
  const std::string model_type = encoder.model_type;
  if (!kEncoderTypes.count(model_type)) {
    return unsupported(encoder_file, ": model_type '", model_type,
                       "' is not a streaming transducer encoder voxrt knows (conformer, lstm, "
                       "zipformer, zipformer2, ebranchformer)");
  }
  report.notes = encoder.notes;
  const int chunk_frames = encoder.chunk_frames;
  const int shift_frames = encoder.shift_frames;
  const int subsampling = encoder.subsampling;
  const int num_bins = encoder.num_bins;
  const std::string processed_input = encoder.processed_input;
  const std::size_t caches = encoder.states.size();
  const std::int64_t opt_batch = std::min(options.max_batch, 4);
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(encoder.graph), encoder_file,
                                            encoder.build_config(options), options.bundle_dir,
                                            "encoder.engine", options));

  // ---- decoder ----
  VOXRT_ASSIGN_OR_RETURN(auto decoder, load(decoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int context_size,
                         exporter_int(*decoder, "context_size", decoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int vocab_size, exporter_int(*decoder, "vocab_size", decoder_file));
  if (vocab_size != static_cast<int>(pieces.size())) {
    return invalid_argument(decoder_file, ": vocab_size ", vocab_size, " but ", tokens_file,
                            " has ", pieces.size(), " tokens");
  }
  if (decoder->inputs.size() != 1 || decoder->inputs[0]->name != "y" ||
      decoder->outputs.size() != 1) {
    return invalid_argument(decoder_file, ": expected one input 'y' [N, ", context_size,
                            "] and one output 'decoder_out'");
  }
  const std::int64_t max_rows = static_cast<std::int64_t>(options.max_batch) * options.max_beam;
  BuilderConfig decoder_config = options.build;
  decoder_config.states.clear();
  decoder_config.profiles = {
      OptimizationProfile{"rows", {{"y", rows_range(max_rows, {context_size}, opt_batch)}}}};
  decoder_config.profiling_values["y"] =
      Tensor::zeros(DType::kI64, {opt_batch, static_cast<std::int64_t>(context_size)});
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(decoder), decoder_file, decoder_config,
                                            options.bundle_dir, "decoder.engine", options));

  // ---- joiner ----
  VOXRT_ASSIGN_OR_RETURN(auto joiner, load(joiner_file));
  ir::Value* joiner_enc = joiner->find_value("encoder_out");
  ir::Value* joiner_dec = joiner->find_value("decoder_out");
  if (joiner->inputs.size() != 2 || !joiner_enc || !joiner_dec || joiner->outputs.size() != 1 ||
      joiner_enc->shape.size() != 2 || joiner_dec->shape.size() != 2 ||
      !joiner_enc->shape[1].is_known() || !joiner_dec->shape[1].is_known()) {
    return invalid_argument(joiner_file,
                            ": expected inputs 'encoder_out' [N, dim] and "
                            "'decoder_out' [N, dim] and one output 'logit'");
  }
  BuilderConfig joiner_config = options.build;
  joiner_config.states.clear();
  joiner_config.profiles = {OptimizationProfile{
      "rows",
      {{"encoder_out", rows_range(max_rows, {joiner_enc->shape[1].value}, opt_batch)},
       {"decoder_out", rows_range(max_rows, {joiner_dec->shape[1].value}, opt_batch)}}}};
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(joiner), joiner_file, joiner_config,
                                            options.bundle_dir, "joiner.engine", options));

  // ---- the bundle ----
  stream::BundleManifest manifest;
  manifest.family = "transducer";
  manifest.engines = {
      {"encoder", "encoder.engine"}, {"decoder", "decoder.engine"}, {"joiner", "joiner.engine"}};
  manifest.metadata = streaming_contract(num_bins, pieces, chunk_frames, shift_frames, subsampling);
  manifest.metadata["voxrt.model_family"] = "transducer";
  manifest.metadata["voxrt.transducer.context_size"] = std::to_string(context_size);
  manifest.metadata["voxrt.transducer.encoder_features_input"] = "x";
  manifest.metadata["voxrt.transducer.encoder_output"] = "encoder_out";
  if (!processed_input.empty())
    manifest.metadata["voxrt.transducer.encoder_processed_input"] = processed_input;
  manifest.metadata["voxrt.transducer.joiner_encoder_input"] = "encoder_out";
  manifest.source = {{"layout", report.layout},
                     {"model_type", model_type},
                     {"encoder", fs::path(encoder_file).filename().string()},
                     {"decoder", fs::path(decoder_file).filename().string()},
                     {"joiner", fs::path(joiner_file).filename().string()},
                     {"tokens", "tokens.txt"}};
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  report.notes.push_back(str_cat("model_type ", model_type, ", ", caches, " caches, T ",
                                 chunk_frames, ", decode_chunk_len ", shift_frames,
                                 ", subsampling ", subsampling, ", context_size ", context_size,
                                 ", ", pieces.size(), " tokens"));
  return report;
}

}  // namespace voxrt::model_import
