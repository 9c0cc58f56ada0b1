#include "model_import/nemo_decoder_joint.h"

#include <algorithm>
#include <set>

#include "ir/passes/eliminate_dead_nodes.h"
#include "ir/shape_inference.h"
#include "onnx_import/importer.h"

namespace voxrt::model_import {
namespace {

// The exporter's names (RNNTDecoderJoint's input_types and output_types).
constexpr const char* kEncoderOutputs = "encoder_outputs";
constexpr const char* kTargets = "targets";
constexpr const char* kTargetLength = "target_length";
constexpr const char* kStates[] = {"input_states_1", "input_states_2"};
constexpr const char* kJointOutput = "outputs";
constexpr const char* kLengthsOutput = "prednet_lengths";
constexpr const char* kStatesNext[] = {"output_states_1", "output_states_2"};
// The name the crossing value gets in both engines.
constexpr const char* kDecoderOutputs = "decoder_outputs";

std::string names_of(const std::vector<ir::Value*>& values) {
  std::string out;
  for (const ir::Value* v : values) out += (out.empty() ? "" : ", ") + v->name;
  return out;
}

Status check_names(const ir::Graph& graph, const std::string& file) {
  const std::vector<std::string> inputs = {kEncoderOutputs, kTargets, kTargetLength, kStates[0],
                                           kStates[1]};
  const std::vector<std::string> outputs = {kJointOutput, kLengthsOutput, kStatesNext[0],
                                            kStatesNext[1]};
  std::vector<std::string> found_in, found_out;
  for (const ir::Value* v : graph.inputs) found_in.push_back(v->name);
  for (const ir::Value* v : graph.outputs) found_out.push_back(v->name);
  if (found_in != inputs || found_out != outputs) {
    return invalid_argument(file,
                            ": expected NeMo's decoder_joint export (RNNTDecoderJoint): inputs "
                            "encoder_outputs, targets, target_length, input_states_1, "
                            "input_states_2 and outputs outputs, prednet_lengths, "
                            "output_states_1, output_states_2; found inputs ",
                            names_of(graph.inputs), " and outputs ", names_of(graph.outputs));
  }
  return Status::ok();
}

Status prune(ir::Graph& graph) {
  ir::PassReport report;
  VOXRT_RETURN_IF_ERROR(ir::make_eliminate_dead_nodes_pass()->apply(graph, report));
  graph.prune_unused_values();
  return graph.validate();
}

ir::Value* shape_constant(ir::Graph& graph, const std::string& name,
                          const std::vector<std::int64_t>& dims) {
  return graph.add_constant(
      graph.unique_name(name),
      Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(dims.size())}, dims));
}

// The crossing: values that nodes depending on encoder_outputs read and that neither depend on
// it nor are constants.
Expected<ir::Value*> find_crossing(const ir::Graph& graph, const std::string& file) {
  std::set<const ir::Value*> from_encoder = {graph.find_value(kEncoderOutputs)};
  VOXRT_ASSIGN_OR_RETURN(const std::vector<ir::Node*> order, graph.topological_order());
  std::vector<const ir::Node*> joint_nodes;
  for (const ir::Node* node : order) {
    const bool reads_encoder =
        std::any_of(node->inputs.begin(), node->inputs.end(),
                    [&](const ir::Value* v) { return v != nullptr && from_encoder.count(v) > 0; });
    if (!reads_encoder) continue;
    joint_nodes.push_back(node);
    for (const ir::Value* out : node->outputs)
      if (out != nullptr) from_encoder.insert(out);
  }
  std::vector<ir::Value*> crossing;
  for (const ir::Node* node : joint_nodes) {
    for (ir::Value* v : node->inputs) {
      if (v == nullptr || v->is_constant() || from_encoder.count(v) > 0) continue;
      if (std::find(crossing.begin(), crossing.end(), v) == crossing.end()) crossing.push_back(v);
    }
  }
  if (crossing.size() != 1) {
    return invalid_argument(file,
                            ": expected the joint to read one value of the prediction network "
                            "(NeMo's RNNTJoint reads its output), found ",
                            crossing.size(), crossing.empty() ? "" : ": ", names_of(crossing));
  }
  return crossing[0];
}

}  // namespace

Expected<NemoDecoderJointSplit> split_nemo_decoder_joint(const std::string& file) {
  NemoDecoderJointSplit split;
  VOXRT_ASSIGN_OR_RETURN(split.decoder, onnx_import::import_model_file(file));
  VOXRT_ASSIGN_OR_RETURN(split.joiner, onnx_import::import_model_file(file));
  for (ir::Graph* graph : {split.decoder.get(), split.joiner.get()}) {
    VOXRT_RETURN_IF_ERROR(check_names(*graph, file));
    // The families feed one unit per row: U = 1 gives the crossing value a static width.
    ir::Value* targets = graph->find_value(kTargets);
    if (targets->shape.size() != 2) {
      return invalid_argument(file, ": targets must be [B, U], found ",
                              ir::sym_shape_to_string(targets->shape));
    }
    targets->shape[1] = ir::Dim::known(1);
    VOXRT_RETURN_IF_ERROR(ir::infer_graph(*graph).with_context(file));
  }
  VOXRT_ASSIGN_OR_RETURN(ir::Value * crossing, find_crossing(*split.decoder, file));
  split.crossing = crossing->name;
  if (crossing->shape.empty()) {
    return invalid_argument(file, ": the joint's input from the prediction network, '",
                            crossing->name, "', has no batch axis");
  }
  std::vector<std::int64_t> dims = {0};  // Reshape's 0: the batch as it is
  split.width = 1;
  for (std::size_t d = 1; d < crossing->shape.size(); ++d) {
    if (!crossing->shape[d].is_known()) {
      return invalid_argument(file, ": the joint's input from the prediction network, '",
                              crossing->name, "', is ", ir::sym_shape_to_string(crossing->shape),
                              "; expected [B, ...] with every other axis known once U = 1");
    }
    dims.push_back(crossing->shape[d].value);
    split.width *= crossing->shape[d].value;
  }
  const ir::Dim batch = crossing->shape[0];
  // ---- decoder: the crossing value flattened is its first output ----
  {
    ir::Graph& g = *split.decoder;
    ir::Value* flat = g.add_value(kDecoderOutputs, DType::kF32,
                                  {batch, ir::Dim::known(1), ir::Dim::known(split.width)});
    ir::Node* reshape = g.add_node(
        ir::OpKind::kReshape, g.unique_name("decoder_outputs/flatten"),
        {crossing, shape_constant(g, "decoder_outputs_shape", {0, 1, split.width})}, {flat});
    reshape->opset = 13;
    g.inputs.erase(g.inputs.begin());  // encoder_outputs
    g.outputs[0] = flat;               // in place of the joint's outputs
    VOXRT_RETURN_IF_ERROR(prune(g).with_context(file));
  }
  // ---- joiner: decoder_outputs [N, 1, width] and the encoder's frames [N, T, D] ----
  {
    ir::Graph& g = *split.joiner;
    ir::Value* cut = g.find_value(split.crossing);
    ir::Value* flat = g.add_value(kDecoderOutputs, DType::kF32,
                                  {batch, ir::Dim::known(1), ir::Dim::known(split.width)});
    ir::Value* restored =
        g.add_value(g.unique_name(split.crossing + "/from_decoder"), cut->dtype, cut->shape);
    ir::Node* reshape = g.add_node(ir::OpKind::kReshape, g.unique_name("decoder_outputs/restore"),
                                   {flat, shape_constant(g, "crossing_shape", dims)}, {restored});
    reshape->opset = 13;
    g.replace_all_uses(cut, restored);
    ir::Value* exported = g.find_value(kEncoderOutputs);
    if (exported->shape.size() != 3 || !exported->shape[1].is_known()) {
      return invalid_argument(file, ": encoder_outputs must be [B, D, T] with D known, found ",
                              ir::sym_shape_to_string(exported->shape));
    }
    exported->name = g.unique_name(std::string(kEncoderOutputs) + "/channels_first");
    ir::Value* frames = g.add_value(kEncoderOutputs, exported->dtype,
                                    {exported->shape[0], exported->shape[2], exported->shape[1]});
    ir::Node* transpose = g.add_node(ir::OpKind::kTranspose, g.unique_name("encoder_outputs/nemo"),
                                     {frames}, {exported});
    transpose->attrs.set("perm", std::vector<std::int64_t>{0, 2, 1});
    transpose->opset = 13;
    g.inputs = {frames, flat};
    g.outputs.resize(1);  // the joint's outputs
    VOXRT_RETURN_IF_ERROR(prune(g).with_context(file));
  }
  return split;
}

}  // namespace voxrt::model_import
