#include "model_import/icefall_encoder.h"

#include <algorithm>

#include "ir/shape_inference.h"
#include "onnx_import/importer.h"

namespace voxrt::model_import {

ShapeRange rows_range(std::int64_t max_rows, const std::vector<std::int64_t>& rest,
                      std::int64_t opt_rows) {
  Dims min{1}, opt{opt_rows}, max{max_rows};
  for (auto d : rest) {
    min.push_back(d);
    opt.push_back(d);
    max.push_back(d);
  }
  return ShapeRange{min, opt, max};
}

Expected<IcefallStreamingEncoder> read_icefall_streaming_encoder(const std::string& file,
                                                                 const std::string& output) {
  IcefallStreamingEncoder e;
  e.file = file;
  VOXRT_ASSIGN_OR_RETURN(e.graph, onnx_import::import_model_file(file));
  ir::Graph& g = *e.graph;
  auto type = g.metadata.find("model_type");
  if (type != g.metadata.end()) e.model_type = type->second;
  VOXRT_ASSIGN_OR_RETURN(e.chunk_frames, exporter_int(g, "T", file));
  VOXRT_ASSIGN_OR_RETURN(e.shift_frames, exporter_int(g, "decode_chunk_len", file));
  if (e.shift_frames < 1 || e.shift_frames > e.chunk_frames) {
    return invalid_argument(file, ": decode_chunk_len ", e.shift_frames, " must be 1..T (T is ",
                            e.chunk_frames, ")");
  }
  ir::Value* x = g.find_value("x");
  if (!x || std::find(g.inputs.begin(), g.inputs.end(), x) == g.inputs.end())
    return invalid_argument(file, ": expected an input 'x' [N, T, num_bins]");
  if (x->shape.size() != 3 || !x->shape[2].is_known()) {
    return invalid_argument(file,
                            ": input 'x' must be [N, T, num_bins] with num_bins known, found ",
                            ir::sym_shape_to_string(x->shape));
  }
  const std::string batch_symbol = x->shape[0].symbol;
  e.num_bins = static_cast<int>(x->shape[2].value);
  ir::Value* out = g.find_value(output);
  if (!out || !g.is_graph_output(out))
    return invalid_argument(file, ": expected an output '", output, "'");
  // Output frames per chunk (static in icefall's exports: only N is dynamic).
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(g).with_context(file));
  if (out->shape.size() == 3 && out->shape[1].is_known() && out->shape[1].value > 0) {
    e.subsampling = e.shift_frames / static_cast<int>(out->shape[1].value);
  } else if (g.metadata.count("chunk_size")) {
    // Conformer exports name their output frames per chunk.
    VOXRT_ASSIGN_OR_RETURN(const int chunk_size, exporter_int(g, "chunk_size", file));
    if (chunk_size > 0) e.subsampling = e.shift_frames / chunk_size;
  } else {
    e.notes.push_back(output + "'s time axis is not static: subsampling taken as 4");
  }
  for (const ir::Value* input : g.inputs) {
    if (input == x) continue;
    ir::Value* paired = g.find_value("new_" + input->name);
    if (paired && g.is_graph_output(paired)) {
      const int axis = batch_axis_of(*input, batch_symbol);
      if (axis < 0) {
        return invalid_argument(file, ": cache '", input->name, "' ",
                                ir::sym_shape_to_string(input->shape),
                                " has no axis named like x's batch ('", batch_symbol,
                                "'); its dynamic_axes must name the batch");
      }
      e.states.push_back({input->name, paired->name, axis});
    } else if (input->name == "processed_lens") {
      e.processed_input = input->name;
    } else {
      return invalid_argument(file, ": unexpected input '", input->name,
                              "': neither x, processed_lens nor a cache with an output 'new_",
                              input->name, "'");
    }
  }
  for (const ir::Value* o : g.outputs) {
    if (o == out) continue;
    bool known = false;
    for (const auto& s : e.states) known = known || s.output == o->name;
    if (!known) {
      return invalid_argument(file, ": unexpected output '", o->name, "' (expected ", output,
                              " and new_<cache> outputs)");
    }
  }
  VOXRT_RETURN_IF_ERROR(make_states_batch_first(g, e.states).with_context(file));
  return e;
}

std::map<std::string, std::string> streaming_contract(int num_bins,
                                                      const std::vector<std::string>& pieces,
                                                      int chunk_frames, int shift_frames,
                                                      int subsampling) {
  std::map<std::string, std::string> m = sherpa_fbank_metadata(num_bins);
  const auto blank = std::find(pieces.begin(), pieces.end(), "<blk>");
  m["voxrt.vocabulary"] = vocabulary_lines(pieces);
  m["voxrt.unit"] = "pieces";
  m["voxrt.blank_id"] = std::to_string(blank == pieces.end() ? 0 : blank - pieces.begin());
  m["voxrt.chunk_frames"] = std::to_string(chunk_frames);
  m["voxrt.shift_frames"] = std::to_string(shift_frames);
  m["voxrt.subsampling"] = std::to_string(subsampling);
  m["voxrt.chunk_pad"] = "silence";
  return m;
}

BuilderConfig IcefallStreamingEncoder::build_config(const ModelDirImportOptions& options) const {
  BuilderConfig config = options.build;
  config.states.clear();
  for (const auto& s : states) config.states.push_back({s.input, s.output});
  const std::int64_t opt = std::min(options.max_batch, 4);
  config.profiles = {OptimizationProfile{
      "streams", {{"x", rows_range(options.max_batch, {chunk_frames, num_bins}, opt)}}}};
  if (!processed_input.empty())
    config.profiling_values[processed_input] = Tensor::zeros(DType::kI64, {opt});
  return config;
}

}  // namespace voxrt::model_import
