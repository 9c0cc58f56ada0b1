// Every data-movement op against hand values (mostly the examples of the ONNX operator spec);
// every listed tactic must agree with the reference on each case.
#include <limits>

#include "unit/data_movement/op_test_util.h"

namespace voxrt::testing {
namespace {

using ir::OpKind;
using I64 = std::vector<std::int64_t>;
using F32 = std::vector<float>;

std::vector<Tensor> run(OpKind op, const std::vector<const Tensor*>& inputs,
                        ir::Attributes attrs = {}, std::size_t outputs = 1) {
  TestNode t = make_node(op, inputs, outputs, std::move(attrs));
  return run_all_tactics(*t.node, inputs);
}

Tensor arange_i64(const Dims& dims) {
  I64 values(static_cast<std::size_t>(element_count(dims)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int64_t>(i);
  return Tensor::from_vector<std::int64_t>(dims, values);
}

TEST(Transpose, DefaultPermReverses) {
  Tensor x = arange_i64({2, 3});
  auto out = run(OpKind::kTranspose, {&x});
  EXPECT_TRUE(has_values<std::int64_t>(out[0], {3, 2}, {0, 3, 1, 4, 2, 5}));
}

TEST(Transpose, ExplicitPerms) {
  Tensor x = arange_i64({2, 3, 4});
  auto keep_inner = run(OpKind::kTranspose, {&x}, attributes({{"perm", I64{1, 0, 2}}}));
  EXPECT_TRUE(has_values<std::int64_t>(
      keep_inner[0], {3, 2, 4},
      {0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7, 16, 17, 18, 19, 8, 9, 10, 11, 20, 21, 22, 23}));
  auto rotate = run(OpKind::kTranspose, {&x}, attributes({{"perm", I64{2, 0, 1}}}));
  EXPECT_TRUE(has_values<std::int64_t>(
      rotate[0], {4, 2, 3},
      {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}));
}

TEST(Transpose, RejectsBadPerm) {
  Tensor x = arange_i64({2, 3});
  TestNode t = make_node(OpKind::kTranspose, {&x}, 1, attributes({{"perm", I64{0, 0}}}));
  auto out = allocate_outputs(*t.node, {&x});
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.status().message().find("test_node"), std::string::npos);
}

TEST(Reshape, ZeroCopiesAndMinusOneInfers) {
  Tensor x = arange_i64({2, 3, 4});
  Tensor shape = i64s({4, 0, -1});
  auto out = run(OpKind::kReshape, {&x, &shape});
  EXPECT_EQ(out[0].dims(), (Dims{4, 3, 2}));
  EXPECT_TRUE(has_values<std::int64_t>(out[0], {4, 3, 2}, x.to_i64_vector()));
}

TEST(Reshape, AllowZeroMakesAnEmptyDim) {
  Tensor x = Tensor::zeros(DType::kF32, {0, 3, 4});
  Tensor shape = i64s({3, 4, 0});
  auto out = run(OpKind::kReshape, {&x, &shape}, attributes({{"allowzero", std::int64_t{1}}}));
  EXPECT_EQ(out[0].dims(), (Dims{3, 4, 0}));
}

TEST(Reshape, RejectsCountMismatchAndTwoWildcards) {
  Tensor x = arange_i64({2, 3});
  for (const I64& bad : {I64{4, 2}, I64{-1, -1}, I64{-1, 4}, I64{0, 0, 0, 1}}) {
    Tensor shape = i64s(bad);
    TestNode t = make_node(OpKind::kReshape, {&x, &shape}, 1);
    EXPECT_FALSE(allocate_outputs(*t.node, {&x, &shape}).has_value()) << dims_to_string(bad);
  }
}

TEST(Flatten, Axes) {
  Tensor x = arange_i64({2, 3, 4});
  EXPECT_EQ(run(OpKind::kFlatten, {&x}, attributes({{"axis", std::int64_t{2}}}))[0].dims(),
            (Dims{6, 4}));
  EXPECT_EQ(run(OpKind::kFlatten, {&x}, attributes({{"axis", std::int64_t{0}}}))[0].dims(),
            (Dims{1, 24}));
  EXPECT_EQ(run(OpKind::kFlatten, {&x}, attributes({{"axis", std::int64_t{-1}}}))[0].dims(),
            (Dims{6, 4}));
  EXPECT_EQ(run(OpKind::kFlatten, {&x})[0].dims(), (Dims{2, 12}));
  auto out = run(OpKind::kFlatten, {&x}, attributes({{"axis", std::int64_t{3}}}));
  EXPECT_TRUE(has_values<std::int64_t>(out[0], {24, 1}, x.to_i64_vector()));
}

TEST(SqueezeUnsqueeze, Axes) {
  Tensor x = arange_i64({1, 3, 1, 2});
  Tensor axes = i64s({0, -2});
  auto squeezed = run(OpKind::kSqueeze, {&x, &axes});
  EXPECT_TRUE(has_values<std::int64_t>(squeezed[0], {3, 2}, x.to_i64_vector()));
  EXPECT_EQ(run(OpKind::kSqueeze, {&x})[0].dims(), (Dims{3, 2}));
  Tensor bad_axes = i64s({1});
  TestNode t = make_node(OpKind::kSqueeze, {&x, &bad_axes}, 1);
  EXPECT_FALSE(allocate_outputs(*t.node, {&x, &bad_axes}).has_value());

  Tensor y = arange_i64({3, 4, 5});
  Tensor unsqueeze_axes = i64s({2, 4, 5});
  auto unsqueezed = run(OpKind::kUnsqueeze, {&y, &unsqueeze_axes});
  EXPECT_TRUE(has_values<std::int64_t>(unsqueezed[0], {3, 4, 1, 5, 1, 1}, y.to_i64_vector()));
  Tensor negative = i64s({-1, 0});
  EXPECT_EQ(run(OpKind::kUnsqueeze, {&y, &negative})[0].dims(), (Dims{1, 3, 4, 5, 1}));
}

TEST(Concat, SpecExample) {
  Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector<float>({2, 2}, {5, 6, 7, 8});
  EXPECT_TRUE(
      has_values<float>(run(OpKind::kConcat, {&a, &b}, attributes({{"axis", std::int64_t{0}}}))[0],
                        {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(
      has_values<float>(run(OpKind::kConcat, {&a, &b}, attributes({{"axis", std::int64_t{-1}}}))[0],
                        {2, 4}, {1, 2, 5, 6, 3, 4, 7, 8}));
  Tensor c = Tensor::from_vector<float>({2, 1}, {9, 10});
  EXPECT_TRUE(has_values<float>(
      run(OpKind::kConcat, {&a, &c, &b}, attributes({{"axis", std::int64_t{1}}}))[0], {2, 5},
      {1, 2, 9, 5, 6, 3, 4, 10, 7, 8}));
  TestNode t = make_node(OpKind::kConcat, {&a, &c}, 1, attributes({{"axis", std::int64_t{0}}}));
  EXPECT_FALSE(allocate_outputs(*t.node, {&a, &c}).has_value());
}

TEST(Split, EqualAndExplicitSizes) {
  Tensor x = Tensor::from_vector<float>({6}, {1, 2, 3, 4, 5, 6});
  auto equal = run(OpKind::kSplit, {&x}, {}, 3);
  ASSERT_EQ(equal.size(), 3u);
  EXPECT_TRUE(has_values<float>(equal[0], {2}, {1, 2}));
  EXPECT_TRUE(has_values<float>(equal[2], {2}, {5, 6}));
  Tensor sizes = i64s({2, 4});
  auto uneven = run(OpKind::kSplit, {&x, &sizes}, {}, 2);
  EXPECT_TRUE(has_values<float>(uneven[1], {4}, {3, 4, 5, 6}));

  Tensor m = arange_f32({2, 6}, 1.0f);
  auto by_column = run(OpKind::kSplit, {&m, &sizes}, attributes({{"axis", std::int64_t{1}}}), 2);
  EXPECT_TRUE(has_values<float>(by_column[0], {2, 2}, {1, 2, 7, 8}));
  EXPECT_TRUE(has_values<float>(by_column[1], {2, 4}, {3, 4, 5, 6, 9, 10, 11, 12}));
  TestNode t = make_node(OpKind::kSplit, {&x}, 4);
  EXPECT_FALSE(allocate_outputs(*t.node, {&x}).has_value());
}

TEST(Slice, SpecExamples) {
  Tensor x = Tensor::from_vector<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor starts = i64s({1, 0}), ends = i64s({2, 3}), axes = i64s({0, 1}), steps = i64s({1, 2});
  EXPECT_TRUE(has_values<float>(run(OpKind::kSlice, {&x, &starts, &ends, &axes, &steps})[0], {1, 2},
                                {5, 7}));
  Tensor starts2 = i64s({0, 1}), ends2 = i64s({-1, 1000});
  EXPECT_TRUE(has_values<float>(run(OpKind::kSlice, {&x, &starts2, &ends2})[0], {1, 3}, {2, 3, 4}));
}

TEST(Slice, NegativeStepsClampingAndHugeEnds) {
  Tensor v = Tensor::from_vector<float>({5}, {1, 2, 3, 4, 5});
  Tensor start = i64s({-1}), end_min = i64s({std::numeric_limits<std::int64_t>::min()}),
         step = i64s({-1});
  Tensor axis0 = i64s({0});
  EXPECT_TRUE(has_values<float>(run(OpKind::kSlice, {&v, &start, &end_min, &axis0, &step})[0], {5},
                                {5, 4, 3, 2, 1}));
  Tensor start4 = i64s({4}), end1 = i64s({1}), step2 = i64s({-2});
  EXPECT_TRUE(
      has_values<float>(run(OpKind::kSlice, {&v, &start4, &end1, &axis0, &step2})[0], {2}, {5, 3}));
  Tensor zero = i64s({0}), end_max = i64s({std::numeric_limits<std::int64_t>::max()});
  EXPECT_TRUE(
      has_values<float>(run(OpKind::kSlice, {&v, &zero, &end_max})[0], {5}, {1, 2, 3, 4, 5}));
  Tensor big = i64s({1000});
  EXPECT_EQ(run(OpKind::kSlice, {&v, &big, &big})[0].dims(), (Dims{0}));

  Tensor y = arange_i64({3, 4, 5});
  Tensor starts = i64s({2, 3, 4}), ends = i64s({0, 0, 1}), axes = i64s({0, 1, 2}),
         steps = i64s({-1, -2, -2});
  EXPECT_TRUE(has_values<std::int64_t>(run(OpKind::kSlice, {&y, &starts, &ends, &axes, &steps})[0],
                                       {2, 2, 2}, {59, 57, 49, 47, 39, 37, 29, 27}));
  Tensor s1 = i64s({1}), e_big = i64s({1000}), a1 = i64s({1});
  EXPECT_EQ(run(OpKind::kSlice, {&y, &s1, &e_big, &a1})[0].dims(), (Dims{3, 3, 5}));
  Tensor zero_step = i64s({0});
  TestNode t = make_node(OpKind::kSlice, {&y, &s1, &e_big, &a1, &zero_step}, 1);
  EXPECT_FALSE(allocate_outputs(*t.node, {&y, &s1, &e_big, &a1, &zero_step}).has_value());
}

TEST(Gather, SpecExamples) {
  Tensor data = Tensor::from_vector<float>({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor indices = Tensor::from_vector<std::int64_t>({2, 2}, {0, 1, 1, 2});
  EXPECT_TRUE(has_values<float>(run(OpKind::kGather, {&data, &indices})[0], {2, 2, 2},
                                {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f}));
  Tensor data3 =
      Tensor::from_vector<float>({3, 3}, {1.0f, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f});
  Tensor cols = Tensor::from_vector<std::int32_t>({1, 2}, {0, 2});
  EXPECT_TRUE(has_values<float>(
      run(OpKind::kGather, {&data3, &cols}, attributes({{"axis", std::int64_t{1}}}))[0], {3, 1, 2},
      {1.0f, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f}));
  Tensor v = arange_i64({10});
  Tensor negative = i64s({0, -9, -10});
  EXPECT_TRUE(has_values<std::int64_t>(run(OpKind::kGather, {&v, &negative})[0], {3}, {0, 1, 0}));
  Tensor scalar = Tensor::scalar_i64(-1);
  EXPECT_TRUE(has_values<std::int64_t>(run(OpKind::kGather, {&v, &scalar})[0], {}, {9}));
}

TEST(Gather, OutOfRangeIndexIsAnError) {
  Tensor v = arange_i64({4});
  Tensor bad = i64s({4});
  TestNode t = make_node(OpKind::kGather, {&v, &bad}, 1);
  // Shape inference catches constant indices; the kernel catches run-time ones.
  EXPECT_FALSE(allocate_outputs(*t.node, {&v, &bad}).has_value());
  Tensor out = Tensor::zeros(DType::kI64, {1});
  for (backends::TacticId tactic : {0u, 1u}) {
    auto kernel = backends::cpu::create_kernel(*t.node, tactic);
    ASSERT_TRUE(kernel.has_value());
    ThreadPool pool(1);
    backends::KernelContext context{&pool};
    const Tensor* ins[] = {&v, &bad};
    Tensor* outs[] = {&out};
    Status s = (*kernel)->run(ins, outs, context);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
  }
}

TEST(Pad, ConstantReflectEdgeAndNegative) {
  Tensor x = Tensor::from_vector<float>({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor pads = i64s({0, 2, 0, 0});
  EXPECT_TRUE(has_values<float>(run(OpKind::kPad, {&x, &pads})[0], {3, 4},
                                {0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f}));
  Tensor value = Tensor::scalar_f32(-7.0f);
  EXPECT_TRUE(has_values<float>(run(OpKind::kPad, {&x, &pads, &value})[0], {3, 4},
                                {-7, -7, 1.0f, 1.2f, -7, -7, 2.3f, 3.4f, -7, -7, 4.5f, 5.7f}));
  Tensor reflect_pads = i64s({0, 1, 0, 0});
  EXPECT_TRUE(has_values<float>(
      run(OpKind::kPad, {&x, &reflect_pads}, attributes({{"mode", std::string("reflect")}}))[0],
      {3, 3}, {1.2f, 1.0f, 1.2f, 3.4f, 2.3f, 3.4f, 5.7f, 4.5f, 5.7f}));
  EXPECT_TRUE(has_values<float>(
      run(OpKind::kPad, {&x, &pads}, attributes({{"mode", std::string("edge")}}))[0], {3, 4},
      {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}));
  Tensor v = Tensor::from_vector<float>({5}, {1, 2, 3, 4, 5});
  Tensor reflect2 = i64s({2, 3});
  EXPECT_TRUE(has_values<float>(
      run(OpKind::kPad, {&v, &reflect2}, attributes({{"mode", std::string("reflect")}}))[0], {10},
      {3, 2, 1, 2, 3, 4, 5, 4, 3, 2}));
  Tensor crop = i64s({-1, 2});
  EXPECT_TRUE(has_values<float>(run(OpKind::kPad, {&v, &crop})[0], {6}, {2, 3, 4, 5, 0, 0}));
  // Pads over selected axes (opset 18 form): only axis 0 of the 3x2 input.
  Tensor axis_pads = i64s({1, 0});
  Tensor axes = i64s({0});
  EXPECT_TRUE(has_values<float>(run(OpKind::kPad, {&x, &axis_pads, nullptr, &axes})[0], {4, 2},
                                {0, 0, 1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}));
  // The spec's reflect example pads an axis of 2 by 2: the reflection repeats.
  EXPECT_TRUE(has_values<float>(
      run(OpKind::kPad, {&x, &pads}, attributes({{"mode", std::string("reflect")}}))[0], {3, 4},
      {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}));
  Tensor nothing = Tensor::zeros(DType::kF32, {0});
  Tensor one_each = i64s({1, 1});
  TestNode t = make_node(OpKind::kPad, {&nothing, &one_each}, 1,
                         attributes({{"mode", std::string("edge")}}));
  EXPECT_FALSE(allocate_outputs(*t.node, {&nothing, &one_each}).has_value());
}

TEST(ShapeOps, ShapeWithStartEndAndSize) {
  Tensor x = Tensor::zeros(DType::kBF16, {2, 3, 4});
  EXPECT_TRUE(has_values<std::int64_t>(run(OpKind::kShape, {&x})[0], {3}, {2, 3, 4}));
  EXPECT_TRUE(has_values<std::int64_t>(
      run(OpKind::kShape, {&x}, attributes({{"start", std::int64_t{1}}}))[0], {2}, {3, 4}));
  EXPECT_TRUE(has_values<std::int64_t>(
      run(OpKind::kShape, {&x}, attributes({{"end", std::int64_t{-1}}}))[0], {2}, {2, 3}));
  EXPECT_TRUE(has_values<std::int64_t>(
      run(OpKind::kShape, {&x},
          attributes({{"start", std::int64_t{-10}}, {"end", std::int64_t{10}}}))[0],
      {3}, {2, 3, 4}));
  EXPECT_TRUE(has_values<std::int64_t>(run(OpKind::kSize, {&x})[0], {}, {24}));
}

TEST(ShapeOps, ConstantOfShapeAndRange) {
  Tensor shape = i64s({2, 3});
  EXPECT_TRUE(has_values<float>(run(OpKind::kConstantOfShape, {&shape})[0], {2, 3}, F32(6, 0.0f)));
  Tensor seven = Tensor::from_vector<std::int32_t>({1}, {7});
  EXPECT_TRUE(has_values<std::int32_t>(
      run(OpKind::kConstantOfShape, {&shape}, attributes({{"value", seven}}))[0], {2, 3},
      std::vector<std::int32_t>(6, 7)));
  Tensor empty = i64s({});
  EXPECT_EQ(run(OpKind::kConstantOfShape, {&empty})[0].dims(), Dims{});

  Tensor start = Tensor::scalar_i64(3), limit = Tensor::scalar_i64(9),
         delta = Tensor::scalar_i64(3);
  EXPECT_TRUE(
      has_values<std::int64_t>(run(OpKind::kRange, {&start, &limit, &delta})[0], {2}, {3, 6}));
  Tensor s2 = Tensor::from_vector<std::int32_t>({}, {10}),
         l2 = Tensor::from_vector<std::int32_t>({}, {4}),
         d2 = Tensor::from_vector<std::int32_t>({}, {-3});
  EXPECT_TRUE(has_values<std::int32_t>(run(OpKind::kRange, {&s2, &l2, &d2})[0], {2}, {10, 7}));
  Tensor fs = Tensor::scalar_f32(1.0f), fl = Tensor::scalar_f32(5.0f),
         fd = Tensor::scalar_f32(1.5f);
  EXPECT_TRUE(has_values<float>(run(OpKind::kRange, {&fs, &fl, &fd})[0], {3}, {1.0f, 2.5f, 4.0f}));
  Tensor backwards = Tensor::scalar_i64(-1);
  EXPECT_EQ(run(OpKind::kRange, {&start, &limit, &backwards})[0].dims(), (Dims{0}));
}

TEST(ExpandTile, SpecExamples) {
  Tensor x = Tensor::from_vector<float>({3, 1}, {1, 2, 3});
  Tensor shape = i64s({2, 1, 6});
  auto expanded = run(OpKind::kExpand, {&x, &shape});
  ASSERT_EQ(expanded[0].dims(), (Dims{2, 3, 6}));
  for (std::int64_t i = 0; i < 36; ++i)
    EXPECT_EQ(expanded[0].data<float>()[i], static_cast<float>(i / 6 % 3 + 1));
  Tensor same = i64s({3, 4});
  EXPECT_TRUE(has_values<float>(run(OpKind::kExpand, {&x, &same})[0], {3, 4},
                                {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  Tensor smaller = i64s({1});
  EXPECT_EQ(run(OpKind::kExpand, {&x, &smaller})[0].dims(), (Dims{3, 1}));

  Tensor m = Tensor::from_vector<float>({2, 2}, {0, 1, 2, 3});
  Tensor repeats = i64s({2, 2});
  EXPECT_TRUE(has_values<float>(run(OpKind::kTile, {&m, &repeats})[0], {4, 4},
                                {0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3}));
  Tensor rows = i64s({3, 1});
  EXPECT_TRUE(has_values<float>(run(OpKind::kTile, {&m, &rows})[0], {6, 2},
                                {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
}

}  // namespace
}  // namespace voxrt::testing
