// The CUDA data-movement launch parameters (copy_plan.h), checked on the CPU: each StridedCopy
// is run through a host copy of strided_copy_kernel's index loop (pointwise_ops.cu) and compared
// with a plain implementation of the op. Covers the chain of the gpu test CudaOps.DataMovement,
// whose Split outputs were never written on the GPU (prepare() skipped every part because device
// pointers are not known yet when it runs).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "backends/cuda/copy_plan.h"

namespace voxrt::backends::cuda {
namespace {

// strided_copy_kernel's body, one host loop over the same element count.
void emulate(const std::vector<float>& in, std::vector<float>& out, const ops::StridedCopy& c) {
  std::int64_t n = 1;
  for (int d = 0; d < c.rank; ++d) n *= c.dims[d];
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t rest = i, oi = c.in_offset, oo = c.out_offset;
    for (int d = c.rank - 1; d >= 0; --d) {
      const std::int64_t coord = rest % c.dims[d];
      rest /= c.dims[d];
      oi += coord * c.in_strides[d];
      oo += coord * c.out_strides[d];
    }
    ASSERT_GE(oi, 0);
    ASSERT_LT(oi, static_cast<std::int64_t>(in.size()));
    ASSERT_GE(oo, 0);
    ASSERT_LT(oo, static_cast<std::int64_t>(out.size()));
    out[static_cast<std::size_t>(oo)] = in[static_cast<std::size_t>(oi)];
  }
}

std::vector<float> iota_tensor(const Dims& dims, float first = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(element_count(dims)));
  std::iota(v.begin(), v.end(), first);
  return v;
}
std::vector<float> poisoned(const Dims& dims) {
  return std::vector<float>(static_cast<std::size_t>(element_count(dims)),
                            std::numeric_limits<float>::quiet_NaN());
}

// Multi-index helpers for the plain implementations.
std::int64_t flat(const Dims& dims, const std::vector<std::int64_t>& idx) {
  std::int64_t f = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + idx[d];
  return f;
}
std::vector<std::int64_t> unflat(const Dims& dims, std::int64_t f) {
  std::vector<std::int64_t> idx(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    idx[d] = f % dims[d];
    f /= dims[d];
  }
  return idx;
}

std::vector<float> plain_transpose(const std::vector<float>& x, const Dims& xd, const Dims& perm,
                                   Dims& od) {
  od.clear();
  for (std::int64_t p : perm) od.push_back(xd[static_cast<std::size_t>(p)]);
  std::vector<float> y(x.size());
  for (std::int64_t f = 0; f < element_count(od); ++f) {
    const auto o = unflat(od, f);
    std::vector<std::int64_t> i(xd.size());
    for (std::size_t d = 0; d < perm.size(); ++d) i[static_cast<std::size_t>(perm[d])] = o[d];
    y[static_cast<std::size_t>(f)] = x[static_cast<std::size_t>(flat(xd, i))];
  }
  return y;
}

// ONNX Slice for one set of starts/ends/axes/steps, output dims computed here.
std::vector<float> plain_slice(const std::vector<float>& x, const Dims& xd, const Dims& starts,
                               const Dims& ends, const Dims& axes, const Dims& steps, Dims& od) {
  const std::size_t rank = xd.size();
  std::vector<std::int64_t> first(rank, 0), step(rank, 1);
  od = xd;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    std::int64_t a = axes[i] < 0 ? axes[i] + static_cast<std::int64_t>(rank) : axes[i];
    const auto ax = static_cast<std::size_t>(a);
    const std::int64_t dim = xd[ax], st = steps[i];
    std::int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    std::int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (st > 0) {
      s = std::clamp<std::int64_t>(s, 0, dim);
      e = std::clamp<std::int64_t>(e, 0, dim);
      od[ax] = std::max<std::int64_t>(0, (e - s + st - 1) / st);
    } else {
      s = std::clamp<std::int64_t>(s, 0, dim - 1);
      e = std::clamp<std::int64_t>(e, -1, dim - 1);
      od[ax] = std::max<std::int64_t>(0, (s - e + (-st) - 1) / (-st));
    }
    first[ax] = s;
    step[ax] = st;
  }
  std::vector<float> y(static_cast<std::size_t>(element_count(od)));
  for (std::int64_t f = 0; f < element_count(od); ++f) {
    auto i = unflat(od, f);
    for (std::size_t d = 0; d < rank; ++d) i[d] = first[d] + i[d] * step[d];
    y[static_cast<std::size_t>(f)] = x[static_cast<std::size_t>(flat(xd, i))];
  }
  return y;
}

void expect_same(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << ": element " << i << " never written";
    ASSERT_EQ(got[i], want[i]) << what << ": element " << i;
  }
}

std::vector<float> run(const ops::StridedCopy& c, const std::vector<float>& in, const Dims& od) {
  std::vector<float> out = poisoned(od);
  emulate(in, out, c);
  return out;
}

// The gpu test's chain: Transpose(0,2,1,3) -> Slice(starts {1,-4}, ends {100,5}, axes {1,3},
// steps {2,3}) -> Concat(axis 1, {s, other, s}) -> Gather -> Split(axis 2, {1, 2}).
TEST(CudaCopyPlan, DataMovementChain) {
  const Dims xd{2, 3, 4, 5};
  const auto x = iota_tensor(xd);
  const Dims perm{0, 2, 1, 3};
  Dims td;
  const auto t_ref = plain_transpose(x, xd, perm, td);
  ASSERT_EQ(td, (Dims{2, 4, 3, 5}));
  const auto t = run(transpose_copy(xd, td, perm), x, td);
  expect_same(t, t_ref, "transpose");

  Dims sd;
  const auto s_ref = plain_slice(t, td, {1, -4}, {100, 5}, {1, 3}, {2, 3}, sd);
  ASSERT_EQ(sd, (Dims{2, 2, 3, 2}));
  const Dims starts{1, -4}, axes{1, 3}, steps{2, 3};
  const auto s = run(slice_copy(td, sd, starts, axes, steps), t, sd);
  expect_same(s, s_ref, "slice");

  // Concat {s, other, s} along 1 -> [2, 7, 3, 2].
  const Dims other_d{2, 3, 3, 2};
  const auto other = iota_tensor(other_d, 1000.0f);
  const Dims cd{2, 7, 3, 2};
  std::vector<float> c_ref(static_cast<std::size_t>(element_count(cd)));
  for (std::int64_t f = 0; f < element_count(cd); ++f) {
    auto i = unflat(cd, f);
    const std::int64_t b = i[1];
    if (b < 2 || b >= 5) {
      i[1] = b < 2 ? b : b - 5;
      c_ref[static_cast<std::size_t>(f)] = s[static_cast<std::size_t>(flat(sd, i))];
    } else {
      i[1] = b - 2;
      c_ref[static_cast<std::size_t>(f)] = other[static_cast<std::size_t>(flat(other_d, i))];
    }
  }
  const std::vector<Dims> concat_parts{sd, other_d, sd};
  const auto concat = concat_split_copies(true, cd, concat_parts, 1);
  ASSERT_EQ(concat.size(), 3u);
  std::vector<float> c = poisoned(cd);
  for (const PartCopy& pc : concat) emulate(pc.part == 1 ? other : s, c, pc.copy);
  expect_same(c, c_ref, "concat");

  // Split [2, 4, 3, 2] along axis 2 into {1, 2}: every output gets a copy and is fully written.
  const Dims gd{2, 4, 3, 2};
  const auto g = iota_tensor(gd, 7.0f);
  const std::vector<Dims> split_parts{{2, 4, 1, 2}, {2, 4, 2, 2}};
  const auto split = concat_split_copies(false, gd, split_parts, 2);
  ASSERT_EQ(split.size(), 2u);
  for (std::size_t p = 0; p < 2; ++p) {
    ASSERT_EQ(split[p].part, p);
    const Dims& pd = split_parts[p];
    std::vector<float> want(static_cast<std::size_t>(element_count(pd)));
    for (std::int64_t f = 0; f < element_count(pd); ++f) {
      auto i = unflat(pd, f);
      i[2] += p == 0 ? 0 : 1;
      want[static_cast<std::size_t>(f)] = g[static_cast<std::size_t>(flat(gd, i))];
    }
    expect_same(run(split[p].copy, g, pd), want, p == 0 ? "split part 0" : "split part 1");
  }
}

TEST(CudaCopyPlan, SplitSkipsEmptyPartsButKeepsTheirPlace) {
  const Dims whole{3, 5};
  const auto w = iota_tensor(whole);
  const std::vector<Dims> parts{{3, 2}, {3, 0}, {3, 3}};
  const auto copies = concat_split_copies(false, whole, parts, -1);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].part, 0u);
  EXPECT_EQ(copies[1].part, 2u);
  const auto last = run(copies[1].copy, w, parts[2]);
  expect_same(last, {2, 3, 4, 7, 8, 9, 12, 13, 14}, "split part 2");
}

TEST(CudaCopyPlan, SliceNegativeStepsAndAxes) {
  const Dims xd{4, 7};
  const auto x = iota_tensor(xd);
  const Dims starts{-1, 100}, ends{-100, 0}, axes{-1, 0}, steps{-3, -2};
  Dims od;
  const auto want = plain_slice(x, xd, starts, ends, axes, steps, od);
  ASSERT_EQ(od, (Dims{2, 3}));  // rows 3, 1; columns 6, 3, 0
  expect_same(run(slice_copy(xd, od, starts, axes, steps), x, od), want, "slice");
}

// The executor aliases a Slice whose output is one contiguous run of its input: the offset must
// be where the plain slice starts, and every slice that is not one run must be refused.
TEST(CudaCopyPlan, ContiguousSliceIsAnAliasAtTheRightOffset) {
  struct Case {
    Dims in, starts, ends, axes, steps;
    bool alias;
  };
  const std::vector<Case> cases = {
      {{5, 1, 512}, {3}, {4}, {0}, {}, true},                  // one layer of a stacked h0
      {{5, 2, 6}, {1}, {3}, {0}, {}, true},                    // two whole layers
      {{5, 2, 6}, {2, 1}, {3, 2}, {0, 1}, {}, true},           // one row of one layer
      {{5, 2, 6}, {2, 0, 1}, {3, 1, 4}, {0, 1, 2}, {}, true},  // part of one row
      {{5, 2, 6}, {0, 1}, {5, 2}, {0, 1}, {}, false},          // the second row of every layer
      {{5, 2, 6}, {0}, {3}, {2}, {}, false},                   // columns
      {{5, 2, 6}, {0}, {5}, {0}, {2}, false},                  // every other layer
      {{5, 2, 6}, {4}, {0}, {0}, {-1}, false},                 // reversed
      {{4, 3}, {-2}, {100}, {0}, {}, true},                    // negative start, clamped end
  };
  for (const Case& c : cases) {
    const auto x = iota_tensor(c.in);
    const Dims steps = c.steps.empty() ? Dims(c.starts.size(), 1) : c.steps;
    Dims od;
    const auto want = plain_slice(x, c.in, c.starts, c.ends, c.axes, steps, od);
    const auto offset = contiguous_source_offset(slice_copy(c.in, od, c.starts, c.axes, steps));
    SCOPED_TRACE(::testing::PrintToString(c.in) + " starts " + ::testing::PrintToString(c.starts));
    ASSERT_EQ(offset.has_value(), c.alias);
    if (!offset) continue;
    const std::vector<float> viewed(x.begin() + *offset,
                                    x.begin() + *offset + static_cast<std::int64_t>(want.size()));
    expect_same(viewed, want, "aliased slice");
  }
}

TEST(CudaCopyPlan, ConcatInPlaceOnlyAlongTheOutermostNonUnitAxis) {
  const std::vector<Dims> layers = {{1, 4, 8}, {2, 4, 8}, {1, 4, 8}};
  const auto offsets = concat_parts_in_place({4, 4, 8}, layers, 0);
  ASSERT_TRUE(offsets.has_value());
  EXPECT_EQ(*offsets, (std::vector<std::int64_t>{0, 32, 96}));
  // Axis 1 after a unit axis 0 is still one run per part.
  const std::vector<Dims> rows = {{1, 1, 8}, {1, 3, 8}};
  const auto row_offsets = concat_parts_in_place({1, 4, 8}, rows, 1);
  ASSERT_TRUE(row_offsets.has_value());
  EXPECT_EQ(*row_offsets, (std::vector<std::int64_t>{0, 8}));
  // Axis 1 after a non-unit axis 0 interleaves the parts; an empty part has no storage to place.
  const std::vector<Dims> interleaved = {{2, 1, 8}, {2, 3, 8}};
  EXPECT_FALSE(concat_parts_in_place({2, 4, 8}, interleaved, 1).has_value());
  const std::vector<Dims> with_empty = {{0, 4, 8}, {4, 4, 8}};
  EXPECT_FALSE(concat_parts_in_place({4, 4, 8}, with_empty, 0).has_value());
}

TEST(CudaCopyPlan, TransposeDefaultPermAndExpand) {
  const Dims xd{2, 3, 4};
  const auto x = iota_tensor(xd);
  Dims od;
  const auto want = plain_transpose(x, xd, {2, 1, 0}, od);
  expect_same(run(transpose_copy(xd, od, {}), x, od), want, "transpose, default perm");

  const Dims ed{3, 1}, eo{2, 3, 4};
  const auto e = iota_tensor(ed);
  std::vector<float> e_want;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int k = 0; k < 4; ++k) e_want.push_back(e[static_cast<std::size_t>(b)]);
  expect_same(run(expand_copy(ed, eo), e, eo), e_want, "expand");
}

// A MatMul operand whose batch dims broadcast partly (a relative-position [1, H, D, P] against
// queries [B, H, T, D]) is written out to the output's whole batch with Expand's copy before one
// strided-batched GEMM (dense.cpp): every batch b gets the same [H, D, P] block.
TEST(CudaCopyPlan, MatMulOperandExpandedToTheOutputBatch) {
  const Dims xd{1, 3, 4, 5}, od{2, 3, 4, 5};
  const auto x = iota_tensor(xd);
  std::vector<float> want;
  for (int b = 0; b < 2; ++b) want.insert(want.end(), x.begin(), x.end());
  expect_same(run(expand_copy(xd, od), x, od), want, "relative-position operand");
  const Dims yd{3, 1, 4, 5}, yo{2, 3, 2, 4, 5};  // a missing leading dim and an inner 1
  const auto y = iota_tensor(yd);
  std::vector<float> y_want;
  for (int a = 0; a < 2; ++a)
    for (int h = 0; h < 3; ++h)
      for (int g = 0; g < 2; ++g)
        y_want.insert(y_want.end(), y.begin() + h * 20, y.begin() + (h + 1) * 20);
  expect_same(run(expand_copy(yd, yo), y, yo), y_want, "rank-5 output batch");
}

// merged_axes: the same elements land in the same places, with fewer axes where both sides are
// contiguous across neighbours (what the launcher runs).
TEST(CudaCopyPlan, MergedAxesCopyTheSameElements) {
  struct Case {
    Dims in;
    Dims perm;
    int merged_rank;
  };
  // The DS2 GRU input: [B, C*F, T] -> [T, B, C*F] is a 2-D transpose; a unit axis disappears;
  // an identity perm is one run; a true 3-axis shuffle stays 3-D.
  for (const Case& c :
       {Case{{4, 6, 3}, {2, 0, 1}, 2}, Case{{2, 1, 5, 3}, {0, 3, 1, 2}, 3},
        Case{{3, 4, 5}, {0, 1, 2}, 1}, Case{{3, 4, 5}, {2, 0, 1}, 2}, Case{{2, 3, 4}, {1, 2, 0}, 2},
        Case{{2, 3, 4}, {2, 1, 0}, 3}, Case{{1, 1, 1}, {2, 0, 1}, 1}}) {
    const auto x = iota_tensor(c.in);
    Dims od;
    const auto want = plain_transpose(x, c.in, c.perm, od);
    const ops::StridedCopy copy = transpose_copy(c.in, od, c.perm);
    const ops::StridedCopy merged = ops::merged_axes(copy);
    expect_same(run(merged, x, od), want, "merged transpose");
    EXPECT_EQ(merged.rank, c.merged_rank);
  }
  // Slices keep their offset and steps.
  const Dims xd{4, 6, 5};
  const auto x = iota_tensor(xd);
  Dims od;
  const auto want = plain_slice(x, xd, {1, 0}, {3, 5}, {0, 2}, {1, 2}, od);
  const ops::StridedCopy copy = slice_copy(xd, od, Dims{1, 0}, Dims{0, 2}, Dims{1, 2});
  expect_same(run(ops::merged_axes(copy), x, od), want, "merged slice");
  // Concat parts written into a whole along an inner axis.
  const Dims whole{2, 7, 3}, a{2, 4, 3}, b{2, 3, 3};
  const std::vector<Dims> parts = {a, b};
  std::vector<float> out = poisoned(whole);
  const std::vector<std::vector<float>> inputs = {iota_tensor(a), iota_tensor(b, 100.0f)};
  for (const PartCopy& p : concat_split_copies(true, whole, parts, 1))
    emulate(inputs[p.part], out, ops::merged_axes(p.copy));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 7; ++j)
      for (std::int64_t k = 0; k < 3; ++k) {
        const float expected = j < 4 ? inputs[0][static_cast<std::size_t>((i * 4 + j) * 3 + k)]
                                     : inputs[1][static_cast<std::size_t>((i * 3 + j - 4) * 3 + k)];
        ASSERT_EQ(out[static_cast<std::size_t>((i * 7 + j) * 3 + k)], expected);
      }
}

}  // namespace
}  // namespace voxrt::backends::cuda
