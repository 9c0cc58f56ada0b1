// A tiny graph evaluator for the pass tests: dense ops run on the reference kernels, and the few
// other ops the patterns use (activations, Add/Mul/Div/Max/Min, BatchNormalization, Transpose) are
// computed here, naively, so the tests do not depend on other families' kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>

#include "dense_test_util.h"

namespace voxrt::dense_test {

inline Dims broadcast_dims(const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const std::int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Index into `t` for output coordinates `coords` under numpy broadcasting.
inline std::int64_t broadcast_index(const Tensor& t, const Dims& coords) {
  std::int64_t index = 0;
  const std::size_t offset = coords.size() - t.rank();
  for (std::size_t i = 0; i < t.rank(); ++i) {
    index = index * t.dim(i) + (t.dim(i) == 1 ? 0 : coords[i + offset]);
  }
  return index;
}

inline Dims unravel(std::int64_t flat, const Dims& dims) {
  Dims coords(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    coords[i] = flat % dims[i];
    flat /= dims[i];
  }
  return coords;
}

inline Expected<Tensor> evaluate_node(const ir::Node& node, const std::vector<const Tensor*>& in) {
  using ir::OpKind;
  auto unary = [&](auto fn) {
    Tensor y = Tensor::uninitialized(DType::kF32, in[0]->dims());
    for (std::int64_t i = 0; i < y.element_count(); ++i)
      y.data<float>()[i] = fn(in[0]->data<float>()[i]);
    return y;
  };
  auto binary = [&](auto fn) {
    Tensor y = Tensor::uninitialized(DType::kF32, broadcast_dims(in[0]->dims(), in[1]->dims()));
    for (std::int64_t i = 0; i < y.element_count(); ++i) {
      const Dims coords = unravel(i, y.dims());
      y.data<float>()[i] = fn(in[0]->data<float>()[broadcast_index(*in[0], coords)],
                              in[1]->data<float>()[broadcast_index(*in[1], coords)]);
    }
    return y;
  };
  switch (node.op) {
    case OpKind::kRelu: return unary([](float x) { return std::max(x, 0.0f); });
    case OpKind::kSigmoid: return unary([](float x) { return 1.0f / (1.0f + std::exp(-x)); });
    case OpKind::kTanh: return unary([](float x) { return std::tanh(x); });
    case OpKind::kErf: return unary([](float x) { return std::erf(x); });
    case OpKind::kLeakyRelu: {
      const float alpha = node.attrs.get_float("alpha", 0.01f);
      return unary([alpha](float x) { return x >= 0 ? x : alpha * x; });
    }
    case OpKind::kClip: {
      const float lo = in.size() > 1 && in[1] ? in[1]->data<float>()[0] : -INFINITY;
      const float hi = in.size() > 2 && in[2] ? in[2]->data<float>()[0] : INFINITY;
      return unary([lo, hi](float x) { return std::min(std::max(x, lo), hi); });
    }
    case OpKind::kAdd: return binary([](float a, float b) { return a + b; });
    case OpKind::kMul: return binary([](float a, float b) { return a * b; });
    case OpKind::kDiv: return binary([](float a, float b) { return a / b; });
    case OpKind::kMax: return binary([](float a, float b) { return std::max(a, b); });
    case OpKind::kMin: return binary([](float a, float b) { return std::min(a, b); });
    case OpKind::kBatchNormalization: {
      const double eps = node.attrs.get_float("epsilon", 1e-5f);
      Tensor y = Tensor::uninitialized(DType::kF32, in[0]->dims());
      const std::int64_t channels = in[0]->dim(1);
      const std::int64_t inner = in[0]->element_count() / (in[0]->dim(0) * channels);
      for (std::int64_t i = 0; i < y.element_count(); ++i) {
        const std::int64_t c = (i / inner) % channels;
        const double x = in[0]->data<float>()[i];
        const double norm =
            (x - in[3]->data<float>()[c]) / std::sqrt(in[4]->data<float>()[c] + eps);
        y.data<float>()[i] =
            static_cast<float>(norm * in[1]->data<float>()[c] + in[2]->data<float>()[c]);
      }
      return y;
    }
    case OpKind::kTranspose: {
      std::vector<std::int64_t> perm = node.attrs.get_ints("perm");
      if (perm.empty()) {
        for (std::size_t i = in[0]->rank(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
      }
      Dims dims;
      for (std::int64_t p : perm) dims.push_back(in[0]->dim(static_cast<std::size_t>(p)));
      Tensor y = Tensor::uninitialized(DType::kF32, dims);
      for (std::int64_t i = 0; i < y.element_count(); ++i) {
        const Dims coords = unravel(i, dims);
        Dims src(coords.size());
        for (std::size_t k = 0; k < perm.size(); ++k)
          src[static_cast<std::size_t>(perm[k])] = coords[k];
        std::int64_t index = 0;
        for (std::size_t k = 0; k < src.size(); ++k) index = index * in[0]->dim(k) + src[k];
        y.data<float>()[i] = in[0]->data<float>()[index];
      }
      return y;
    }
    default: break;
  }
  if (ir::op_family(node.op) != ir::OpFamily::kDense) {
    return unsupported(node.describe(), ": not in the test evaluator");
  }
  std::vector<ir::ValueInfo> infos;
  for (const Tensor* t : in) {
    ir::ValueInfo info;
    info.present = t != nullptr;
    if (t) {
      info.shape = ir::sym_shape_from_dims(t->dims());
      info.data = t;
    }
    infos.push_back(info);
  }
  std::vector<ir::InferredOutput> outs;
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(node, infos, outs));
  VOXRT_ASSIGN_OR_RETURN(auto kernel,
                         backends::cpu::create_kernel(node, backends::kReferenceTactic));
  Tensor y = Tensor::zeros(DType::kF32, *ir::known_dims(outs[0].shape));
  Tensor* outputs[] = {&y};
  ThreadPool pool(1);
  backends::KernelContext context{&pool};
  VOXRT_RETURN_IF_ERROR(kernel->run(in, outputs, context));
  return y;
}

// Values of the graph outputs for the given graph inputs (in graph input order).
inline Expected<std::vector<Tensor>> evaluate_graph(const ir::Graph& graph,
                                                    const std::vector<Tensor>& feeds) {
  std::map<const ir::Value*, Tensor> values;
  for (std::size_t i = 0; i < graph.inputs.size(); ++i) values[graph.inputs[i]] = feeds[i];
  for (const ir::Value* v : graph.values()) {
    if (v->is_constant()) values[v] = *v->constant;
  }
  VOXRT_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, graph.topological_order());
  for (const ir::Node* node : order) {
    std::vector<const Tensor*> in;
    for (const ir::Value* v : node->inputs) in.push_back(v ? &values.at(v) : nullptr);
    VOXRT_ASSIGN_OR_RETURN(Tensor y, evaluate_node(*node, in));
    values[node->outputs[0]] = std::move(y);
  }
  std::vector<Tensor> outputs;
  for (const ir::Value* v : graph.outputs) outputs.push_back(values.at(v));
  return outputs;
}

}  // namespace voxrt::dense_test
