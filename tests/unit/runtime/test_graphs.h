// Small hand-built graphs for runtime tests (no ONNX needed).
#pragma once

#include <memory>

#include "ir/graph.h"

namespace voxrt::testing {

// A streaming cell: state_out = tanh(x * w + state_in), y = state_out * 2, where x and the
// state are [batch, 4]; w is a constant [4]. Inputs (x, state_in), outputs (y, state_out).
inline std::unique_ptr<ir::Graph> make_streaming_cell() {
  auto g = std::make_unique<ir::Graph>();
  g->name = "cell";
  using ir::Dim;
  ir::Value* x = g->add_value("x", DType::kF32, {Dim::symbolic("batch"), Dim::known(4)});
  ir::Value* state_in =
      g->add_value("state_in", DType::kF32, {Dim::symbolic("batch"), Dim::known(4)});
  ir::Value* w = g->add_constant("w", Tensor::from_vector<float>({4}, {0.5f, -1.0f, 2.0f, 0.25f}));
  ir::Value* two = g->add_constant("two", Tensor::scalar_f32(2.0f));
  ir::Value* xw = g->add_value("xw", DType::kF32, {});
  ir::Value* sum = g->add_value("sum", DType::kF32, {});
  ir::Value* state_out = g->add_value("state_out", DType::kF32, {});
  ir::Value* y = g->add_value("y", DType::kF32, {});
  g->add_node(ir::OpKind::kMul, "mul_w", {x, w}, {xw});
  g->add_node(ir::OpKind::kAdd, "add_state", {xw, state_in}, {sum});
  g->add_node(ir::OpKind::kTanh, "tanh", {sum}, {state_out});
  g->add_node(ir::OpKind::kMul, "mul_two", {state_out, two}, {y});
  g->inputs = {x, state_in};
  g->outputs = {y, state_out};
  g->metadata["voxrt.model_family"] = "test_cell";
  return g;
}

}  // namespace voxrt::testing
