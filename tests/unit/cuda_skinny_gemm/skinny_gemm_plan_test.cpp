// skinny_gemm_plan: the split of k over blocks that the skinny GEMM kernel runs with.
#include <gtest/gtest.h>

#include "backends/cuda/cuda_ops.h"

namespace voxrt {
namespace {

namespace ops = backends::cuda::ops;

TEST(CudaSkinnyGemmPlan, SplitsCoverEveryKOnceInWholeChunks) {
  for (std::int64_t m : {1, 7, 16}) {
    for (std::int64_t n : {2, 94, 256, 1024, 2304, 51866}) {
      for (std::int64_t k : {0, 1, 63, 64, 65, 256, 1000, 4096}) {
        for (int sms : {1, 16, 132}) {
          SCOPED_TRACE(testing::Message() << m << " x " << k << " x " << n << " on " << sms);
          const ops::SkinnyGemm g = ops::skinny_gemm_plan(m, n, k, sms);
          ASSERT_TRUE(ops::skinny_gemm_takes(g));
          EXPECT_EQ(g.k_per_split % ops::kSkinnyChunk, 0);
          EXPECT_GE(g.k_per_split * g.splits, k);
          // No split starts past the end: each has k to sum (or the single one of k = 0).
          if (k > 0) {
            EXPECT_LT((g.splits - 1) * g.k_per_split, k);
          }
          EXPECT_GE(g.splits, 1);
          const std::int64_t tiles = ops::skinny_gemm_tiles(g);
          EXPECT_EQ(tiles, (n + 63) / 64);
          // Never more splits than chunks of k; at least half the splits two waves of blocks
          // would ask for, where k has chunks enough (rounding the chunks per split up can
          // lower the count, never below half).
          const std::int64_t chunks = std::max<std::int64_t>(1, (k + 63) / 64);
          EXPECT_LE(g.splits, chunks);
          const std::int64_t wanted = std::min(chunks, (2 * sms + tiles - 1) / tiles);
          EXPECT_GE(2 * g.splits, wanted);
        }
      }
    }
  }
  // The Conformer's 256 -> 1024 projection at batch 1 on an H100: 16 tiles x 4 splits of 64 k.
  const ops::SkinnyGemm ff = ops::skinny_gemm_plan(16, 1024, 256, 132);
  EXPECT_EQ(ff.splits, 4);
  EXPECT_EQ(ff.k_per_split, 64);
  // The decoder's output projection (768 -> 51865 + 1): 811 tiles, enough blocks without splits.
  EXPECT_EQ(ops::skinny_gemm_plan(1, 51866, 768, 132).splits, 1);
  EXPECT_FALSE(ops::skinny_gemm_takes(ops::SkinnyGemm{17, 64, 64, 1, 64}));
  EXPECT_FALSE(ops::skinny_gemm_takes(ops::SkinnyGemm{1, 63, 64, 1, 64}));
}

}  // namespace
}  // namespace voxrt
