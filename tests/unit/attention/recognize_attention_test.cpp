// The recognize_attention pass on the forms exporters write (rank-4 heads, Hugging Face's heads
// folded into the batch, torch's baddbmm with a 3-D mask, masked_fill, a relative-position bias,
// a max shift before the Softmax, torch 2.x's SDPA export with both operands scaled): each
// becomes one Attention node whose graph gives what the unfused graph gave (both run on the CPU
// reference kernels), and a pattern whose intermediate is also needed elsewhere is left alone.
#include <cmath>
#include <limits>
#include <map>

#include "attention_test_support.h"
#include "ir/passes/eliminate_dead_nodes.h"
#include "ir/passes/recognize_attention.h"

namespace voxrt::attention_test {
namespace {

using ir::OpKind;

// Builds graphs node by node; `run` evaluates them with the CPU reference kernels.
struct GraphBuilder {
  ir::Graph graph;
  std::map<const ir::Value*, Tensor> feeds;

  ir::Value* input(const std::string& name, Tensor value) {
    ir::Value* v = graph.add_value(name, value.dtype(), ir::sym_shape_from_dims(value.dims()));
    graph.inputs.push_back(v);
    feeds[v] = std::move(value);
    return v;
  }
  ir::Value* constant(Tensor value) {
    return graph.add_constant(graph.unique_name("c"), std::move(value));
  }
  ir::Value* i64s(std::vector<std::int64_t> values) {
    const auto n = static_cast<std::int64_t>(values.size());
    return constant(Tensor::from_vector<std::int64_t>({n}, values));
  }
  ir::Value* node(OpKind op, std::vector<ir::Value*> inputs, ir::Attributes attrs = {}) {
    ir::Value* out = graph.add_value(graph.unique_name("v"), DType::kF32, {}, false);
    ir::Node* n = graph.add_node(op, graph.unique_name(std::string(ir::op_name(op))),
                                 std::move(inputs), {out});
    n->attrs = std::move(attrs);
    n->opset = 17;
    return out;
  }
  ir::Value* transpose(ir::Value* x, std::vector<std::int64_t> perm) {
    ir::Attributes attrs;
    attrs.set("perm", perm);
    return node(OpKind::kTranspose, {x}, attrs);
  }
  ir::Value* reshape(ir::Value* x, std::vector<std::int64_t> shape) {
    return node(OpKind::kReshape, {x, i64s(std::move(shape))});
  }
  ir::Value* softmax(ir::Value* x) {
    ir::Attributes attrs;
    attrs.set("axis", std::int64_t{-1});
    return node(OpKind::kSoftmax, {x}, attrs);
  }
  ir::Value* scalar(float value) { return constant(Tensor::scalar_f32(value)); }

  // Runs every node (topological order) with the reference kernels; returns the graph outputs.
  std::vector<Tensor> run() {
    std::map<const ir::Value*, Tensor> values = feeds;
    auto order = graph.topological_order();
    EXPECT_TRUE(order.has_value());
    for (ir::Node* n : *order) {
      std::vector<const Tensor*> ins;
      std::vector<ir::ValueInfo> infos;
      for (ir::Value* v : n->inputs) {
        ir::ValueInfo info;
        if (!v) {
          info.present = false;
          ins.push_back(nullptr);
        } else {
          const Tensor* t = v->is_constant() ? &*v->constant : &values.at(v);
          info.dtype = t->dtype();
          info.shape = ir::sym_shape_from_dims(t->dims());
          info.data = t;
          ins.push_back(t);
        }
        infos.push_back(info);
      }
      std::vector<ir::InferredOutput> inferred;
      Status status = ir::infer_outputs(*n, infos, inferred);
      EXPECT_TRUE(status) << status.to_string();
      if (!status) return {};
      std::vector<Tensor*> outs;
      for (std::size_t i = 0; i < n->outputs.size(); ++i) {
        Tensor& t = values[n->outputs[i]];
        t = Tensor::uninitialized(inferred[i].dtype, *ir::known_dims(inferred[i].shape));
        outs.push_back(&t);
      }
      auto kernel = backends::cpu::create_kernel(*n, backends::kReferenceTactic);
      EXPECT_TRUE(kernel.has_value()) << kernel.status().to_string();
      if (!kernel) return {};
      ThreadPool pool(1);
      backends::KernelContext context{&pool};
      status = (*kernel)->run(ins, outs, context);
      EXPECT_TRUE(status) << n->describe() << ": " << status.to_string();
    }
    std::vector<Tensor> outputs;
    for (ir::Value* v : graph.outputs) outputs.push_back(values.at(v));
    return outputs;
  }

  // Runs the graph, applies the pass, runs it again: returns the number of Attention nodes and
  // checks that the outputs did not change.
  int fuse_and_compare() {
    EXPECT_TRUE(ir::infer_graph(graph));
    const std::vector<Tensor> before = run();
    ir::PassReport report;
    EXPECT_TRUE(ir::make_recognize_attention_pass()->apply(graph, report));
    EXPECT_TRUE(graph.validate());
    EXPECT_TRUE(ir::infer_graph(graph));
    const std::vector<Tensor> after = run();
    EXPECT_EQ(before.size(), after.size());
    for (std::size_t i = 0; i < before.size() && i < after.size(); ++i)
      EXPECT_TRUE(all_close(after[i], before[i], 1e-5, 1e-6)) << "output " << i;
    int attention = 0;
    for (const ir::Node* n : graph.nodes()) attention += n->op == OpKind::kAttention;
    return attention;
  }
};

constexpr std::int64_t B = 2, H = 3, T = 5, S = 7, D = 8;

TEST(RecognizeAttention, HeadsMajorWithScaleAndPaddingMask) {
  std::mt19937 rng(31);
  GraphBuilder g;
  ir::Value* q = g.input("q", random_f32({B, H, T, D}, rng));
  ir::Value* k = g.input("k", random_f32({B, H, S, D}, rng));
  ir::Value* v = g.input("v", random_f32({B, H, S, D}, rng));
  ir::Value* mask = g.input("mask", random_f32({B, 1, 1, S}, rng, -5.0f, 0.0f));
  ir::Value* s = g.node(OpKind::kMatMul, {q, g.transpose(k, {0, 1, 3, 2})});
  s = g.node(OpKind::kDiv, {s, g.scalar(std::sqrt(float(D)))});
  s = g.node(OpKind::kAdd, {s, mask});
  g.graph.outputs.push_back(g.node(OpKind::kMatMul, {g.softmax(s), v}));
  EXPECT_EQ(g.fuse_and_compare(), 1);
}

TEST(RecognizeAttention, HuggingFaceFoldedHeadsWithA4dMask) {
  std::mt19937 rng(32);
  GraphBuilder g;
  ir::Value* q4 = g.input("q", random_f32({B, H, T, D}, rng));
  ir::Value* k4 = g.input("k", random_f32({B, H, S, D}, rng));
  ir::Value* v4 = g.input("v", random_f32({B, H, S, D}, rng));
  ir::Value* mask = g.input("mask", random_f32({B, 1, T, S}, rng, -5.0f, 0.0f));
  ir::Value* q = g.reshape(q4, {B * H, T, D});
  ir::Value* k = g.reshape(k4, {B * H, S, D});
  ir::Value* v = g.reshape(v4, {B * H, S, D});
  ir::Value* s = g.node(OpKind::kMatMul, {q, g.transpose(k, {0, 2, 1})});
  s = g.reshape(s, {B, H, T, S});
  s = g.node(OpKind::kAdd, {s, mask});
  s = g.reshape(s, {B * H, T, S});
  ir::Value* o = g.node(OpKind::kMatMul, {g.softmax(s), v});
  g.graph.outputs.push_back(g.reshape(o, {B, H, T, D}));
  EXPECT_EQ(g.fuse_and_compare(), 1);
}

TEST(RecognizeAttention, TorchBaddbmmWithA3dMaskRunsTheFoldedHeadsAsOneBatch) {
  std::mt19937 rng(33);
  GraphBuilder g;
  // [T, B*H, D] as torch's multi_head_attention_forward views q, k and v before transpose(0, 1).
  ir::Value* q = g.transpose(g.input("q", random_f32({T, B * H, D}, rng)), {1, 0, 2});
  ir::Value* k_t = g.transpose(g.input("k", random_f32({S, B * H, D}, rng)), {1, 2, 0});
  ir::Value* v = g.transpose(g.input("v", random_f32({S, B * H, D}, rng)), {1, 0, 2});
  ir::Value* mask = g.input("mask", random_f32({B * H, 1, S}, rng, -5.0f, 0.0f));
  q = g.node(OpKind::kDiv, {q, g.scalar(std::sqrt(float(D)))});
  ir::Value* s = g.node(OpKind::kMul, {g.node(OpKind::kMatMul, {q, k_t}), g.scalar(1.0f)});
  s = g.node(OpKind::kAdd, {s, g.node(OpKind::kMul, {mask, g.scalar(1.0f)})});
  g.graph.outputs.push_back(g.node(OpKind::kMatMul, {g.softmax(s), v}));
  EXPECT_EQ(g.fuse_and_compare(), 1);
}

TEST(RecognizeAttention, MaskedFillRelativePositionBiasAndMaxShift) {
  std::mt19937 rng(34);
  GraphBuilder g;
  ir::Value* q = g.input("q", random_f32({B, H, T, D}, rng));
  ir::Value* u = g.constant(random_f32({H, 1, D}, rng));
  ir::Value* k_t = g.input("kt", random_f32({B, H, D, S}, rng));
  ir::Value* v = g.input("v", random_f32({B, H, S, D}, rng));
  ir::Value* bd = g.input("bd", random_f32({B, H, T, S}, rng));
  ir::Value* pad = g.input("pad", random_bool({B, 1, 1, S}, rng, 0.3));  // true = padded
  ir::Value* s = g.node(OpKind::kMatMul, {g.node(OpKind::kAdd, {q, u}), k_t});
  s = g.node(OpKind::kAdd, {s, bd});
  s = g.node(OpKind::kMul, {s, g.scalar(0.25f)});
  s = g.node(OpKind::kWhere, {pad, g.scalar(-10000.0f), s});
  ir::Attributes keep;
  keep.set("keepdims", std::int64_t{1});
  ir::Value* max = g.node(OpKind::kReduceMax, {s, g.i64s({-1})}, keep);
  s = g.node(OpKind::kSub, {s, max});
  g.graph.outputs.push_back(g.node(OpKind::kMatMul, {g.softmax(s), v}));
  EXPECT_EQ(g.fuse_and_compare(), 1);
}

// torch 2.x's export of scaled_dot_product_attention: Q and K^T each multiplied by sqrt(scale)
// before the product. Both Muls and the Transpose fold into the one Attention node (the scale
// becomes 1/sqrt(D)); a Mul whose output is also read elsewhere stays.
TEST(RecognizeAttention, TorchSdpaExportScalesBothOperands) {
  std::mt19937 rng(36);
  GraphBuilder g;
  ir::Value* q = g.input("q", random_f32({B, H, T, D}, rng));
  ir::Value* k = g.input("k", random_f32({B, H, S, D}, rng));
  ir::Value* v = g.input("v", random_f32({B, H, S, D}, rng));
  const float root_scale = std::sqrt(1.0f / std::sqrt(float(D)));
  ir::Value* qs = g.node(OpKind::kMul, {q, g.scalar(root_scale)});
  ir::Value* ks = g.node(OpKind::kMul, {g.transpose(k, {0, 1, 3, 2}), g.scalar(root_scale)});
  ir::Value* s = g.node(OpKind::kMatMul, {qs, ks});
  g.graph.outputs.push_back(g.node(OpKind::kMatMul, {g.softmax(s), v}));
  EXPECT_EQ(g.fuse_and_compare(), 1);
  ir::PassReport report;  // K's Transpose is left without readers: the build's next pass drops it
  EXPECT_TRUE(ir::make_eliminate_dead_nodes_pass()->apply(g.graph, report));
  for (const ir::Node* n : g.graph.nodes()) {
    EXPECT_NE(n->op, OpKind::kMul) << n->name;
    EXPECT_NE(n->op, OpKind::kTranspose) << n->name;
    if (n->op == OpKind::kAttention) {
      EXPECT_NEAR(n->attrs.get_float("scale", 0.0f), 1.0f / std::sqrt(float(D)), 1e-6f);
    }
  }

  GraphBuilder shared;
  q = shared.input("q", random_f32({B, H, T, D}, rng));
  k = shared.input("k", random_f32({B, H, S, D}, rng));
  v = shared.input("v", random_f32({B, H, S, D}, rng));
  qs = shared.node(OpKind::kMul, {q, shared.scalar(root_scale)});
  s = shared.node(OpKind::kMatMul, {qs, shared.transpose(k, {0, 1, 3, 2})});
  shared.graph.outputs.push_back(shared.node(OpKind::kMatMul, {shared.softmax(s), v}));
  shared.graph.outputs.push_back(qs);  // the scaled Q is read elsewhere: its Mul must stay
  EXPECT_EQ(shared.fuse_and_compare(), 1);
  int muls = 0;
  for (const ir::Node* n : shared.graph.nodes()) muls += n->op == OpKind::kMul;
  EXPECT_EQ(muls, 1);
}

TEST(RecognizeAttention, LeavesPatternsWhoseScoresAreNeededElsewhere) {
  std::mt19937 rng(35);
  GraphBuilder g;
  ir::Value* q = g.input("q", random_f32({B, H, T, D}, rng));
  ir::Value* k = g.input("k", random_f32({B, H, S, D}, rng));
  ir::Value* v = g.input("v", random_f32({B, H, S, D}, rng));
  ir::Value* p = g.softmax(g.node(OpKind::kMatMul, {q, g.transpose(k, {0, 1, 3, 2})}));
  g.graph.outputs.push_back(g.node(OpKind::kMatMul, {p, v}));
  g.graph.outputs.push_back(p);  // the attention weights are an output too
  EXPECT_EQ(g.fuse_and_compare(), 0);
}

}  // namespace
}  // namespace voxrt::attention_test
