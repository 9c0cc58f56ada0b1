// Hugging Face optimum's Whisper export (optimum-cli export onnx --task
// automatic-speech-recognition-with-past): encoder_model.onnx (input_features [B, mels, 3000] ->
// last_hidden_state [B, 1500, d]), decoder_model.onnx (input_ids [B, T], encoder_hidden_states
// -> logits [B, T, vocab], present.N.{decoder,encoder}.{key,value} [B, heads, T|1500, d/heads]),
// decoder_with_past_model.onnx (input_ids [B, 1], past_key_values.N.* -> logits,
// present.N.decoder.*), with config.json, generation_config.json and the tokenizer files beside
// them (whisper_hf_config.h). The merged decoder (decoder_model_merged.onnx, an If on
// use_cache_branch) is refused with a message naming the two files to export instead.
#include <filesystem>

#include "model_import/icefall_encoder.h"
#include "model_import/import_support.h"
#include "model_import/optimum_layouts.h"
#include "model_import/whisper_hf_config.h"
#include "onnx_import/importer.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

constexpr const char* kEncoderFile = "encoder_model.onnx";
constexpr const char* kDecoderFile = "decoder_model.onnx";
constexpr const char* kDecoderWithPastFile = "decoder_with_past_model.onnx";
constexpr const char* kMergedDecoderFile = "decoder_model_merged.onnx";

bool exists_in(const std::string& dir, const char* name) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / name, ec);
}

std::string names_of(const std::vector<ir::Value*>& values) {
  std::string out;
  for (const ir::Value* v : values) out += (out.empty() ? "" : ", ") + v->name;
  return out;
}

bool has_name(const std::vector<ir::Value*>& values, const std::string& name) {
  for (const ir::Value* v : values) {
    if (v->name == name) return true;
  }
  return false;
}

// Every input of `graph` by name must be one of `expected`, and all of them present.
Status expect_inputs(const ir::Graph& graph, const std::vector<std::string>& expected,
                     const std::string& file) {
  bool same = graph.inputs.size() == expected.size();
  for (const std::string& name : expected) same = same && has_name(graph.inputs, name);
  if (same) return Status::ok();
  std::string wanted;
  for (const std::string& name : expected) wanted += (wanted.empty() ? "" : ", ") + name;
  return invalid_argument(file, ": expected the inputs (", wanted, "), found (",
                          names_of(graph.inputs), ")");
}

std::vector<std::string> past_names(int layers, const std::string& prefix, bool with_encoder) {
  std::vector<std::string> names;
  for (int i = 0; i < layers; ++i) {
    for (const char* side : {"decoder", "encoder"}) {
      if (!with_encoder && std::string(side) == "encoder") continue;
      for (const char* kv : {"key", "value"})
        names.push_back(str_cat(prefix, ".", i, ".", side, ".", kv));
    }
  }
  return names;
}

}  // namespace

bool is_optimum_whisper_dir(const std::string& dir) {
  return exists_in(dir, kEncoderFile) &&
         (exists_in(dir, kDecoderFile) || exists_in(dir, kDecoderWithPastFile) ||
          exists_in(dir, kMergedDecoderFile));
}

Expected<ModelDirImportReport> import_optimum_whisper(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "optimum-whisper";
  report.family = "encoder_decoder";
  if (!exists_in(dir, kDecoderFile) || !exists_in(dir, kDecoderWithPastFile)) {
    if (exists_in(dir, kMergedDecoderFile)) {
      return unsupported(dir, "/", kMergedDecoderFile,
                         ": the merged decoder (an If on use_cache_branch) is not imported yet; "
                         "export ",
                         kDecoderFile, " and ", kDecoderWithPastFile,
                         " (optimum-cli export onnx --no-post-process)");
    }
    return not_found(dir, ": an optimum Whisper export needs ", kDecoderFile, " and ",
                     kDecoderWithPastFile, " beside ", kEncoderFile, "; ",
                     exists_in(dir, kDecoderFile) ? kDecoderWithPastFile : kDecoderFile,
                     " is missing");
  }
  VOXRT_ASSIGN_OR_RETURN(WhisperHfConfig hf, read_whisper_hf_config(dir, options.language));
  stream::EncoderDecoderContract contract = hf.contract;
  const std::int64_t max_batch = options.max_batch;
  const std::int64_t opt_batch = std::min(options.max_batch, 4);
  const std::int64_t mels = contract.mel_bins;
  const std::int64_t source = hf.max_source_positions;
  const std::int64_t heads = hf.decoder_heads;
  const std::int64_t head_dim = hf.d_model / hf.decoder_heads;
  // The decoder takes a prompt of 1 (<|startoftranscript|> alone: language detection) to
  // max_prompt_tokens tokens (previous text included); the step engine takes a window's rows
  // times the beam.
  const std::int64_t prompt = contract.max_prompt_tokens();
  const std::int64_t max_step_rows = max_batch * std::max(1, options.max_beam);
  const std::int64_t max_past = contract.max_target_positions - 1;
  const int layers = contract.decoder_layers;

  // ---- encoder: one 30 s window per row ----
  const std::string encoder_file = (fs::path(dir) / kEncoderFile).string();
  VOXRT_ASSIGN_OR_RETURN(auto encoder, onnx_import::import_model_file(encoder_file));
  VOXRT_RETURN_IF_ERROR(expect_inputs(*encoder, {"input_features"}, encoder_file));
  if (encoder->outputs.size() != 1 || encoder->outputs[0]->name != "last_hidden_state") {
    return invalid_argument(encoder_file, ": expected one output 'last_hidden_state', found (",
                            names_of(encoder->outputs), ")");
  }
  BuilderConfig encoder_config = options.build;
  encoder_config.states.clear();
  encoder_config.profiles = {OptimizationProfile{
      "windows", {{"input_features", rows_range(max_batch, {mels, 2 * source}, opt_batch)}}}};
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(encoder), encoder_file, encoder_config,
                                            options.bundle_dir, "encoder.engine", options));

  // ---- decoder: the prompt, and the cross-attention keys and values ----
  const std::string decoder_file = (fs::path(dir) / kDecoderFile).string();
  VOXRT_ASSIGN_OR_RETURN(auto decoder, onnx_import::import_model_file(decoder_file));
  VOXRT_RETURN_IF_ERROR(
      expect_inputs(*decoder, {"input_ids", "encoder_hidden_states"}, decoder_file));
  for (const std::string& name : past_names(layers, "present", true)) {
    if (!has_name(decoder->outputs, name)) {
      return invalid_argument(decoder_file, ": output '", name, "' is missing (config.json ",
                              "decoder_layers is ", layers, "); its outputs are (",
                              names_of(decoder->outputs), ")");
    }
  }
  BuilderConfig decoder_config = options.build;
  decoder_config.states.clear();
  decoder_config.profiles = {OptimizationProfile{
      "prompt",
      {{"input_ids", ShapeRange{Dims{1, 1}, Dims{opt_batch, prompt}, Dims{max_batch, prompt}}},
       {"encoder_hidden_states", rows_range(max_batch, {source, hf.d_model}, opt_batch)}}}};
  decoder_config.profiling_values["input_ids"] = Tensor::zeros(DType::kI64, {opt_batch, prompt});
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(decoder), decoder_file, decoder_config,
                                            options.bundle_dir, "decoder.engine", options));

  // ---- decoder with past: one token per step, the self-attention past growing ----
  const std::string step_file = (fs::path(dir) / kDecoderWithPastFile).string();
  VOXRT_ASSIGN_OR_RETURN(auto step, onnx_import::import_model_file(step_file));
  std::vector<std::string> step_inputs = {"input_ids"};
  for (const std::string& name : past_names(layers, "past_key_values", true))
    step_inputs.push_back(name);
  VOXRT_RETURN_IF_ERROR(expect_inputs(*step, step_inputs, step_file));
  OptimizationProfile step_profile{"step", {}};
  step_profile.inputs["input_ids"] = rows_range(max_step_rows, {1}, opt_batch);
  const std::int64_t opt_past = std::min<std::int64_t>(max_past, prompt + 8);
  for (const std::string& name : past_names(layers, "past_key_values", true)) {
    if (name.find(".decoder.") != std::string::npos) {
      step_profile.inputs[name] =
          ShapeRange{Dims{1, heads, 1, head_dim}, Dims{opt_batch, heads, opt_past, head_dim},
                     Dims{max_step_rows, heads, max_past, head_dim}};
    } else {
      step_profile.inputs[name] = rows_range(max_step_rows, {heads, source, head_dim}, opt_batch);
    }
  }
  BuilderConfig step_config = options.build;
  step_config.states.clear();
  step_config.profiles = {step_profile};
  step_config.profiling_values["input_ids"] = Tensor::zeros(DType::kI64, {opt_batch, 1});
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(step), step_file, step_config,
                                            options.bundle_dir, "decoder_with_past.engine",
                                            options));

  // ---- the tokenizer files and the bundle ----
  std::error_code ec;
  fs::copy_file(hf.vocab_path, fs::path(options.bundle_dir) / contract.vocab_file,
                fs::copy_options::overwrite_existing, ec);
  if (!ec && !hf.added_tokens_path.empty()) {
    fs::copy_file(hf.added_tokens_path, fs::path(options.bundle_dir) / contract.added_tokens_file,
                  fs::copy_options::overwrite_existing, ec);
  }
  if (!ec && !hf.merges_path.empty()) {
    fs::copy_file(hf.merges_path, fs::path(options.bundle_dir) / contract.merges_file,
                  fs::copy_options::overwrite_existing, ec);
  }
  if (ec) return io_error(options.bundle_dir, ": cannot copy the tokenizer files: ", ec.message());
  stream::BundleManifest manifest;
  manifest.family = "encoder_decoder";
  manifest.engines = {{"encoder", "encoder.engine"},
                      {"decoder", "decoder.engine"},
                      {"decoder_with_past", "decoder_with_past.engine"}};
  manifest.metadata = contract.to_metadata();
  manifest.source = {{"layout", report.layout},
                     {"encoder", kEncoderFile},
                     {"decoder", kDecoderFile},
                     {"decoder_with_past", kDecoderWithPastFile},
                     {"language", !contract.multilingual()    ? "(English-only)"
                                  : hf.language_token.empty() ? "(detected per stream)"
                                                              : hf.language_token}};
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  report.notes.push_back(str_cat("d_model ", hf.d_model, ", ", hf.encoder_layers, "+", layers,
                                 " layers, ", heads, " heads, ", mels,
                                 " mel bins, prompt of at most ", prompt, " tokens, at most ",
                                 contract.max_target_positions, " tokens a window"));
  return report;
}

}  // namespace voxrt::model_import
