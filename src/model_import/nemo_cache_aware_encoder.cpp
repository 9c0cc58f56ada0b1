#include "model_import/nemo_cache_aware_encoder.h"

#include <algorithm>
#include <array>
#include <limits>

#include "ir/shape_inference.h"
#include "onnx_import/importer.h"

namespace voxrt::model_import {
namespace {

// The exporter's names (NeMo's Exportable for a cache-aware encoder, alone or with the CTC
// decoder).
constexpr const char* kSignal = "audio_signal";
constexpr const char* kLength = "length";
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

// sherpa-onnx's metadata_props: window_size, chunk_shift, subsampling_factor and the caches'
// cache_last_{channel,time}_dim1..3.
Expected<NemoCacheAwareSizes> sizes_from_metadata(const ir::Graph& graph, const std::string& file) {
  NemoCacheAwareSizes s;
  s.source = "metadata_props";
  VOXRT_ASSIGN_OR_RETURN(s.window_frames, exporter_int(graph, "window_size", file));
  VOXRT_ASSIGN_OR_RETURN(s.chunk_frames, exporter_int(graph, "chunk_shift", file));
  VOXRT_ASSIGN_OR_RETURN(s.subsampling, exporter_int(graph, "subsampling_factor", file));
  for (std::size_t d = 0; d < 3; ++d) {
    VOXRT_ASSIGN_OR_RETURN(s.cache_last_channel_dims[d],
                           exporter_int(graph, str_cat(kCaches[0].dim_key, d + 1), file));
    VOXRT_ASSIGN_OR_RETURN(s.cache_last_time_dims[d],
                           exporter_int(graph, str_cat(kCaches[1].dim_key, d + 1), file));
  }
  return s;
}

struct CacheAwareLayout {
  int n_mels = 0;
  int window_frames = 0;      // window_size
  int chunk_frames = 0;       // chunk_shift
  int pre_encode_frames = 0;  // window_size - chunk_shift
  int subsampling = 0;
};

// Checks the export's inputs, outputs and metadata against NeMo's and sherpa-onnx's conventions;
// fixes the caches' dynamic axes from the metadata. Errors say expected / found / where.
Expected<CacheAwareLayout> check_export(ir::Graph& graph, const std::string& file,
                                        const std::string& output,
                                        const NemoCacheAwareSizes* given) {
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
  // The sizes: sherpa-onnx's metadata, or the caller's (NeMo's own export: model_config.yaml).
  NemoCacheAwareSizes sizes;
  if (given != nullptr) {
    sizes = *given;
  } else {
    VOXRT_ASSIGN_OR_RETURN(sizes, sizes_from_metadata(graph, file));
  }
  l.window_frames = sizes.window_frames;
  l.chunk_frames = sizes.chunk_frames;
  l.subsampling = sizes.subsampling;
  if (l.subsampling < 1 || l.chunk_frames < l.subsampling || l.chunk_frames % l.subsampling != 0) {
    return invalid_argument(file, ": chunk_shift ", l.chunk_frames,
                            " must be a positive multiple of subsampling_factor ", l.subsampling,
                            " (", sizes.source, ")");
  }
  if (l.window_frames < l.chunk_frames) {
    return invalid_argument(
        file, ": window_size ", l.window_frames, " is less than chunk_shift ", l.chunk_frames,
        " (window_size = chunk + pre-encode cache frames; from ", sizes.source, ")");
  }
  l.pre_encode_frames = l.window_frames - l.chunk_frames;
  // The caches: batch-first in the export (NeMo transposes them in forward_for_export), their
  // cache axis dynamic; the slot pool needs every non-batch dim, which the sizes give. A static
  // dim of the graph that disagrees is an error (a layer-first cache, say, or another model's
  // config).
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
    // The batch axis is dynamic in NeMo's export; a static axis 0 is the layers of a cache kept
    // layer-first ([layers, B, ...], the module's layout inside), which the sizes below would
    // silently misread as [B, layers, ...].
    if (in->shape[0].is_known() || !in->shape[1].is_known()) {
      return invalid_argument(file, ": ", c.input, " is ", ir::sym_shape_to_string(in->shape),
                              "; expected the batch first and dynamic, the layers static ([B, ",
                              c.input == std::string(kCaches[0].input) ? "layers, cache, d_model"
                                                                       : "layers, d_model, cache",
                              "], as NeMo's forward_for_export takes it), found axis 0 ",
                              in->shape[0].is_known() ? "static" : "dynamic", " and axis 1 ",
                              in->shape[1].is_known() ? "static" : "dynamic",
                              " (a layer-first cache?)");
    }
    const std::array<int, 3>& dims =
        &c == &kCaches[0] ? sizes.cache_last_channel_dims : sizes.cache_last_time_dims;
    for (std::size_t d = 1; d < 4; ++d) {
      const int size = dims[d - 1];
      if (in->shape[d].is_known() && in->shape[d].value != size) {
        return invalid_argument(file, ": ", c.input, " ", ir::sym_shape_to_string(in->shape),
                                " has ", in->shape[d].value, " on axis ", d, " but ", sizes.source,
                                " gives ", size, " (expected ", c.input,
                                c.input == std::string(kCaches[0].input)
                                    ? " [B, layers, last_channel_cache_size, d_model])"
                                    : " [B, layers, d_model, conv cache])");
      }
      in->shape[d] = ir::Dim::known(size);
    }
  }
  ir::Value* out = graph.find_value(output);
  if (out == nullptr || !graph.is_graph_output(out)) {
    return invalid_argument(file, ": expected an output '", output, "', found ",
                            names(graph.outputs));
  }
  for (const ir::Value* o : graph.outputs) {
    bool known = o->name == output || o->name == kEncodedLengths;
    for (const CachePair& c : kCaches) known = known || o->name == c.output;
    if (!known) {
      return invalid_argument(file, ": unexpected output '", o->name, "' (expected ", output,
                              ", encoded_lengths and the caches' *_next)");
    }
  }
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(graph).with_context(file));
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
Status rewrite_edges(ir::Graph& graph, const CacheAwareLayout& l, const std::string& output,
                     bool channels_first_output) {
  ir::Value* signal = graph.find_value(kSignal);
  ir::Value* length = graph.find_value(kLength);
  const ir::Dim batch = signal->shape[0];
  const ir::Dim mels = ir::Dim::known(l.n_mels);
  // The window: Concat(pre_encode_cache, features) on time, then [B, T, n_mels] -> [B, n_mels, T].
  signal->name = graph.unique_name(std::string(kSignal) + "/from_features");
  ir::Value* features = graph.add_value(kNemoCacheAwareFeaturesInput, DType::kF32,
                                        {batch, ir::Dim::known(l.chunk_frames), mels});
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
  ir::Value* chunk_length = graph.add_value(kNemoChunkLengthInput, DType::kI64, {batch});
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
  if (channels_first_output) {
    // NeMo's encoder gives [B, D, T]; the families take frames [B, T, D].
    ir::Value* exported = graph.find_value(output);
    exported->name = graph.unique_name(output + "/channels_first");
    ir::Value* frames = graph.add_value(output, exported->dtype, {});
    frames->rank_known = false;
    ir::Node* t = graph.add_node(ir::OpKind::kTranspose, graph.unique_name(output + "/frames"),
                                 {exported}, {frames});
    t->attrs.set("perm", std::vector<std::int64_t>{0, 2, 1});
    t->opset = 13;
    std::replace(graph.outputs.begin(), graph.outputs.end(), exported, frames);
  }
  return graph.validate();
}

}  // namespace

bool is_nemo_cache_aware_export(const std::string& onnx_file) {
  auto graph = onnx_import::import_model_file(onnx_file);
  if (!graph) return false;
  for (const ir::Value* input : (*graph)->inputs)
    if (input->name == kCaches[0].input) return true;
  return false;
}

Expected<NemoCacheAwareEncoder> read_nemo_cache_aware_encoder(const std::string& file,
                                                              const std::string& output,
                                                              bool channels_first_output,
                                                              const NemoCacheAwareSizes* sizes) {
  NemoCacheAwareEncoder e;
  e.file = file;
  e.output = output;
  VOXRT_ASSIGN_OR_RETURN(e.graph, onnx_import::import_model_file(file));
  VOXRT_ASSIGN_OR_RETURN(const CacheAwareLayout layout,
                         check_export(*e.graph, file, output, sizes));
  const auto& meta = e.graph->metadata;
  auto normalize = meta.find("normalize_type");
  // NeMo's own export has no metadata: its caller checks model_config.yaml's normalize.
  if (sizes == nullptr && normalize == meta.end()) {
    return invalid_argument(file,
                            ": metadata_props has no 'normalize_type' (sherpa-onnx's NeMo export "
                            "scripts write it; was the file exported by one?)");
  }
  if (sizes == nullptr && !normalize->second.empty() && normalize->second != "NA") {
    return unsupported(file, ": normalize_type '", normalize->second,
                       "': a cache-aware streaming model must be trained without per-utterance "
                       "normalisation (expected '' or NA, NeMo's streaming configs' normalize NA)");
  }
  auto model_type = meta.find("model_type");
  if (model_type != meta.end()) e.model_type = model_type->second;
  e.n_mels = layout.n_mels;
  e.window_frames = layout.window_frames;
  e.chunk_frames = layout.chunk_frames;
  e.pre_encode_frames = layout.pre_encode_frames;
  e.subsampling = layout.subsampling;
  ir::Value* out = e.graph->find_value(output);
  if (out->shape.size() != 3 || !out->shape[channels_first_output ? 1 : 2].is_known()) {
    return invalid_argument(
        file, ": ", output, " must be ",
        channels_first_output ? "[B, D, T] with D known" : "[B, T, C] with C known", ", found ",
        ir::sym_shape_to_string(out->shape));
  }
  e.output_dim = out->shape[channels_first_output ? 1 : 2].value;
  VOXRT_RETURN_IF_ERROR(
      rewrite_edges(*e.graph, layout, output, channels_first_output).with_context(file));
  e.states = {{kPreEncodeCache, kPreEncodeCacheNext}};
  for (const CachePair& c : kCaches) e.states.push_back({c.input, c.output});
  return e;
}

std::map<std::string, std::string> NemoCacheAwareEncoder::streaming_contract() const {
  std::map<std::string, std::string> m;
  m["voxrt.feature.type"] = "nemo_log_mel";
  m["voxrt.feature.num_bins"] = std::to_string(n_mels);
  m["voxrt.chunk_frames"] = std::to_string(chunk_frames);
  m["voxrt.shift_frames"] = std::to_string(chunk_frames);
  m["voxrt.subsampling"] = std::to_string(subsampling);
  m["voxrt.chunk_pad"] = "zero";
  std::string pairs;
  for (const auto& [in, out] : states) pairs += str_cat(pairs.empty() ? "" : ",", in, ":", out);
  m["voxrt.state_pairs"] = pairs;
  return m;
}

std::string NemoCacheAwareEncoder::describe() const {
  return str_cat("model_type ", model_type.empty() ? "(none)" : model_type, ", ", n_mels,
                 " mel bins, window ", window_frames, " frames = ", pre_encode_frames,
                 " pre-encode cache + ", chunk_frames, " new, subsampling ", subsampling);
}

BuilderConfig NemoCacheAwareEncoder::build_config(const ModelDirImportOptions& options) const {
  BuilderConfig config = options.build;
  config.states.clear();
  for (const auto& [in, out] : states) config.states.push_back({in, out});
  // Whole chunks only: a stream's last chunk is padded to chunk_shift frames and its
  // chunk_length masks the padding, as NeMo's streaming buffer does.
  const std::int64_t opt = std::min(options.max_batch, 4);
  config.profiles = {OptimizationProfile{
      "streams",
      {{kNemoCacheAwareFeaturesInput, rows_range(options.max_batch, {chunk_frames, n_mels}, opt)},
       {kNemoChunkLengthInput, rows_range(options.max_batch, {}, opt)}}}};
  config.profiling_values[kNemoChunkLengthInput] = Tensor::from_vector<std::int64_t>(
      {opt}, std::vector<std::int64_t>(static_cast<std::size_t>(opt), chunk_frames));
  return config;
}

}  // namespace voxrt::model_import
