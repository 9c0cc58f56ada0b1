// NeMo's cache-aware streaming FastConformer-CTC as sherpa-onnx's
// scripts/nemo/fast-conformer-hybrid-transducer-ctc/export-onnx-ctc.py exports it (NeMo's
// export with cache_support, read by sherpa-onnx's online-nemo-ctc-model.cc): model.onnx and
// tokens.txt, the graph one step of NeMo's cache-aware streaming loop:
//   inputs  audio_signal [B, n_mels, T] (T = window_size = pre-encode cache + chunk), length [B]
//           int64, cache_last_channel [B, layers, cache, d_model], cache_last_time [B, layers,
//           d_model, kernel - 1], cache_last_channel_len [B] int64
//   outputs logprobs [B, T', vocab + 1] (blank last), encoded_lengths [B], and the three caches'
//           *_next (cache_last_channel_next, cache_last_time_next, cache_last_channel_next_len)
// with metadata window_size, chunk_shift, subsampling_factor, vocab_size (without the blank),
// normalize_type and cache_last_{channel,time}_dim{1,2,3}.
//
// The import maps it onto the ctc_streaming family (stream/ctc/ctc_model.h) by rewriting the
// graph's edges, never its body:
//   - features [B, chunk_shift, n_mels] (the driver's frames) replace audio_signal; the
//     window_size - chunk_shift frames before them (NeMo's pre-encode cache) become a state,
//     `pre_encode_cache` [B, pre, n_mels] -> `pre_encode_cache_next` (the window's last `pre`
//     frames), zeros for a new stream as NeMo's first chunk has; the window is transposed to
//     NeMo's [B, n_mels, T];
//   - `chunk_length` [B] int64 (the chunk's frames that hold audio, fed by the family:
//     voxrt.ctc.length_input) + pre replaces length, so the padding of a stream's last chunk is
//     masked as NeMo's streaming buffer masks a stream shorter than its batch;
//   - the three caches are state pairs (already batch-first; their cache axes, dynamic in the
//     export, fixed from the cache_last_*_dim metadata);
//   - encoded_lengths is dropped: the driver counts a chunk's output frames as ceil(audio frames /
//     subsampling), which is NeMo's causal dw_striding length minus drop_extra_pre_encoded.
// The front end is NeMo's log-mel without normalisation (nemo_log_mel.h): the streaming models
// are trained with normalize NA; a per_feature or all_features model cannot stream and is refused.
#include <algorithm>
#include <filesystem>
#include <limits>

#include "ir/shape_inference.h"
#include "model_import/icefall_encoder.h"
#include "model_import/import_support.h"
#include "model_import/nemo_layouts.h"
#include "onnx_import/importer.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

// The exporter's names (NeMo's Exportable for a cache-aware encoder + CTC decoder).
constexpr const char* kSignal = "audio_signal";
constexpr const char* kLength = "length";
constexpr const char* kLogprobs = "logprobs";
constexpr const char* kEncodedLengths = "encoded_lengths";
struct CachePair {
  const char* input;
  const char* output;
  const char* dim_key;  // metadata prefix of its non-batch dims, or "" (cache_last_channel_len)
};
constexpr CachePair kCaches[] = {
    {"cache_last_channel", "cache_last_channel_next", "cache_last_channel_dim"},
    {"cache_last_time", "cache_last_time_next", "cache_last_time_dim"},
    {"cache_last_channel_len", "cache_last_channel_next_len", ""}};
// The names the bundle's engine gets for what the import adds.
constexpr const char* kFeatures = "features";
constexpr const char* kChunkLength = "chunk_length";
constexpr const char* kPreEncodeCache = "pre_encode_cache";
constexpr const char* kPreEncodeCacheNext = "pre_encode_cache_next";

bool is_input(const ir::Graph& graph, const ir::Value* v) {
  return v != nullptr &&
         std::find(graph.inputs.begin(), graph.inputs.end(), v) != graph.inputs.end();
}

std::string names(const std::vector<ir::Value*>& values) {
  std::string out;
  for (const ir::Value* v : values) out += (out.empty() ? "" : ", ") + v->name;
  return out;
}

struct CacheAwareLayout {
  int n_mels = 0;
  int window_frames = 0;      // window_size
  int chunk_frames = 0;       // chunk_shift
  int pre_encode_frames = 0;  // window_size - chunk_shift
  int subsampling = 0;
  int classes = 0;
};

// Checks the export's inputs, outputs and metadata against NeMo's and sherpa-onnx's conventions;
// fixes the caches' dynamic axes from the metadata. Errors say expected / found / where.
Expected<CacheAwareLayout> check_export(ir::Graph& graph, const std::string& file) {
  CacheAwareLayout l;
  std::vector<std::string> expected_inputs = {kSignal, kLength};
  for (const CachePair& c : kCaches) expected_inputs.push_back(c.input);
  for (const ir::Value* input : graph.inputs) {
    if (std::find(expected_inputs.begin(), expected_inputs.end(), input->name) ==
        expected_inputs.end()) {
      return invalid_argument(file, ": unexpected input '", input->name,
                              "': a NeMo cache-aware export takes audio_signal, length, "
                              "cache_last_channel, cache_last_time and cache_last_channel_len");
    }
  }
  for (const std::string& name : expected_inputs) {
    if (!is_input(graph, graph.find_value(name))) {
      return invalid_argument(file, ": expected an input '", name,
                              "' (NeMo's cache-aware export names), found inputs ",
                              names(graph.inputs));
    }
  }
  ir::Value* signal = graph.find_value(kSignal);
  if (signal->shape.size() != 3 || !signal->shape[1].is_known()) {
    return invalid_argument(file, ": audio_signal must be [B, n_mels, T] with n_mels known, found ",
                            ir::sym_shape_to_string(signal->shape));
  }
  l.n_mels = static_cast<int>(signal->shape[1].value);
  const ir::Value* length = graph.find_value(kLength);
  if (length->dtype != DType::kI64 || length->shape.size() != 1) {
    return invalid_argument(file, ": length must be int64 [B], found ",
                            ir::sym_shape_to_string(length->shape));
  }
  VOXRT_ASSIGN_OR_RETURN(l.window_frames, exporter_int(graph, "window_size", file));
  VOXRT_ASSIGN_OR_RETURN(l.chunk_frames, exporter_int(graph, "chunk_shift", file));
  VOXRT_ASSIGN_OR_RETURN(l.subsampling, exporter_int(graph, "subsampling_factor", file));
  if (l.subsampling < 1 || l.chunk_frames < l.subsampling || l.chunk_frames % l.subsampling != 0) {
    return invalid_argument(file, ": chunk_shift ", l.chunk_frames,
                            " must be a positive multiple of subsampling_factor ", l.subsampling);
  }
  if (l.window_frames < l.chunk_frames) {
    return invalid_argument(file, ": window_size ", l.window_frames, " is less than chunk_shift ",
                            l.chunk_frames,
                            " (window_size = chunk + pre-encode cache frames, as sherpa-onnx's "
                            "export script writes it)");
  }
  l.pre_encode_frames = l.window_frames - l.chunk_frames;
  // The caches: batch-first in the export (NeMo transposes them in forward_for_export), their
  // cache axis dynamic; the slot pool needs every non-batch dim, which the metadata gives.
  for (const CachePair& c : kCaches) {
    ir::Value* in = graph.find_value(c.input);
    ir::Value* out = graph.find_value(c.output);
    if (out == nullptr || !graph.is_graph_output(out)) {
      return invalid_argument(file, ": expected an output '", c.output, "' for the cache input '",
                              c.input, "', found outputs ", names(graph.outputs));
    }
    if (std::string(c.dim_key).empty()) {
      if (in->dtype != DType::kI64 || in->shape.size() != 1) {
        return invalid_argument(file, ": ", c.input, " must be int64 [B], found ",
                                ir::sym_shape_to_string(in->shape));
      }
      continue;
    }
    if (in->shape.size() != 4) {
      return invalid_argument(file, ": ", c.input, " must be [B, d1, d2, d3], found ",
                              ir::sym_shape_to_string(in->shape));
    }
    for (std::size_t d = 1; d < 4; ++d) {
      const std::string key = str_cat(c.dim_key, d);
      VOXRT_ASSIGN_OR_RETURN(const int size, exporter_int(graph, key, file));
      if (in->shape[d].is_known() && in->shape[d].value != size) {
        return invalid_argument(file, ": ", c.input, " ", ir::sym_shape_to_string(in->shape),
                                " has ", in->shape[d].value, " on axis ", d, " but metadata ", key,
                                " is ", size);
      }
      in->shape[d] = ir::Dim::known(size);
    }
  }
  ir::Value* logprobs = graph.find_value(kLogprobs);
  if (logprobs == nullptr || !graph.is_graph_output(logprobs)) {
    return invalid_argument(file, ": expected an output 'logprobs' (NeMo's CTC decoder), found ",
                            names(graph.outputs));
  }
  for (const ir::Value* o : graph.outputs) {
    bool known = o->name == kLogprobs || o->name == kEncodedLengths;
    for (const CachePair& c : kCaches) known = known || o->name == c.output;
    if (!known) {
      return invalid_argument(file, ": unexpected output '", o->name,
                              "' (expected logprobs, encoded_lengths and the caches' *_next)");
    }
  }
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(graph).with_context(file));
  if (logprobs->shape.size() != 3 || !logprobs->shape[2].is_known()) {
    return invalid_argument(file, ": logprobs must be [B, T, classes] with classes known, found ",
                            ir::sym_shape_to_string(logprobs->shape));
  }
  l.classes = static_cast<int>(logprobs->shape[2].value);
  return l;
}

ir::Value* int64_constant(ir::Graph& graph, const std::string& name,
                          const std::vector<std::int64_t>& values) {
  return graph.add_constant(
      graph.unique_name(name),
      Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(values.size())}, values));
}

// The edges described at the top of the file: features + pre_encode_cache -> the window NeMo
// takes, chunk_length -> length, encoded_lengths dropped.
Status rewrite_edges(ir::Graph& graph, const CacheAwareLayout& l) {
  ir::Value* signal = graph.find_value(kSignal);
  ir::Value* length = graph.find_value(kLength);
  const ir::Dim batch = signal->shape[0];
  const ir::Dim mels = ir::Dim::known(l.n_mels);
  // The window: Concat(pre_encode_cache, features) on time, then [B, T, n_mels] -> [B, n_mels, T].
  signal->name = graph.unique_name(std::string(kSignal) + "/from_features");
  ir::Value* features =
      graph.add_value(kFeatures, DType::kF32, {batch, ir::Dim::known(l.chunk_frames), mels});
  ir::Value* cache = graph.add_value(kPreEncodeCache, DType::kF32,
                                     {batch, ir::Dim::known(l.pre_encode_frames), mels});
  ir::Value* window = graph.add_value(graph.unique_name("pre_encode_window"), DType::kF32,
                                      {batch, ir::Dim::known(l.window_frames), mels});
  ir::Node* concat = graph.add_node(ir::OpKind::kConcat, graph.unique_name("pre_encode_window"),
                                    {cache, features}, {window});
  concat->attrs.set("axis", std::int64_t{1});
  concat->opset = 13;
  ir::Node* to_nemo = graph.add_node(ir::OpKind::kTranspose, graph.unique_name("to_audio_signal"),
                                     {window}, {signal});
  to_nemo->attrs.set("perm", std::vector<std::int64_t>{0, 2, 1});
  to_nemo->opset = 13;
  // The next pre-encode cache: the window's last pre frames.
  ir::Value* next = graph.add_value(kPreEncodeCacheNext, DType::kF32,
                                    {batch, ir::Dim::known(l.pre_encode_frames), mels});
  ir::Node* tail = graph.add_node(
      ir::OpKind::kSlice, graph.unique_name("pre_encode_cache_next"),
      {window, int64_constant(graph, "pre_encode_starts", {-l.pre_encode_frames}),
       int64_constant(graph, "pre_encode_ends", {std::numeric_limits<std::int64_t>::max()}),
       int64_constant(graph, "pre_encode_axes", {1})},
      {next});
  tail->opset = 13;
  // length = chunk_length + pre (the pre-encode cache always holds pre frames: zeros at first).
  length->name = graph.unique_name(std::string(kLength) + "/from_chunk_length");
  ir::Value* chunk_length = graph.add_value(kChunkLength, DType::kI64, {batch});
  ir::Node* add = graph.add_node(
      ir::OpKind::kAdd, graph.unique_name("window_length"),
      {chunk_length, int64_constant(graph, "pre_encode_frames", {l.pre_encode_frames})}, {length});
  add->opset = 13;
  // One batch symbol for every input (the export names each input's batch axis on its own).
  for (const CachePair& c : kCaches) graph.find_value(c.input)->shape[0] = batch;
  std::replace(graph.inputs.begin(), graph.inputs.end(), signal, features);
  std::replace(graph.inputs.begin(), graph.inputs.end(), length, chunk_length);
  graph.inputs.push_back(cache);
  graph.outputs.erase(std::remove_if(graph.outputs.begin(), graph.outputs.end(),
                                     [](const ir::Value* o) { return o->name == kEncodedLengths; }),
                      graph.outputs.end());
  graph.outputs.push_back(next);
  return graph.validate();
}

}  // namespace

bool is_nemo_cache_aware_ctc_dir(const std::string& dir) {
  if (!is_nemo_sherpa_ctc_dir(dir)) return false;
  // The same files as sherpa-onnx's offline NeMo CTC layout: the graph's cache inputs tell.
  auto model_file = find_one_file(dir, "model", ".onnx", "NeMo CTC model");
  if (!model_file) return false;
  auto graph = onnx_import::import_model_file(*model_file);
  if (!graph) return false;
  for (const ir::Value* input : (*graph)->inputs)
    if (input->name == kCaches[0].input) return true;
  return false;
}

Expected<ModelDirImportReport> import_nemo_cache_aware_ctc(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-sherpa-onnx-cache-aware-ctc";
  report.family = "ctc_streaming";
  VOXRT_ASSIGN_OR_RETURN(std::string model_file,
                         find_one_file(dir, "model", ".onnx", "NeMo cache-aware CTC model"));
  const std::string tokens_file = (fs::path(dir) / "tokens.txt").string();
  VOXRT_ASSIGN_OR_RETURN(std::vector<std::string> pieces, read_tokens_txt(tokens_file));
  VOXRT_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph,
                         onnx_import::import_model_file(model_file));
  VOXRT_ASSIGN_OR_RETURN(const CacheAwareLayout layout, check_export(*graph, model_file));
  const auto& meta = graph->metadata;
  auto normalize = meta.find("normalize_type");
  if (normalize == meta.end()) {
    return invalid_argument(model_file,
                            ": metadata_props has no 'normalize_type' (sherpa-onnx's NeMo export "
                            "scripts write it; was the file exported by one?)");
  }
  if (!normalize->second.empty() && normalize->second != "NA") {
    return unsupported(model_file, ": normalize_type '", normalize->second,
                       "': a cache-aware streaming model must be trained without per-utterance "
                       "normalisation (expected '' or NA, NeMo's streaming configs' normalize NA)");
  }
  VOXRT_ASSIGN_OR_RETURN(const int vocab_size, exporter_int(*graph, "vocab_size", model_file));
  // NeMo's vocab_size leaves the blank out (sherpa-onnx adds one when it loads the model).
  if (vocab_size + 1 != static_cast<int>(pieces.size())) {
    return invalid_argument(model_file, ": metadata vocab_size ", vocab_size,
                            " (without the blank) but ", tokens_file, " has ", pieces.size(),
                            " tokens; expected vocab_size + 1");
  }
  if (pieces.back() != "<blk>") {
    return invalid_argument(tokens_file, ": the last token is '", pieces.back(),
                            "', expected <blk> (NeMo's blank is the last class)");
  }
  if (layout.classes != static_cast<int>(pieces.size())) {
    return invalid_argument(model_file, ": logprobs has ", layout.classes, " classes, but ",
                            tokens_file, " has ", pieces.size(), " tokens with the blank");
  }
  VOXRT_RETURN_IF_ERROR(rewrite_edges(*graph, layout).with_context(model_file));
  auto model_type = meta.find("model_type");
  report.notes.push_back(str_cat(
      "model_type ", model_type == meta.end() ? "(none)" : model_type->second, ", ", layout.n_mels,
      " mel bins, window ", layout.window_frames, " frames = ", layout.pre_encode_frames,
      " pre-encode cache + ", layout.chunk_frames, " new, subsampling ", layout.subsampling, ", ",
      pieces.size(), " tokens (blank last)"));
  report.notes.push_back(
      "front end: NeMo's log-mel without normalisation, its defaults (the layout keeps no "
      "preprocessor settings): 16 kHz, 25/10 ms, n_fft 512, preemph 0.97");
  stream::BundleManifest manifest;
  manifest.family = "ctc_streaming";
  manifest.engines = {{"model", "model.engine"}};
  auto& m = manifest.metadata;
  m["voxrt.model_family"] = "ctc_streaming";
  m["voxrt.feature.type"] = "nemo_log_mel";
  m["voxrt.feature.num_bins"] = std::to_string(layout.n_mels);
  m["voxrt.chunk_frames"] = std::to_string(layout.chunk_frames);
  m["voxrt.shift_frames"] = std::to_string(layout.chunk_frames);
  m["voxrt.subsampling"] = std::to_string(layout.subsampling);
  m["voxrt.chunk_pad"] = "zero";
  m["voxrt.ctc.length_input"] = kChunkLength;
  m["voxrt.vocabulary"] = vocabulary_lines(pieces);
  m["voxrt.unit"] = "pieces";
  m["voxrt.blank_id"] = std::to_string(pieces.size() - 1);
  std::string pairs = str_cat(kPreEncodeCache, ":", kPreEncodeCacheNext);
  for (const CachePair& c : kCaches) pairs += str_cat(",", c.input, ":", c.output);
  m["voxrt.state_pairs"] = pairs;
  manifest.source = {{"layout", report.layout},
                     {"model_type", model_type == meta.end() ? "" : model_type->second},
                     {"model", fs::path(model_file).filename().string()},
                     {"tokens", "tokens.txt"}};
  BuilderConfig config = options.build;
  config.states = {{kPreEncodeCache, kPreEncodeCacheNext}};
  for (const CachePair& c : kCaches) config.states.push_back({c.input, c.output});
  // Whole chunks only: a stream's last chunk is padded to chunk_shift frames and its
  // chunk_length masks the padding, as NeMo's streaming buffer does.
  const std::int64_t opt = std::min(options.max_batch, 4);
  config.profiles = {OptimizationProfile{
      "streams",
      {{kFeatures, rows_range(options.max_batch, {layout.chunk_frames, layout.n_mels}, opt)},
       {kChunkLength, rows_range(options.max_batch, {}, opt)}}}};
  config.profiling_values[kChunkLength] = Tensor::from_vector<std::int64_t>(
      {opt}, std::vector<std::int64_t>(static_cast<std::size_t>(opt), layout.chunk_frames));
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(graph), model_file, config,
                                            options.bundle_dir, "model.engine", options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

}  // namespace voxrt::model_import
