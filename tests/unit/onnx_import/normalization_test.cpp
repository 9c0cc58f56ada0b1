// The IR forms of docs: attributes of older opsets become inputs, Cast's "to" becomes a voxrt
// DType, ConstantOfShape's value a Tensor, Constant nodes constant values.
#include <gtest/gtest.h>

#include "model_builder.h"

namespace voxrt::onnx_import {
namespace {

using namespace testing;

const ir::Node& single_node(const ir::Graph& graph) {
  EXPECT_EQ(graph.nodes().size(), 1u);
  return *graph.nodes().at(0);
}

std::vector<std::int64_t> constant_ints(const ir::Value* value) {
  EXPECT_TRUE(value && value->is_constant());
  return value && value->is_constant() ? value->constant->to_i64_vector()
                                       : std::vector<std::int64_t>{};
}

TEST(Normalization, ClipOpset6AttributesBecomeInputs) {
  auto model = make_model(6);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 3});
  auto* clip = add_node(g, "Clip", {"x"}, {"y"}, "clip");
  add_float(clip, "max", 6.5f);
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  const ir::Node& node = single_node(**graph);
  ASSERT_EQ(node.inputs.size(), 3u);
  EXPECT_EQ(node.inputs[1], nullptr);  // min absent: no lower bound
  ASSERT_TRUE(node.inputs[2]->is_constant());
  EXPECT_EQ(node.inputs[2]->constant->dtype(), DType::kF32);
  EXPECT_FLOAT_EQ(node.inputs[2]->constant->data<float>()[0], 6.5f);
  EXPECT_TRUE(node.attrs.all().empty());
  EXPECT_EQ(node.opset, 6);
}

TEST(Normalization, SqueezeUnsqueezeOpset11AxesBecomeInput) {
  auto model = make_model(11);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 1});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {3, 1});
  add_ints(add_node(g, "Squeeze", {"x"}, {"y"}, "sq"), "axes", {0, -1});
  add_ints(add_node(g, "Unsqueeze", {"y"}, {"z"}, "unsq"), "axes", {1});
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  auto nodes = (*graph)->nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(constant_ints(nodes[0]->input(1)), (std::vector<std::int64_t>{0, -1}));
  EXPECT_EQ(nodes[0]->input(1)->dtype, DType::kI64);
  EXPECT_EQ(constant_ints(nodes[1]->input(1)), (std::vector<std::int64_t>{1}));
  EXPECT_FALSE(nodes[0]->attrs.has("axes"));
  // The intermediate value has no value_info: its rank is unknown until shape inference.
  EXPECT_FALSE(nodes[0]->outputs[0]->rank_known);
}

TEST(Normalization, SliceOpset9AttributesBecomeInputs) {
  auto model = make_model(9);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {5, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {});
  auto* slice = add_node(g, "Slice", {"x"}, {"y"}, "slice");
  add_ints(slice, "starts", {1});
  add_ints(slice, "ends", {4});
  add_ints(slice, "axes", {1});
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  const ir::Node& node = single_node(**graph);
  ASSERT_EQ(node.inputs.size(), 4u);
  EXPECT_EQ(constant_ints(node.inputs[1]), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(constant_ints(node.inputs[2]), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(constant_ints(node.inputs[3]), (std::vector<std::int64_t>{1}));
}

TEST(Normalization, PadOpset2AttributesBecomeInputs) {
  auto model = make_model(2);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 2});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {});
  auto* pad = add_node(g, "Pad", {"x"}, {"y"}, "pad");
  add_ints(pad, "pads", {0, 1, 0, 2});
  add_float(pad, "value", 1.5f);
  auto* mode = pad->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("constant");
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  const ir::Node& node = single_node(**graph);
  ASSERT_EQ(node.inputs.size(), 3u);
  EXPECT_EQ(constant_ints(node.inputs[1]), (std::vector<std::int64_t>{0, 1, 0, 2}));
  EXPECT_FLOAT_EQ(node.inputs[2]->constant->data<float>()[0], 1.5f);
  EXPECT_EQ(node.attrs.get_string("mode", ""), "constant");
}

TEST(Normalization, SplitOpset11AndReduceOpset11) {
  auto model = make_model(11);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 7});
  *g->add_output() = tensor_info("r", onnx::TensorProto::FLOAT, {});
  *g->add_output() = tensor_info("b", onnx::TensorProto::FLOAT, {});
  auto* split = add_node(g, "Split", {"x"}, {"a", "b"}, "split");
  add_int(split, "axis", 1);
  add_ints(split, "split", {3, 4});
  auto* reduce = add_node(g, "ReduceMax", {"a"}, {"r"}, "rmax");
  add_ints(reduce, "axes", {-1});
  add_int(reduce, "keepdims", 0);
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  auto nodes = (*graph)->nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]->outputs.size(), 2u);
  EXPECT_EQ(constant_ints(nodes[0]->input(1)), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(nodes[0]->attrs.get_int("axis", 0), 1);
  EXPECT_EQ(constant_ints(nodes[1]->input(1)), (std::vector<std::int64_t>{-1}));
  EXPECT_EQ(nodes[1]->attrs.get_int("keepdims", 1), 0);
}

TEST(Normalization, CastToHoldsVoxrtDtype) {
  auto model = make_model(13);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {3});
  *g->add_output() = tensor_info("y", onnx::TensorProto::INT64, {3});
  add_int(add_node(g, "Cast", {"x"}, {"y"}, "cast"), "to", onnx::TensorProto::INT64);
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  EXPECT_EQ(single_node(**graph).attrs.get_int("to", 0), static_cast<std::int64_t>(DType::kI64));
  EXPECT_EQ((*graph)->outputs[0]->dtype, DType::kI64);

  // Casting to f64 is unsupported, with the node named.
  model.mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_i(onnx::TensorProto::DOUBLE);
  auto refused = import_proto(model);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("node 'cast' (Cast, domain 'ai.onnx', opset 13)"),
            std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("DOUBLE"), std::string::npos);
}

TEST(Normalization, ConstantOfShapeValueAndConstantNodes) {
  auto model = make_model(13);
  auto* g = model.mutable_graph();
  *g->add_output() = tensor_info("zeros", onnx::TensorProto::FLOAT, {});
  *g->add_output() = tensor_info("sevens", onnx::TensorProto::INT32, {});
  auto* shape = add_node(g, "Constant", {}, {"shape"}, "shape_const");
  add_ints(shape, "value_ints", {2, 3});
  add_node(g, "ConstantOfShape", {"shape"}, {"zeros"}, "cos_default");
  auto* with_value = add_node(g, "ConstantOfShape", {"shape"}, {"sevens"}, "cos_seven");
  auto* value = with_value->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT32);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int32_data(7);
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  auto nodes = (*graph)->nodes();
  ASSERT_EQ(nodes.size(), 2u);  // the Constant node became a constant value
  EXPECT_EQ(constant_ints(nodes[0]->input(0)), (std::vector<std::int64_t>{2, 3}));
  const Tensor* zero = nodes[0]->attrs.get_tensor("value");
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->dtype(), DType::kF32);
  EXPECT_EQ(zero->data<float>()[0], 0.0f);
  const Tensor* seven = nodes[1]->attrs.get_tensor("value");
  ASSERT_TRUE(seven);
  EXPECT_EQ(seven->dtype(), DType::kI32);
  EXPECT_EQ(seven->data<std::int32_t>()[0], 7);
}

TEST(Normalization, DropoutOpset10RatioBecomesInput) {
  auto model = make_model(10);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {-1, 4});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {-1, 4});
  add_float(add_node(g, "Dropout", {"x"}, {"y", ""}, "drop"), "ratio", 0.25f);
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  const ir::Node& node = single_node(**graph);
  ASSERT_EQ(node.inputs.size(), 2u);
  EXPECT_FLOAT_EQ(node.inputs[1]->constant->data<float>()[0], 0.25f);
  EXPECT_EQ(node.outputs.size(), 1u);  // the omitted mask output is dropped
  // dim_param -> symbolic dims.
  EXPECT_EQ((*graph)->inputs[0]->shape, (ir::SymShape{ir::Dim::symbolic("d0"), ir::Dim::known(4)}));
}

TEST(Normalization, MetadataProducerAndUnknownDims) {
  auto model = make_model(13);
  model.set_producer_version("1.2.3");
  auto* prop = model.add_metadata_props();
  prop->set_key("voxrt.model_family");
  prop->set_value("ctc_streaming");
  auto* g = model.mutable_graph();
  auto input = tensor_info("x", onnx::TensorProto::FLOAT16, {2});
  input.mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim();  // neither value nor param
  *g->add_input() = input;
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT16, {}, false);
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  EXPECT_EQ((*graph)->metadata.at("voxrt.model_family"), "ctc_streaming");
  EXPECT_EQ((*graph)->metadata.at("onnx.producer_name"), "voxrt-test");
  EXPECT_EQ((*graph)->metadata.at("onnx.producer_version"), "1.2.3");
  EXPECT_EQ((*graph)->metadata.at("onnx.opset"), "13");
  const ir::Value* x = (*graph)->inputs[0];
  EXPECT_EQ(x->dtype, DType::kF16);
  ASSERT_EQ(x->shape.size(), 2u);
  EXPECT_FALSE(x->shape[1].is_known());
  EXPECT_TRUE(x->shape[1].symbol.empty());
  EXPECT_FALSE((*graph)->outputs[0]->rank_known);
  EXPECT_EQ((*graph)->outputs[0]->dtype, DType::kF16);
}

TEST(Normalization, InitializersListedAsInputsAreConstants) {
  auto model = make_model(13);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2});
  *g->add_input() = tensor_info("w", onnx::TensorProto::FLOAT, {2});
  *g->add_initializer() = float_tensor("w", {2}, {0.5f, -2.0f});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2});
  add_node(g, "Mul", {"x", "w"}, {"y"});
  auto graph = import_proto(model);
  ASSERT_TRUE(graph) << graph.status().to_string();
  ASSERT_EQ((*graph)->inputs.size(), 1u);
  EXPECT_EQ((*graph)->inputs[0]->name, "x");
  const ir::Node& mul = single_node(**graph);
  EXPECT_EQ(mul.name, "Mul_0");  // unnamed nodes get a name for errors
  ASSERT_TRUE(mul.inputs[1]->is_constant());
  EXPECT_FLOAT_EQ(mul.inputs[1]->constant->data<float>()[1], -2.0f);
}

}  // namespace
}  // namespace voxrt::onnx_import
