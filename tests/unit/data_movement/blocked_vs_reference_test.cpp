// The blocked tactics against the reference on random odd shapes, for every dtype (the kernels
// move bytes, so every dtype must give identical bytes) and with 1 and 3 threads.
#include <algorithm>
#include <numeric>

#include "unit/data_movement/op_test_util.h"

namespace voxrt::testing {
namespace {

using ir::OpKind;
using I64 = std::vector<std::int64_t>;

std::int64_t uniform(std::mt19937& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

Dims random_dims(std::mt19937& rng, std::size_t rank, std::int64_t max_dim) {
  Dims dims;
  for (std::size_t i = 0; i < rank; ++i) dims.push_back(uniform(rng, 1, max_dim));
  return dims;
}

void check(OpKind op, const std::vector<const Tensor*>& inputs, ir::Attributes attrs = {},
           std::size_t outputs = 1) {
  TestNode t = make_node(op, inputs, outputs, std::move(attrs));
  ASSERT_EQ(backends::cpu::tactics_for(*t.node).size(), 2u) << t.node->describe();
  run_all_tactics(*t.node, inputs);
}

class BlockedVsReference : public ::testing::TestWithParam<DType> {};

TEST_P(BlockedVsReference, Transpose) {
  std::mt19937 rng(11);
  const std::vector<std::pair<Dims, I64>> fixed = {{{37, 65}, {1, 0}},
                                                   {{3, 33, 47}, {0, 2, 1}},
                                                   {{3, 33, 47}, {2, 0, 1}},
                                                   {{2, 1, 35, 3}, {3, 2, 1, 0}},
                                                   {{5, 7, 9, 11}, {0, 1, 3, 2}},
                                                   {{5, 7, 9, 11}, {1, 0, 2, 3}}};
  for (const auto& [dims, perm] : fixed) {
    Tensor x = random_tensor(GetParam(), dims, rng);
    check(OpKind::kTranspose, {&x}, attributes({{"perm", perm}}));
  }
  for (int trial = 0; trial < 40; ++trial) {
    const auto rank = static_cast<std::size_t>(uniform(rng, 1, 5));
    Tensor x = random_tensor(GetParam(), random_dims(rng, rank, 7), rng);
    I64 perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    check(OpKind::kTranspose, {&x}, attributes({{"perm", perm}}));
  }
}

TEST_P(BlockedVsReference, ConcatAndSplit) {
  std::mt19937 rng(12);
  for (int trial = 0; trial < 30; ++trial) {
    const auto rank = static_cast<std::size_t>(uniform(rng, 1, 4));
    const Dims base = random_dims(rng, rank, 6);
    const std::int64_t axis =
        uniform(rng, -static_cast<std::int64_t>(rank), static_cast<std::int64_t>(rank) - 1);
    const std::size_t axis_index =
        static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis);
    std::vector<Tensor> parts;
    I64 sizes;
    const auto count = static_cast<std::size_t>(uniform(rng, 1, 4));
    for (std::size_t p = 0; p < count; ++p) {
      Dims dims = base;
      dims[axis_index] = uniform(rng, 0, 5);
      sizes.push_back(dims[axis_index]);
      parts.push_back(random_tensor(GetParam(), dims, rng));
    }
    std::vector<const Tensor*> inputs;
    for (const Tensor& p : parts) inputs.push_back(&p);
    check(OpKind::kConcat, inputs, attributes({{"axis", axis}}));

    Dims whole = base;
    whole[axis_index] = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
    Tensor x = random_tensor(GetParam(), whole, rng);
    Tensor split = i64s(sizes);
    check(OpKind::kSplit, {&x, &split}, attributes({{"axis", axis}}), count);
  }
}

TEST_P(BlockedVsReference, Slice) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 40; ++trial) {
    const auto rank = static_cast<std::size_t>(uniform(rng, 1, 4));
    const Dims dims = random_dims(rng, rank, 9);
    Tensor x = random_tensor(GetParam(), dims, rng);
    I64 starts, ends, axes, steps;
    for (std::size_t d = 0; d < rank; ++d) {
      if (uniform(rng, 0, 3) == 0) continue;  // leave some axes whole
      const std::int64_t dim = dims[d];
      axes.push_back(uniform(rng, 0, 1)
                         ? static_cast<std::int64_t>(d)
                         : static_cast<std::int64_t>(d) - static_cast<std::int64_t>(rank));
      starts.push_back(uniform(rng, -dim - 2, dim + 2));
      ends.push_back(uniform(rng, 0, 4) == 0 ? std::numeric_limits<std::int64_t>::max()
                                             : uniform(rng, -dim - 2, dim + 2));
      steps.push_back(uniform(rng, 0, 1) ? uniform(rng, 1, 3) : -uniform(rng, 1, 3));
    }
    Tensor s = i64s(starts), e = i64s(ends), a = i64s(axes), st = i64s(steps);
    check(OpKind::kSlice, {&x, &s, &e, &a, &st});
  }
}

TEST_P(BlockedVsReference, Gather) {
  std::mt19937 rng(14);
  for (int trial = 0; trial < 30; ++trial) {
    const auto rank = static_cast<std::size_t>(uniform(rng, 1, 4));
    const Dims dims = random_dims(rng, rank, 7);
    Tensor x = random_tensor(GetParam(), dims, rng);
    const std::int64_t axis = uniform(rng, 0, static_cast<std::int64_t>(rank) - 1);
    const std::int64_t axis_dim = dims[static_cast<std::size_t>(axis)];
    const Dims index_dims = random_dims(rng, static_cast<std::size_t>(uniform(rng, 0, 2)), 4);
    I64 picks(static_cast<std::size_t>(element_count(index_dims)));
    for (auto& p : picks) p = uniform(rng, -axis_dim, axis_dim - 1);
    Tensor indices = Tensor::from_vector<std::int64_t>(index_dims, picks);
    check(OpKind::kGather, {&x, &indices}, attributes({{"axis", axis}}));
  }
}

TEST_P(BlockedVsReference, Pad) {
  std::mt19937 rng(15);
  const char* modes[] = {"constant", "edge", "reflect"};
  for (int trial = 0; trial < 36; ++trial) {
    const auto rank = static_cast<std::size_t>(uniform(rng, 1, 4));
    const Dims dims = random_dims(rng, rank, 6);
    Tensor x = random_tensor(GetParam(), dims, rng);
    const std::string mode = modes[trial % 3];
    I64 pads(2 * rank);
    for (std::size_t i = 0; i < 2 * rank; ++i) {
      const std::int64_t dim = dims[i % rank];
      // Constant mode may crop (negative pads) as long as the axis does not go below zero.
      pads[i] = mode == "constant" ? uniform(rng, -(dim / 2), 3) : uniform(rng, 0, 3);
    }
    Tensor p = i64s(pads);
    Tensor value = random_tensor(GetParam(), {}, rng);
    check(OpKind::kPad, {&x, &p, mode == "constant" ? &value : nullptr},
          attributes({{"mode", mode}}));
  }
}

TEST_P(BlockedVsReference, ExpandAndTile) {
  std::mt19937 rng(16);
  for (int trial = 0; trial < 30; ++trial) {
    const auto rank = static_cast<std::size_t>(uniform(rng, 1, 4));
    Dims out_dims = random_dims(rng, rank, 6);
    Dims in_dims;
    const auto in_rank = static_cast<std::size_t>(uniform(rng, 1, static_cast<std::int64_t>(rank)));
    for (std::size_t i = rank - in_rank; i < rank; ++i)
      in_dims.push_back(uniform(rng, 0, 1) ? out_dims[i] : 1);
    Tensor x = random_tensor(GetParam(), in_dims, rng);
    Tensor shape = i64s(out_dims);
    check(OpKind::kExpand, {&x, &shape});

    I64 repeats;
    for (std::size_t i = 0; i < in_rank; ++i)
      repeats.push_back(uniform(rng, 0, 6) == 0 ? 0 : uniform(rng, 1, 3));
    Tensor r = i64s(repeats);
    check(OpKind::kTile, {&x, &r});
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, BlockedVsReference, ::testing::ValuesIn(kAllDTypes),
                         [](const auto& param_info) {
                           return std::string(dtype_name(param_info.param));
                         });

}  // namespace
}  // namespace voxrt::testing
