// If import (captured outer values become explicit inputs) and If shape inference.
#include <gtest/gtest.h>

#include "ir/shape_inference.h"
#include "model_builder.h"

namespace voxrt::onnx_import {
namespace {

using namespace testing;

std::vector<std::string> names(const std::vector<ir::Value*>& values) {
  std::vector<std::string> out;
  for (const ir::Value* v : values) out.push_back(v ? v->name : "<null>");
  return out;
}

// cond, x [2,3] and initializer w [3]; the then branch adds and nests another If.
onnx::ModelProto nested_if_model() {
  auto model = make_model(13);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("cond", onnx::TensorProto::BOOL, {});
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_initializer() = float_tensor("w", {3}, {1, 2, 3});
  *g->add_output() = tensor_info("out", onnx::TensorProto::FLOAT, {2, 3});
  auto* outer = add_node(g, "If", {"cond"}, {"out"}, "outer_if");

  auto* then_g = add_graph(outer, "then_branch");
  add_node(then_g, "Add", {"x", "w"}, {"y"}, "then_add");
  auto* inner = add_node(then_g, "If", {"cond"}, {"z"}, "inner_if");
  auto* inner_then = add_graph(inner, "then_branch");
  add_node(inner_then, "Mul", {"y", "x"}, {"m"}, "inner_mul");
  *inner_then->add_output() = tensor_info("m", onnx::TensorProto::FLOAT, {2, 3});
  auto* inner_else = add_graph(inner, "else_branch");
  add_node(inner_else, "Neg", {"w"}, {"n"}, "inner_neg");
  *inner_else->add_output() = tensor_info("n", onnx::TensorProto::FLOAT, {3});
  *then_g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {});

  auto* else_g = add_graph(outer, "else_branch");
  add_node(else_g, "Sub", {"w", "x"}, {"s"}, "else_sub");
  *else_g->add_output() = tensor_info("s", onnx::TensorProto::FLOAT, {2, 3});
  return model;
}

TEST(IfImport, CapturedOuterValuesBecomeInputs) {
  auto graph = import_proto(nested_if_model());
  ASSERT_TRUE(graph) << graph.status().to_string();
  ASSERT_EQ((*graph)->nodes().size(), 1u);
  const ir::Node& outer = *(*graph)->nodes()[0];
  ASSERT_EQ(outer.op, ir::OpKind::kIf);
  // [cond, then's captures (x, w, cond), else's extra captures (none)].
  EXPECT_EQ(names(outer.inputs), (std::vector<std::string>{"cond", "x", "w", "cond"}));
  EXPECT_TRUE(outer.inputs[2]->is_constant());  // the outer initializer itself
  auto then_g = outer.attrs.get_graph("then_branch");
  auto else_g = outer.attrs.get_graph("else_branch");
  ASSERT_TRUE(then_g && else_g);
  EXPECT_EQ(names(then_g->inputs), (std::vector<std::string>{"x", "w", "cond"}));
  EXPECT_EQ(names(else_g->inputs), (std::vector<std::string>{"x", "w", "cond"}));
  // Captured values keep what is known of them; inside the branch they are inputs, not constants.
  EXPECT_EQ(then_g->inputs[0]->shape, (ir::SymShape{ir::Dim::known(2), ir::Dim::known(3)}));
  EXPECT_FALSE(then_g->inputs[1]->is_constant());
  EXPECT_EQ(then_g->inputs[1]->dtype, DType::kF32);
  EXPECT_TRUE(then_g->validate());
  EXPECT_TRUE(else_g->validate());

  // The else branch reads w then x; both are its inputs, the unused cond too.
  ASSERT_EQ(else_g->nodes().size(), 1u);
  EXPECT_EQ(else_g->nodes()[0]->inputs[0], else_g->inputs[1]);
  EXPECT_EQ(else_g->nodes()[0]->inputs[1], else_g->inputs[0]);

  // The nested If captures from the then branch: its own value y and the branch's inputs.
  const ir::Node* inner = nullptr;
  const ir::Node* add = nullptr;
  for (const ir::Node* n : then_g->nodes()) (n->op == ir::OpKind::kIf ? inner : add) = n;
  ASSERT_TRUE(inner && add);
  EXPECT_EQ(names(inner->inputs), (std::vector<std::string>{"cond", "y", "x", "w"}));
  EXPECT_EQ(inner->inputs[0], then_g->inputs[2]);
  EXPECT_EQ(inner->inputs[1], add->outputs[0]);
  EXPECT_EQ(inner->inputs[2], then_g->inputs[0]);
  EXPECT_EQ(inner->inputs[3], then_g->inputs[1]);
  auto inner_then = inner->attrs.get_graph("then_branch");
  auto inner_else = inner->attrs.get_graph("else_branch");
  EXPECT_EQ(names(inner_then->inputs), (std::vector<std::string>{"y", "x", "w"}));
  EXPECT_EQ(names(inner_else->inputs), (std::vector<std::string>{"y", "x", "w"}));
  ASSERT_EQ(inner_else->nodes().size(), 1u);
  EXPECT_EQ(inner_else->nodes()[0]->inputs[0], inner_else->inputs[2]);
  EXPECT_EQ(then_g->outputs[0], inner->outputs[0]);
}

TEST(IfImport, UnsupportedNodesInsideBranchesAreListed) {
  auto model = nested_if_model();
  auto* then_g = model.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  then_g->mutable_node(0)->set_op_type("Celu");
  auto graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(
      graph.status().message().find(
          "node 'then_add' (Celu, domain 'ai.onnx', opset 13) in then_branch of node 'outer_if'"),
      std::string::npos)
      << graph.status().message();
}

TEST(IfImport, UndefinedNameInBranchIsAnError) {
  auto model = nested_if_model();
  auto* else_g = model.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g();
  else_g->mutable_node(0)->set_input(1, "nowhere");
  auto graph = import_proto(model);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(graph.status().message().find("'nowhere'"), std::string::npos);
  EXPECT_NE(graph.status().message().find("else_branch of node 'outer_if'"), std::string::npos)
      << graph.status().message();
}

// Branches without compute nodes, so the test needs only If's own shape inference.
onnx::ModelProto passthrough_if_model(int else_elem_type) {
  auto model = make_model(13);
  auto* g = model.mutable_graph();
  *g->add_input() = tensor_info("cond", onnx::TensorProto::BOOL, {});
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {-1, 3});
  *g->add_output() = tensor_info("out", onnx::TensorProto::FLOAT, {}, false);
  auto* node = add_node(g, "If", {"cond"}, {"out"}, "if");
  auto* then_g = add_graph(node, "then_branch");
  *then_g->add_output() = tensor_info("x", onnx::TensorProto::FLOAT, {}, false);
  auto* else_g = add_graph(node, "else_branch");
  auto* constant = else_g->add_initializer();
  *constant = float_tensor("c", {4, 3}, std::vector<float>(12, 1.0f));
  if (else_elem_type != onnx::TensorProto::FLOAT) {
    constant->clear_float_data();
    constant->set_data_type(else_elem_type);
    for (int i = 0; i < 12; ++i) constant->add_int64_data(i);
  }
  *else_g->add_output() = tensor_info("c", else_elem_type, {4, 3});
  return model;
}

TEST(IfShapeInference, DimsWhereBranchesAgreeUnknownElsewhere) {
  auto graph = import_proto(passthrough_if_model(onnx::TensorProto::FLOAT));
  ASSERT_TRUE(graph) << graph.status().to_string();
  ASSERT_TRUE(ir::infer_graph(**graph));
  const ir::Value* out = (*graph)->outputs[0];
  EXPECT_EQ(out->dtype, DType::kF32);
  ASSERT_TRUE(out->rank_known);
  ASSERT_EQ(out->shape.size(), 2u);
  EXPECT_FALSE(out->shape[0].is_known());  // d0 vs 4
  EXPECT_EQ(out->shape[1], ir::Dim::known(3));
}

TEST(IfShapeInference, ConstantConditionUsesTakenBranch) {
  auto graph = import_proto(passthrough_if_model(onnx::TensorProto::FLOAT));
  ASSERT_TRUE(graph) << graph.status().to_string();
  const ir::Node& node = *(*graph)->nodes()[0];
  ASSERT_EQ(node.inputs.size(), 2u);  // cond, captured x
  Tensor x = Tensor::zeros(DType::kF32, {7, 3});
  for (bool taken : {true, false}) {
    Tensor cond = Tensor::from_vector<bool>({}, {taken});
    std::vector<ir::ValueInfo> infos(2);
    infos[0].dtype = DType::kBool;
    infos[0].data = &cond;
    infos[1].dtype = DType::kF32;
    infos[1].shape = ir::sym_shape_from_dims(x.dims());
    infos[1].data = &x;
    std::vector<ir::InferredOutput> outs;
    ASSERT_TRUE(ir::infer_outputs(node, infos, outs));
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_EQ(outs[0].shape, ir::sym_shape_from_dims(taken ? Dims{7, 3} : Dims{4, 3}));
    ASSERT_TRUE(outs[0].data.has_value());  // contents pass through from the taken branch
    EXPECT_EQ(outs[0].data->dims(), (taken ? Dims{7, 3} : Dims{4, 3}));
  }
}

TEST(IfShapeInference, BranchDtypeMismatchIsAnError) {
  auto graph = import_proto(passthrough_if_model(onnx::TensorProto::INT64));
  ASSERT_TRUE(graph) << graph.status().to_string();
  Status status = ir::infer_graph(**graph);
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("node 'if' (If)"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("i64"), std::string::npos) << status.message();
}

TEST(IfShapeInference, NodeTestIf) {
  auto graph = import_model_file(testdata_node_dir() + "/test_if/model.onnx");
  ASSERT_TRUE(graph) << graph.status().to_string();
  ASSERT_TRUE(ir::infer_graph(**graph));
  EXPECT_EQ((*graph)->outputs[0]->shape, (ir::SymShape{ir::Dim::known(5)}));
}

}  // namespace
}  // namespace voxrt::onnx_import
