// The CUDA attention kernels' decisions and softmax logic, checked on the CPU (no device): the
// launch plans of attention_launch.h, the strides attention_shape() reads from dims, and the
// online softmax of attention_math.h (the code the kernels run) driven through the same tiling
// as the tiled and tensor-core kernels (rows in blocks, keys in tiles, tiles past the causal
// horizon skipped) and the split-keys kernel (keys split over blocks, four warps a block taking
// every fourth key, partials merged), against the CPU backend's reference Attention kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backends/cuda/attention_host.h"
#include "backends/cuda/attention_math.h"
#include "unit/attention/attention_test_support.h"

namespace voxrt {
namespace {

namespace cuda = backends::cuda;
namespace ops = backends::cuda::ops;
using attention_test::AttentionCase;

AttentionCase make_case(std::mt19937& rng, Dims q, Dims k, Dims v) {
  AttentionCase c;
  c.q = attention_test::random_f32(q, rng, -2.0f, 2.0f);
  c.k = attention_test::random_f32(k, rng, -2.0f, 2.0f);
  c.v = attention_test::random_f32(v, rng);
  return c;
}

std::vector<cuda::DevTensor> operands(const AttentionCase& c) {
  std::vector<cuda::DevTensor> in;
  for (const Tensor* t : {&c.q, &c.k, &c.v})
    in.push_back(cuda::DevTensor{const_cast<void*>(t->raw_data()), t->dtype(), t->dims()});
  in.push_back(c.mask ? cuda::DevTensor{const_cast<void*>(c.mask->raw_data()), c.mask->dtype(),
                                        c.mask->dims()}
                      : cuda::DevTensor{});
  in.push_back(c.bias ? cuda::DevTensor{const_cast<void*>(c.bias->raw_data()), c.bias->dtype(),
                                        c.bias->dims()}
                      : cuda::DevTensor{});
  return in;
}

cuda::AttentionShape shape_of(const AttentionCase& c) {
  attention_test::SingleNode single = attention_test::make_attention_node(c);
  auto params = ir::attention_params(*single.node);
  EXPECT_TRUE(params) << params.status().message();
  auto shape =
      cuda::attention_shape("test", *params, operands(c), c.mask.has_value(), c.bias.has_value());
  EXPECT_TRUE(shape) << shape.status().message();
  return *shape;
}

const float* row_of(const float* base, const std::int64_t (&stride)[3], std::int64_t b,
                    std::int64_t h, std::int64_t row) {
  return base + b * stride[0] + h * stride[1] + row * stride[2];
}

float scaled_dot(const cuda::AttentionShape& s, const AttentionCase& c, std::int64_t b,
                 std::int64_t h, std::int64_t i, std::int64_t j) {
  const float* q = row_of(c.q.data<float>(), s.q_stride, b, h, i);
  const float* k = row_of(c.k.data<float>(), s.k_stride, b, h / (s.heads / s.kv_heads), j);
  float dot = 0.0f;
  for (std::int64_t d = 0; d < s.key_dim; ++d) dot += q[d] * k[d];
  return s.scale * dot;
}

float score(const cuda::AttentionShape& s, const AttentionCase& c, std::int64_t b, std::int64_t h,
            std::int64_t i, std::int64_t j) {
  return ops::modified_score(s, scaled_dot(s, c, b, h, i, j), b, h, i, j,
                             c.mask ? c.mask->raw_data() : nullptr,
                             c.bias ? c.bias->data<float>() : nullptr);
}

const float* value_row(const cuda::AttentionShape& s, const AttentionCase& c, std::int64_t b,
                       std::int64_t h, std::int64_t j) {
  return row_of(c.v.data<float>(), s.v_stride, b, h / (s.heads / s.kv_heads), j);
}

Tensor output_like(const AttentionCase& c) {
  attention_test::SingleNode single = attention_test::make_attention_node(c);
  const auto params = *ir::attention_params(*single.node);
  const auto d = *ir::attention_dims("test", params.layout, c.q.dims(), c.k.dims(), c.v.dims());
  return Tensor::zeros(DType::kF32, ir::attention_output_dims(d, params.layout));
}

// The tiled kernels' loop: blocks of `rows` query rows, keys in tiles of `key_tile`, every row's
// softmax updated once per tile with the tile's maximum.
Tensor emulate_tiled(const AttentionCase& c, int rows, int key_tile) {
  const cuda::AttentionShape s = shape_of(c);
  Tensor out = output_like(c);
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t h = 0; h < s.heads; ++h) {
      for (std::int64_t i0 = 0; i0 < s.q_len; i0 += rows) {
        const std::int64_t last_row = std::min<std::int64_t>(i0 + rows, s.q_len) - 1;
        const std::int64_t key_end = std::min(s.kv_len, ops::causal_key_limit(s, last_row));
        for (std::int64_t i = i0; i <= last_row; ++i) {
          ops::OnlineSoftmax state;
          std::vector<float> acc(static_cast<std::size_t>(s.value_dim), 0.0f);
          for (std::int64_t j0 = 0; j0 < key_end; j0 += key_tile) {
            std::vector<float> tile;
            float tile_max = -INFINITY;
            for (std::int64_t j = j0; j < j0 + key_tile; ++j) {
              const float v = j < s.kv_len ? score(s, c, b, h, i, j) : -INFINITY;
              tile.push_back(v);
              tile_max = std::fmax(tile_max, v);
            }
            float shift;
            const float alpha = state.rescale(tile_max, shift);
            for (float& a : acc) a *= alpha;
            for (std::int64_t jj = 0; jj < key_tile; ++jj) {
              const float p = ops::OnlineSoftmax::p(tile[static_cast<std::size_t>(jj)], shift);
              state.l += p;
              if (j0 + jj >= s.kv_len) continue;  // zero rows in the kernel's tile
              const float* v = value_row(s, c, b, h, j0 + jj);
              for (std::int64_t d = 0; d < s.value_dim; ++d)
                acc[static_cast<std::size_t>(d)] += p * v[d];
            }
          }
          float* o = const_cast<float*>(row_of(out.data<float>(), s.out_stride, b, h, i));
          for (std::int64_t d = 0; d < s.value_dim; ++d)
            o[d] = state.finish(acc[static_cast<std::size_t>(d)]);
        }
      }
    }
  }
  return out;
}

// The split-keys kernel: per row, the plan's key ranges; in each, four warps take every fourth
// key with a softmax of their own, merged in the block, then the ranges merged by the combine
// launch.
Tensor emulate_split(const AttentionCase& c, int sm_count) {
  const cuda::AttentionShape s = shape_of(c);
  const cuda::AttentionPlan plan =
      cuda::attention_plan(cuda::AttentionKernel::kSplitKeys, s, sm_count);
  EXPECT_TRUE(plan.takes) << plan.why_not;
  Tensor out = output_like(c);
  struct Partial {
    float m, l;
    std::vector<float> acc;
  };
  const auto merge = [&](const std::vector<Partial>& parts) {
    Partial merged{-INFINITY, 0.0f,
                   std::vector<float>(static_cast<std::size_t>(s.value_dim), 0.0f)};
    for (const Partial& p : parts) merged.m = std::fmax(merged.m, p.m);
    for (const Partial& p : parts) {
      const float w = ops::partial_weight(p.m, merged.m);
      merged.l += p.l * w;
      for (std::size_t d = 0; d < merged.acc.size(); ++d) merged.acc[d] += p.acc[d] * w;
    }
    return merged;
  };
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t h = 0; h < s.heads; ++h) {
      for (std::int64_t i = 0; i < s.q_len; ++i) {
        std::vector<Partial> splits;
        for (std::int64_t split = 0; split < plan.splits; ++split) {
          const std::int64_t begin = split * plan.keys_per_split;
          const std::int64_t end = std::min(std::min(s.kv_len, begin + plan.keys_per_split),
                                            ops::causal_key_limit(s, i));
          std::vector<Partial> warps;
          for (int w = 0; w < 4; ++w) {
            ops::OnlineSoftmax state;
            std::vector<float> acc(static_cast<std::size_t>(s.value_dim), 0.0f);
            for (std::int64_t j = begin + w; j < end; j += 4) {
              const float v = score(s, c, b, h, i, j);
              float shift;
              const float alpha = state.rescale(v, shift);
              const float p = ops::OnlineSoftmax::p(v, shift);
              state.l += p;
              const float* vr = value_row(s, c, b, h, j);
              for (std::int64_t d = 0; d < s.value_dim; ++d)
                acc[static_cast<std::size_t>(d)] =
                    acc[static_cast<std::size_t>(d)] * alpha + p * vr[d];
            }
            warps.push_back(Partial{state.m, state.l, acc});
          }
          splits.push_back(merge(warps));
        }
        const Partial total = merge(splits);
        float* o = const_cast<float*>(row_of(out.data<float>(), s.out_stride, b, h, i));
        for (std::int64_t d = 0; d < s.value_dim; ++d)
          o[d] = total.m == -INFINITY ? NAN : total.acc[static_cast<std::size_t>(d)] / total.l;
      }
    }
  }
  return out;
}

// Every emulated kernel against the CPU reference kernel; NaN rows must match NaN rows.
void expect_kernels_match(const AttentionCase& c, const std::string& name) {
  SCOPED_TRACE(name);
  auto reference = attention_test::run_attention(c, backends::kReferenceTactic);
  ASSERT_TRUE(reference) << reference.status().message();
  for (auto [rows, tile] : {std::pair{16, 32}, std::pair{32, 64}, std::pair{64, 64}}) {
    SCOPED_TRACE(str_cat("rows ", rows, ", key tile ", tile));
    EXPECT_TRUE(attention_test::all_close(emulate_tiled(c, rows, tile), *reference, 1e-5, 1e-6));
  }
  const cuda::AttentionShape s = shape_of(c);
  if (s.q_len <= cuda::kSplitKeysMaxRows) {
    for (int sms : {1, 8, 132}) {
      SCOPED_TRACE(str_cat("split keys over ", sms, " multiprocessors"));
      EXPECT_TRUE(attention_test::all_close(emulate_split(c, sms), *reference, 1e-5, 1e-6));
    }
  }
}

TEST(CudaAttentionMath, TiledAndSplitSoftmaxMatchTheReference) {
  std::mt19937 rng(7);
  {
    AttentionCase c = make_case(rng, {2, 4, 16, 64}, {2, 4, 80, 64}, {2, 4, 80, 64});
    expect_kernels_match(c, "streaming chunk: 16 queries, 64 cached + 16 keys");
  }
  {
    AttentionCase c = make_case(rng, {1, 3, 1, 32}, {1, 3, 150, 32}, {1, 3, 150, 48});
    expect_kernels_match(c, "decoder step, Dk != Dv");
  }
  {
    // A bool mask with whole rows false: NaN with mask_fill -inf, the mean of V with -1e4.
    AttentionCase c = make_case(rng, {2, 2, 5, 16}, {2, 2, 70, 16}, {2, 2, 70, 16});
    Tensor mask = attention_test::random_bool({2, 1, 5, 70}, rng, 0.6);
    for (std::int64_t j = 0; j < 70; ++j) {
      mask.data<bool>()[1 * 70 + j] = false;        // batch 0, row 1
      mask.data<bool>()[(5 + 4) * 70 + j] = false;  // batch 1, row 4
      mask.data<bool>()[3 * 70 + j] = j >= 65;      // batch 0, row 3: only the last tile
    }
    c.mask = mask;
    expect_kernels_match(c, "bool mask, fully masked rows, mask_fill -inf");
    c.attrs.set("mask_fill", -1e4f);
    expect_kernels_match(c, "bool mask, fully masked rows, mask_fill -1e4");
  }
  {
    AttentionCase c = make_case(rng, {1, 2, 6, 32}, {1, 2, 40, 32}, {1, 2, 40, 32});
    Tensor mask = attention_test::random_f32({6, 40}, rng);
    for (std::int64_t j = 0; j < 40; ++j) mask.data<float>()[2 * 40 + j] = -INFINITY;
    mask.data<float>()[4 * 40 + 39] = -INFINITY;
    c.mask = mask;
    c.bias = attention_test::random_f32({1, 2, 6, 40}, rng);
    expect_kernels_match(c, "float mask with -inf, relative-position bias");
  }
  {
    AttentionCase c = make_case(rng, {1, 2, 50, 16}, {1, 2, 20, 16}, {1, 2, 20, 16});
    c.attrs.set("causal", std::int64_t{1});
    expect_kernels_match(c, "causal, more queries than keys (the first 30 rows see none)");
    AttentionCase d = make_case(rng, {1, 1, 20, 16}, {1, 1, 150, 16}, {1, 1, 150, 16});
    d.attrs.set("causal", std::int64_t{1});
    expect_kernels_match(d, "causal over a cache (tiles past the horizon skipped)");
    // The last row's horizon is key 32, the first key of the second 32-key tile.
    AttentionCase e = make_case(rng, {1, 1, 16, 16}, {1, 1, 33, 16}, {1, 1, 33, 16});
    e.attrs.set("causal", std::int64_t{1});
    expect_kernels_match(e, "causal, a horizon on a tile's first key");
    AttentionCase f = make_case(rng, {1, 2, 4, 16}, {1, 2, 100, 16}, {1, 2, 100, 16});
    f.attrs.set("causal", std::int64_t{1});
    expect_kernels_match(f, "causal decoder rows with split keys");
  }
  {
    AttentionCase c = make_case(rng, {2, 8, 3, 64}, {2, 2, 33, 64}, {2, 2, 33, 64});
    expect_kernels_match(c, "grouped-query attention, 8 heads over 2");
  }
  {
    AttentionCase c = make_case(rng, {2, 7, 3, 32}, {2, 9, 3, 32}, {2, 9, 3, 32});
    c.attrs.set("qkv_layout", std::int64_t{1});
    c.attrs.set("scale", 0.3f);
    expect_kernels_match(c, "sequence-major layout, explicit scale");
  }
  {
    AttentionCase c = make_case(rng, {1, 2, 4, 16}, {1, 2, 0, 16}, {1, 2, 0, 16});
    expect_kernels_match(c, "no keys: NaN rows");
  }
}

TEST(CudaAttentionPlan, KernelsTakeTheShapesTheyAreMadeFor) {
  cuda::AttentionShape s;
  s.batch = 256;
  s.heads = s.kv_heads = 4;
  s.q_len = 16;
  s.kv_len = 80;
  s.key_dim = s.value_dim = 64;
  using K = cuda::AttentionKernel;
  const auto p16 = cuda::attention_plan(K::kMmaRows16, s, 132);
  ASSERT_TRUE(p16.takes);
  EXPECT_EQ(p16.blocks, 256 * 4);  // one 16-row block per (batch, head)
  EXPECT_EQ(p16.threads, 32);
  const auto p64 = cuda::attention_plan(K::kMmaRows64, s, 132);
  EXPECT_EQ(p64.blocks, 256 * 4);
  EXPECT_EQ(p64.threads, 128);
  // Whisper encoder: 1500 queries, 12 heads of 64.
  s.batch = 1;
  s.heads = s.kv_heads = 12;
  s.q_len = s.kv_len = 1500;
  EXPECT_EQ(cuda::attention_plan(K::kMmaRows64, s, 132).blocks, 12 * 24);
  EXPECT_FALSE(cuda::attention_plan(K::kSplitKeys, s, 132).takes);
  // The pipelined kernels: 128-row blocks with 8 warps; scratch holds K and V rounded to 16 bits,
  // 1500 keys padded to 1536 (24 tiles of 64).
  const auto pipelined = cuda::attention_plan(K::kMmaPipelinedRows128, s, 132);
  ASSERT_TRUE(pipelined.takes);
  EXPECT_EQ(pipelined.blocks, 12 * 12);
  EXPECT_EQ(pipelined.threads, 256);
  EXPECT_EQ(pipelined.key_tile, 64);
  EXPECT_EQ(pipelined.scratch_bytes, 2 * 2 * 12 * 1536 * 64);
  EXPECT_EQ(pipelined.shared_bytes, 2 * 2 * 2 * 64 * 72);
  // Every tensor-core tile fits the default 48 KiB of shared memory at the largest head dim.
  for (std::int64_t d : {32, 64, 128}) {
    s.key_dim = s.value_dim = d;
    for (K k : {K::kMmaRows16, K::kMmaRows32, K::kMmaRows64, K::kMmaPipelinedRows64,
                K::kMmaPipelinedRows128}) {
      const auto p = cuda::attention_plan(k, s, 132);
      ASSERT_TRUE(p.takes) << d;
      EXPECT_LE(p.shared_bytes, 48 * 1024) << d;
    }
  }
  for (std::int64_t d : {16, 80, 96, 256}) {
    s.key_dim = s.value_dim = d;
    EXPECT_FALSE(cuda::attention_plan(K::kMmaRows64, s, 132).takes) << d;
    EXPECT_TRUE(cuda::attention_plan(K::kSimtTiled, s, 132).takes) << d;
  }
  s.key_dim = 64;
  s.value_dim = 32;
  EXPECT_FALSE(cuda::attention_plan(K::kMmaRows16, s, 132).takes) << "Dk != Dv";
  // Decoder step: 1 query, 1500 keys, 12 heads: at least two waves of blocks over 132 SMs.
  s.value_dim = 64;
  s.q_len = 1;
  const auto split = cuda::attention_plan(K::kSplitKeys, s, 132);
  ASSERT_TRUE(split.takes);
  EXPECT_GE(split.blocks, 2 * 132 - 12);
  EXPECT_GE(split.keys_per_split * split.splits, s.kv_len);
  EXPECT_GE(split.keys_per_split, 64);
  EXPECT_EQ(split.scratch_bytes, 4 * 12 * split.splits * (2 + 64));
  // At batch 16 there are rows enough: fewer splits, never fewer than one.
  s.batch = 16;
  EXPECT_LT(cuda::attention_plan(K::kSplitKeys, s, 132).splits, split.splits);
  s.kv_len = 0;
  EXPECT_EQ(cuda::attention_plan(K::kSplitKeys, s, 132).splits, 1);
  s.heads = 6;
  s.kv_heads = 4;
  EXPECT_FALSE(cuda::attention_plan(K::kReference, s, 132).takes) << "6 heads over 4";
}

TEST(CudaAttentionPlan, StridesFollowTheLayoutAndTheMaskBroadcast) {
  std::mt19937 rng(3);
  AttentionCase c = make_case(rng, {2, 5, 3, 8}, {2, 5, 1, 8}, {2, 5, 1, 4});  // [B, S, H, D]
  c.attrs.set("qkv_layout", std::int64_t{1});
  c.mask = attention_test::random_bool({5, 1}, rng, 0.5);  // [Sq, 1] -> broadcast over B, H, Sk
  const cuda::AttentionShape s = shape_of(c);
  EXPECT_EQ(s.heads, 3);
  EXPECT_EQ(s.kv_heads, 1);
  EXPECT_EQ(s.q_len, 5);
  EXPECT_EQ(s.q_stride[0], 5 * 3 * 8);
  EXPECT_EQ(s.q_stride[1], 8);      // next head: next D block of a row
  EXPECT_EQ(s.q_stride[2], 3 * 8);  // next position: a whole row of heads
  EXPECT_EQ(s.v_stride[2], 1 * 4);
  EXPECT_EQ(s.out_stride[2], 3 * 4);
  EXPECT_EQ(s.mask, cuda::AttentionMask::kBool);
  EXPECT_EQ(s.mask_stride[0], 0);
  EXPECT_EQ(s.mask_stride[1], 0);
  EXPECT_EQ(s.mask_stride[2], 1);
  EXPECT_EQ(s.mask_stride[3], 0);
  EXPECT_NEAR(s.scale, 1.0f / std::sqrt(8.0f), 1e-7);
  c.mask = attention_test::random_bool({2, 2}, rng, 0.5);  // does not broadcast to [2,3,5,1]
  attention_test::SingleNode single = attention_test::make_attention_node(c);
  auto bad = cuda::attention_shape("node 'a'", *ir::attention_params(*single.node), operands(c),
                                   true, false);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("does not broadcast"), std::string::npos);
}

}  // namespace
}  // namespace voxrt
