// The Attention op: shape inference, attribute checks, and the reference kernel against the
// unfused computation it replaces (masks, bias, causal, grouped heads, both layouts, fully masked
// rows, empty sequences).
#include <limits>

#include "attention_test_support.h"

namespace voxrt::attention_test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

AttentionCase make_case(std::mt19937& rng, Dims q, Dims k, Dims v) {
  AttentionCase c;
  c.q = random_f32(q, rng);
  c.k = random_f32(k, rng);
  c.v = random_f32(v, rng);
  return c;
}

void expect_reference_matches_unfused(const AttentionCase& c) {
  auto ours = run_attention(c, backends::kReferenceTactic);
  ASSERT_TRUE(ours.has_value()) << ours.status().to_string();
  EXPECT_TRUE(all_close(*ours, unfused_attention(c), 1e-5, 1e-6));
}

TEST(AttentionReference, PlainHeadsMajor) {
  std::mt19937 rng(1);
  expect_reference_matches_unfused(make_case(rng, {2, 4, 5, 8}, {2, 4, 7, 8}, {2, 4, 7, 6}));
}

TEST(AttentionReference, GroupedQueryHeads) {
  std::mt19937 rng(2);
  expect_reference_matches_unfused(make_case(rng, {1, 6, 3, 4}, {1, 2, 9, 4}, {1, 2, 9, 5}));
}

TEST(AttentionReference, SequenceMajorLayout) {
  std::mt19937 rng(3);
  AttentionCase c = make_case(rng, {2, 5, 4, 8}, {2, 7, 2, 8}, {2, 7, 2, 8});
  c.attrs.set("qkv_layout", std::int64_t{1});
  expect_reference_matches_unfused(c);
  auto out = run_attention(c, backends::kReferenceTactic);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->dims(), (Dims{2, 5, 4, 8}));
}

TEST(AttentionReference, ExplicitScaleAndBias) {
  std::mt19937 rng(4);
  AttentionCase c = make_case(rng, {1, 2, 4, 8}, {1, 2, 6, 8}, {1, 2, 6, 8});
  c.attrs.set("scale", 0.3f);
  c.bias = random_f32({1, 2, 4, 6}, rng, -2.0f, 2.0f);
  expect_reference_matches_unfused(c);
}

TEST(AttentionReference, FloatPaddingMaskBroadcast) {
  std::mt19937 rng(5);
  AttentionCase c = make_case(rng, {2, 3, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 8});
  Tensor mask = Tensor::zeros(DType::kF32, {2, 1, 1, 6});
  mask.data<float>()[4] = -1e9f;
  mask.data<float>()[6 + 5] = -kInf;
  c.mask = mask;
  expect_reference_matches_unfused(c);
  // A 2-D [Sq, Sk] mask, as a decoder's causal mask is often exported.
  c.mask = random_f32({4, 6}, rng, -5.0f, 0.0f);
  expect_reference_matches_unfused(c);
}

TEST(AttentionReference, BoolMaskReplacesTheScore) {
  std::mt19937 rng(6);
  AttentionCase c = make_case(rng, {2, 2, 5, 8}, {2, 2, 7, 8}, {2, 2, 7, 8});
  c.mask = random_bool({2, 1, 5, 7}, rng, 0.7);
  c.bias = random_f32({5, 7}, rng);
  expect_reference_matches_unfused(c);
  c.attrs.set("mask_fill", -10000.0f);
  expect_reference_matches_unfused(c);
}

TEST(AttentionReference, CausalWithCachedKeys) {
  std::mt19937 rng(7);
  AttentionCase c = make_case(rng, {1, 4, 4, 8}, {1, 4, 10, 8}, {1, 4, 10, 8});
  c.attrs.set("causal", std::int64_t{1});
  expect_reference_matches_unfused(c);
  // Square: the usual decoder self-attention over a whole sequence.
  AttentionCase square = make_case(rng, {1, 2, 6, 8}, {1, 2, 6, 8}, {1, 2, 6, 8});
  square.attrs.set("causal", std::int64_t{1});
  expect_reference_matches_unfused(square);
}

TEST(AttentionReference, FullyMaskedRowsGiveWhatSoftmaxGives) {
  std::mt19937 rng(8);
  AttentionCase c = make_case(rng, {1, 1, 3, 4}, {1, 1, 5, 4}, {1, 1, 5, 4});
  Tensor mask = Tensor::zeros(DType::kBool, {3, 5});
  for (int j = 0; j < 5; ++j) mask.data<bool>()[5 + j] = j < 2;  // row 1 sees keys 0, 1
  c.mask = mask;                                                 // rows 0 and 2 see nothing
  auto out = run_attention(c, backends::kReferenceTactic);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  for (int x = 0; x < 4; ++x) {
    EXPECT_TRUE(std::isnan(out->data<float>()[x])) << "row 0 with mask_fill -inf";
    EXPECT_FALSE(std::isnan(out->data<float>()[4 + x]));
    EXPECT_TRUE(std::isnan(out->data<float>()[8 + x])) << "row 2 with mask_fill -inf";
  }
  EXPECT_TRUE(all_close(*out, unfused_attention(c), 1e-5, 1e-6));
  // A finite fill: a fully masked row averages V over every key.
  c.attrs.set("mask_fill", -10000.0f);
  out = run_attention(c, backends::kReferenceTactic);
  ASSERT_TRUE(out.has_value());
  for (int x = 0; x < 4; ++x) {
    float mean = 0.0f;
    for (int j = 0; j < 5; ++j) mean += c.v.data<float>()[j * 4 + x] / 5.0f;
    EXPECT_NEAR(out->data<float>()[x], mean, 1e-6f);
  }
  // Causal with more queries than keys: the first queries see no key.
  AttentionCase causal = make_case(rng, {1, 1, 4, 4}, {1, 1, 2, 4}, {1, 1, 2, 4});
  causal.attrs.set("causal", std::int64_t{1});
  out = run_attention(causal, backends::kReferenceTactic);
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(std::isnan(out->data<float>()[0]));
  EXPECT_TRUE(std::isnan(out->data<float>()[4]));
  EXPECT_FALSE(std::isnan(out->data<float>()[8]));
  EXPECT_TRUE(all_close(*out, unfused_attention(causal), 1e-5, 1e-6));
}

TEST(AttentionReference, EmptySequences) {
  std::mt19937 rng(9);
  AttentionCase no_keys = make_case(rng, {1, 2, 3, 4}, {1, 2, 0, 4}, {1, 2, 0, 4});
  auto out = run_attention(no_keys, backends::kReferenceTactic);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  for (float x : out->span<float>()) EXPECT_TRUE(std::isnan(x));
  AttentionCase no_queries = make_case(rng, {1, 2, 0, 4}, {1, 2, 3, 4}, {1, 2, 3, 4});
  out = run_attention(no_queries, backends::kReferenceTactic);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_EQ(out->element_count(), 0);
}

Status infer(const AttentionCase& c, std::vector<ir::InferredOutput>& outputs,
             const std::vector<ir::SymShape>& shapes = {}) {
  SingleNode single = make_attention_node(c);
  std::vector<ir::ValueInfo> infos;
  std::size_t index = 0;
  for (const Tensor* t : case_inputs(c)) {
    ir::ValueInfo info;
    if (!t) {
      info.present = false;
    } else {
      info.dtype = t->dtype();
      info.shape = index < shapes.size() ? shapes[index] : ir::sym_shape_from_dims(t->dims());
    }
    ++index;
    infos.push_back(info);
  }
  return ir::infer_outputs(*single.node, infos, outputs);
}

TEST(AttentionShapes, SymbolicDimsPassThrough) {
  std::mt19937 rng(10);
  AttentionCase c = make_case(rng, {1, 4, 1, 8}, {1, 4, 1, 8}, {1, 4, 1, 16});
  std::vector<ir::InferredOutput> outputs;
  const ir::Dim batch = ir::Dim::symbolic("batch"), t = ir::Dim::symbolic("T"),
                past = ir::Dim::symbolic("past");
  ASSERT_TRUE(infer(c, outputs,
                    {{batch, ir::Dim::known(4), t, ir::Dim::known(8)},
                     {batch, ir::Dim::known(4), past, ir::Dim::known(8)},
                     {batch, ir::Dim::known(4), past, ir::Dim::known(16)}}));
  EXPECT_EQ(outputs[0].shape, (ir::SymShape{batch, ir::Dim::known(4), t, ir::Dim::known(16)}));
  c.attrs.set("qkv_layout", std::int64_t{1});
  ASSERT_TRUE(infer(c, outputs,
                    {{batch, t, ir::Dim::known(4), ir::Dim::known(8)},
                     {batch, past, ir::Dim::known(2), ir::Dim::known(8)},
                     {batch, past, ir::Dim::known(2), ir::Dim::known(16)}}));
  EXPECT_EQ(outputs[0].shape, (ir::SymShape{batch, t, ir::Dim::known(4), ir::Dim::known(16)}));
}

TEST(AttentionShapes, RefusesWhatTheOpDoesNotDefine) {
  std::mt19937 rng(11);
  std::vector<ir::InferredOutput> outputs;
  AttentionCase heads = make_case(rng, {1, 3, 2, 4}, {1, 2, 2, 4}, {1, 2, 2, 4});
  Status status = infer(heads, outputs);
  EXPECT_FALSE(status);
  EXPECT_NE(status.to_string().find("multiple of the key/value heads"), std::string::npos)
      << status.to_string();
  AttentionCase rank = make_case(rng, {3, 2, 4}, {1, 3, 2, 4}, {1, 3, 2, 4});
  EXPECT_FALSE(infer(rank, outputs));
  AttentionCase depth = make_case(rng, {1, 2, 2, 4}, {1, 2, 2, 5}, {1, 2, 2, 4});
  EXPECT_FALSE(infer(depth, outputs));
  AttentionCase mask = make_case(rng, {1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 4});
  mask.mask = random_f32({3, 4}, rng);
  status = infer(mask, outputs);
  EXPECT_NE(status.to_string().find("does not broadcast"), std::string::npos) << status.to_string();
  mask.mask = Tensor::zeros(DType::kI64, {3, 5});
  EXPECT_FALSE(infer(mask, outputs));
  AttentionCase attrs = make_case(rng, {1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 4});
  attrs.attrs.set("causal", std::int64_t{2});
  EXPECT_FALSE(infer(attrs, outputs));
  attrs.attrs = {};
  attrs.attrs.set("qkv_layout", std::int64_t{3});
  EXPECT_FALSE(infer(attrs, outputs));
  // The kernel refuses a run whose mask does not broadcast, without reading out of bounds.
  mask.mask = random_f32({3, 4}, rng);
  SingleNode single = make_attention_node(mask);
  auto kernel = backends::cpu::create_kernel(*single.node, backends::kReferenceTactic);
  ASSERT_TRUE(kernel.has_value()) << kernel.status().to_string();
  Tensor out = Tensor::zeros(DType::kF32, {1, 2, 3, 4});
  Tensor* outs[] = {&out};
  const std::vector<const Tensor*> inputs = case_inputs(mask);
  ThreadPool pool(1);
  backends::KernelContext context{&pool};
  EXPECT_FALSE((*kernel)->run(inputs, outs, context));
}

}  // namespace
}  // namespace voxrt::attention_test
