// Every recurrent tactic against the reference kernel on random inputs, across the attributes
// PyTorch and ONNX's node tests use.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>

#include <unistd.h>

#include "backends/cpu/recurrent/recurrent_kernels.h"
#include "backends/layer_precision.h"
#include "unit/recurrent/recurrent_harness.h"

namespace voxrt::recurrent_test {
namespace {

using backends::TacticId;

// Tolerance: different summation orders and vector exp/tanh differ in the last bits, and
// errors compound over steps; 1e-4 relative is far below any real mistake (a wrong gate, bias
// or step gives errors of order 1e-1).
constexpr double kAtol = 2e-5, kRtol = 1e-4;

// Names of the tactics that some case compared with the reference (checked at the end, so a
// tactic that silently stopped offering itself fails the suite).
std::set<std::string>& tested_tactics() {
  static std::set<std::string> names;
  return names;
}

void expect_tactics_match_reference(const RecurrentCase& c, const std::vector<int>& thread_counts) {
  RecurrentFixture fixture;
  build_fixture(c, fixture);
  auto reference = run_tactic(fixture, 0, 1);
  ASSERT_TRUE(reference.has_value()) << c.describe() << ": " << reference.status().to_string();
  const auto tactics = backends::cpu::tactics_for(*fixture.node);
  ASSERT_GE(tactics.size(), 2u) << c.describe();
  EXPECT_EQ(tactics[0].name, "reference");
  for (const auto& tactic : tactics) {
    if (tactic.id == 0) continue;
    tested_tactics().insert(tactic.name);
    for (int threads : thread_counts) {
      auto result = run_tactic(fixture, tactic.id, threads);
      ASSERT_TRUE(result.has_value())
          << c.describe() << " tactic " << tactic.name << ": " << result.status().to_string();
      for (std::size_t i = 0; i < reference->size(); ++i) {
        if (!(*reference)[i].is_valid()) continue;
        EXPECT_LE(worst_error_ratio((*result)[i], (*reference)[i], kAtol, kRtol), 1.0)
            << c.describe() << " tactic " << tactic.name << " threads " << threads << " output "
            << i;
      }
    }
  }
}

// The cross product of cell, direction, batch and hidden size, with the optional features
// rotating through it so that each appears with every cell and direction.
TEST(RecurrentTactics, MatchReferenceAcrossAttributes) {
  const ir::OpKind ops[] = {ir::OpKind::kRNN, ir::OpKind::kGRU, ir::OpKind::kLSTM};
  const char* directions[] = {"forward", "reverse", "bidirectional"};
  const std::int64_t batches[] = {1, 3};
  const std::int64_t hiddens[] = {1, 7, 64};
  std::uint32_t index = 0;
  for (ir::OpKind op : ops) {
    for (const char* direction : directions) {
      for (std::int64_t batch : batches) {
        for (std::int64_t hidden : hiddens) {
          RecurrentCase c;
          c.op = op;
          c.direction = direction;
          c.batch = batch;
          c.hidden = hidden;
          c.input = 3 + index % 11;
          c.seq = 2 + index % 6;
          c.seed = 100 + index;
          c.bias = index % 4 != 3;
          c.initial_states = index % 3 != 0;
          if (index % 5 == 1 || index % 5 == 3) {
            c.lengths.assign(static_cast<std::size_t>(batch), static_cast<std::int32_t>(c.seq));
            if (batch > 1) c.lengths[1] = 1;  // ragged: entry 1 stops early
            if (index % 5 == 3) c.lengths[0] = static_cast<std::int32_t>(c.seq) - 1;
          }
          c.peepholes = op == ir::OpKind::kLSTM && index % 2 == 0;
          if (index % 7 == 2) c.clip = 0.7f;
          c.layout = index % 4 == 1 ? 1 : 0;
          c.linear_before_reset = index % 2;
          c.all_outputs = index % 6 != 5;
          expect_tactics_match_reference(c, {1, 2});
          ++index;
        }
      }
    }
  }
}

TEST(RecurrentTactics, GruLinearBeforeResetBothWaysEveryDirection) {
  std::uint32_t seed = 500;
  for (const char* direction : {"forward", "reverse", "bidirectional"}) {
    for (int lbr : {0, 1}) {
      RecurrentCase c;
      c.direction = direction;
      c.linear_before_reset = lbr;
      c.hidden = 33;
      c.input = 19;
      c.seq = 9;
      c.batch = 5;
      c.initial_states = true;
      c.lengths = {9, 4, 0, 9, 7};  // includes an empty sequence
      c.seed = seed++;
      expect_tactics_match_reference(c, {1, 2, 3});
    }
  }
}

TEST(RecurrentTactics, LargerLayersAndThreadCounts) {
  // Shapes like the DS2 layers, shortened in time; several unit blocks per thread.
  RecurrentCase gru;
  gru.hidden = 96;
  gru.input = 131;
  gru.seq = 12;
  gru.batch = 2;
  gru.linear_before_reset = 1;
  gru.seed = 900;
  expect_tactics_match_reference(gru, {1, 2, 4});
  RecurrentCase lstm = gru;
  lstm.op = ir::OpKind::kLSTM;
  lstm.direction = "bidirectional";
  lstm.seed = 901;
  expect_tactics_match_reference(lstm, {1, 2, 3});
}

TEST(RecurrentTactics, ProjectionInSeveralSlices) {
  // The packed tactics split the input projection into slices of about 1 MiB of W: 300 inputs x
  // 4 gates x 8 lanes x 4 bytes = 37.5 KiB per unit block gives slices of 27 blocks, so the
  // 33 blocks of 260 units make a full slice and a partial one (on one thread), with the bias and
  // the output offset of each slice in play; more threads cut the range elsewhere.
  RecurrentCase lstm;
  lstm.op = ir::OpKind::kLSTM;
  lstm.direction = "bidirectional";
  lstm.hidden = 260;
  lstm.input = 300;
  lstm.seq = 5;
  lstm.batch = 2;
  lstm.seed = 940;
  expect_tactics_match_reference(lstm, {1, 2, 3});
  RecurrentCase gru = lstm;
  gru.op = ir::OpKind::kGRU;
  gru.direction = "forward";
  gru.input = 700;  // 65.6 KiB per block: slices of 15 blocks
  gru.linear_before_reset = 1;
  gru.seed = 941;
  expect_tactics_match_reference(gru, {1, 2});
}

TEST(RecurrentTactics, OversubscribedThreadsStealBlocks) {
  // More threads than cores and odd block counts: the packed tactic's threads steal blocks from
  // each other and sleep when a step waits long; long sequences make many phases of both GRU
  // forms (one and two phases per step) and of a bidirectional LSTM.
  std::uint32_t seed = 950;
  for (int lbr : {0, 1}) {
    RecurrentCase gru;
    gru.hidden = 41;  // 6 unit blocks, the last one partial
    gru.input = 7;
    gru.seq = 64;
    gru.batch = 1;
    gru.linear_before_reset = lbr;
    gru.initial_states = true;
    gru.seed = seed++;
    expect_tactics_match_reference(gru, {2, 5, 8});
  }
  RecurrentCase lstm;
  lstm.op = ir::OpKind::kLSTM;
  lstm.direction = "bidirectional";
  lstm.hidden = 17;
  lstm.input = 5;
  lstm.seq = 40;
  lstm.batch = 3;
  lstm.lengths = {40, 13, 1};
  lstm.seed = seed++;
  expect_tactics_match_reference(lstm, {3, 7});
}

TEST(RecurrentTactics, LstmInputForgetAndPeepholes) {
  for (const char* direction : {"forward", "bidirectional"}) {
    RecurrentCase c;
    c.op = ir::OpKind::kLSTM;
    c.direction = direction;
    c.input_forget = 1;
    c.peepholes = true;
    c.initial_states = true;
    c.hidden = 13;
    c.seed = 42;
    expect_tactics_match_reference(c, {1, 2});
  }
}

TEST(RecurrentTactics, NonDefaultActivations) {
  struct Acts {
    ir::OpKind op;
    std::vector<std::string> names;
    std::vector<float> alpha, beta;
  };
  const std::vector<Acts> cases = {
      {ir::OpKind::kRNN, {"Relu"}, {}, {}},
      {ir::OpKind::kRNN, {"LeakyRelu", "Elu"}, {0.1f, 0.7f}, {}},
      {ir::OpKind::kRNN, {"Softsign"}, {}, {}},
      {ir::OpKind::kRNN, {"ThresholdedRelu"}, {0.05f}, {}},
      {ir::OpKind::kGRU, {"HardSigmoid", "ScaledTanh"}, {0.3f, 0.9f}, {0.4f, 1.2f}},
      {ir::OpKind::kGRU, {"Sigmoid", "Softplus"}, {}, {}},
      {ir::OpKind::kLSTM, {"HardSigmoid", "Affine", "Tanh"}, {0.25f, 0.5f}, {0.5f, 0.1f}},
      {ir::OpKind::kLSTM, {"Sigmoid", "Elu", "Softsign"}, {0.9f}, {}},
  };
  std::uint32_t seed = 700;
  for (const Acts& acts : cases) {
    RecurrentCase c;
    c.op = acts.op;
    c.direction =
        acts.names.size() == 2 && acts.op == ir::OpKind::kRNN ? "bidirectional" : "forward";
    c.activations = acts.names;
    c.activation_alpha = acts.alpha;
    c.activation_beta = acts.beta;
    c.hidden = 11;
    c.initial_states = true;
    c.seed = seed++;
    expect_tactics_match_reference(c, {1, 2});
  }
}

TEST(RecurrentTactics, WeightsKnownOnlyAtRunTime) {
  // ONNX's node tests feed W, R and B as graph inputs: kernels must pack them per call.
  for (ir::OpKind op : {ir::OpKind::kGRU, ir::OpKind::kLSTM, ir::OpKind::kRNN}) {
    RecurrentCase c;
    c.op = op;
    c.direction = "bidirectional";
    c.constant_weights = false;
    c.initial_states = true;
    c.peepholes = true;
    c.seed = 77;
    expect_tactics_match_reference(c, {1, 2});
  }
}

// One kernel, two callers at once (two ExecutionContexts of one engine), each with its own pool
// and its own batch size, so the oneDNN per-shape cache is filled concurrently too.
TEST(RecurrentTactics, OneKernelServesConcurrentCallers) {
  for (ir::OpKind op : {ir::OpKind::kGRU, ir::OpKind::kLSTM}) {
    RecurrentCase small, large;
    small.op = large.op = op;
    small.direction = large.direction = "bidirectional";
    small.linear_before_reset = large.linear_before_reset = 1;
    small.hidden = large.hidden = 24;
    small.batch = 1;
    large.batch = 4;
    small.seed = 31;
    large.seed = 32;
    RecurrentFixture fixtures[2];
    build_fixture(small, fixtures[0]);
    // The kernel holds fixture 0's weights: give fixture 1 the same W, R, B.
    build_fixture(
        large, fixtures[1],
        {std::nullopt, fixtures[0].inputs[1], fixtures[0].inputs[2], fixtures[0].inputs[3]});
    std::vector<Tensor> expected[2];
    for (int i = 0; i < 2; ++i) {
      auto reference = run_tactic(fixtures[i], 0, 1);
      ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
      expected[i] = *reference;
    }
    for (const auto& tactic : backends::cpu::tactics_for(*fixtures[0].node)) {
      auto kernel = backends::cpu::create_kernel(*fixtures[0].node, tactic.id);
      ASSERT_TRUE(kernel.has_value()) << kernel.status().to_string();
      double worst[2] = {0.0, 0.0};
      auto caller = [&](int i) {
        const RecurrentFixture& f = fixtures[i];
        std::vector<const Tensor*> inputs;
        for (const auto& in : f.inputs) inputs.push_back(in ? &*in : nullptr);
        std::vector<Tensor> results;
        for (const Tensor& e : expected[i]) results.push_back(Tensor::zeros(DType::kF32, e.dims()));
        std::vector<Tensor*> outputs;
        for (Tensor& r : results) outputs.push_back(&r);
        ThreadPool pool(2);
        backends::KernelContext context{&pool};
        for (int repeat = 0; repeat < 20; ++repeat) {
          if (!(*kernel)->run(inputs, outputs, context).is_ok()) worst[i] = INFINITY;
          for (std::size_t o = 0; o < results.size(); ++o) {
            worst[i] =
                std::max(worst[i], worst_error_ratio(results[o], expected[i][o], kAtol, kRtol));
          }
        }
      };
      std::thread first(caller, 0), second(caller, 1);
      first.join();
      second.join();
      EXPECT_LE(worst[0], 1.0) << tactic.name;
      EXPECT_LE(worst[1], 1.0) << tactic.name;
    }
  }
}

long resident_mib() {
  long pages_total = 0, pages_resident = 0;
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (!statm) return -1;
  const int read = std::fscanf(statm, "%ld %ld", &pages_total, &pages_resident);
  std::fclose(statm);
  return read == 2 ? pages_resident * sysconf(_SC_PAGESIZE) / (1 << 20) : -1;
}

// A streaming server runs a layer at many shapes (each batch size, each final chunk's length).
// The kernels keep a primitive per shape, but the weights reordered for it must be shared: a
// copy per shape (3-6 MB for this layer) grew the server by ~19 MB a stream the first time its
// streams ended mid-utterance (the hostile soak, docs/perf/server.md).
TEST(RecurrentTactics, ShapesShareTheReorderedWeights) {
  RecurrentCase base;
  base.op = ir::OpKind::kGRU;
  base.linear_before_reset = 1;
  base.hidden = 512;
  base.input = 512;
  RecurrentFixture first;
  base.seq = 1;
  base.batch = 1;
  build_fixture(base, first);
  // Inputs and outputs of 15 shapes made first, so that only the kernel allocates while
  // resident memory is measured. 15: below the oneDNN tactic's cache of 16 shapes, so no
  // eviction hides a copy.
  struct Shape {
    RecurrentFixture fixture;
    std::vector<Tensor> outputs;
  };
  std::vector<Shape> shapes(15);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    RecurrentCase c = base;
    c.seq = 1 + static_cast<std::int64_t>(i % 5);
    c.batch = 1 + static_cast<std::int64_t>(i / 5 * 3);
    build_fixture(c, shapes[i].fixture,
                  {std::nullopt, first.inputs[1], first.inputs[2], first.inputs[3]});
    shapes[i].outputs.push_back(Tensor::zeros(DType::kF32, {c.seq, 1, c.batch, c.hidden}));
    shapes[i].outputs.push_back(Tensor::zeros(DType::kF32, {1, c.batch, c.hidden}));
  }
  for (const auto& tactic : backends::cpu::tactics_for(*first.node)) {
    // "packed" shares its projection weights the same way, but at these sizes its RSS did not
    // show the copies (measured 0 MB before and after): the server probe is its check.
    if (tactic.name != "onednn") continue;
    auto kernel = backends::cpu::create_kernel(*first.node, tactic.id);
    ASSERT_TRUE(kernel.has_value()) << kernel.status().to_string();
    ThreadPool pool(1);
    backends::KernelContext context{&pool};
    long resident_after_first = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      std::vector<const Tensor*> inputs;
      for (const auto& in : shapes[i].fixture.inputs) inputs.push_back(in ? &*in : nullptr);
      std::vector<Tensor*> outputs;
      for (Tensor& out : shapes[i].outputs) outputs.push_back(&out);
      ASSERT_TRUE((*kernel)->run(inputs, outputs, context).is_ok()) << tactic.name;
      if (i == 0) resident_after_first = resident_mib();
    }
    // Measured: 89 MiB with a copy of W and R per shape, 13 MiB shared (primitives, scratch).
    const long growth_mib = resident_mib() - resident_after_first;
    EXPECT_LT(growth_mib, 40) << tactic.name << ": 14 more shapes of one 512x512 GRU layer";
  }
}

// The fp16 tactics (a layer the builder marked fp16) store R in FP16 and compute in FP32: their
// outputs must match the reference run on R rounded to FP16 as closely as the FP32 tactics match
// the reference, and be clearly nearer to it than to the reference on the exact R (which proves
// the rounding happened).
void expect_fp16_tactics_match_rounded_reference(const RecurrentCase& c,
                                                 const std::vector<int>& thread_counts) {
  RecurrentFixture exact;
  build_fixture(c, exact);
  Tensor rounded_r = exact.inputs[2]->clone();
  for (float& v : rounded_r.span<float>()) v = half_bits_to_float(float_to_half_bits(v));
  std::vector<std::optional<Tensor>> given(3);
  given[2] = rounded_r;
  RecurrentFixture rounded;
  build_fixture(c, rounded, given);
  auto reference_exact = run_tactic(exact, 0, 1);
  auto reference_rounded = run_tactic(rounded, 0, 1);
  ASSERT_TRUE(reference_exact && reference_rounded) << c.describe();

  exact.node->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kFp16));
  const auto tactics = backends::cpu::tactics_for(*exact.node);
  // The fp16 kernels come first (the reference on rounded R, then the packed ones); the FP32
  // kernels follow as candidates, compared with the exact reference elsewhere.
  std::size_t fp16_count = 0;
  while (fp16_count < tactics.size() && tactics[fp16_count].name.ends_with("_fp16")) ++fp16_count;
  ASSERT_EQ(fp16_count, c.directions() == 2 ? 4u : 3u) << c.describe();
  EXPECT_EQ(tactics[0].name, "reference_fp16");
  EXPECT_TRUE(std::any_of(tactics.begin(), tactics.end(),
                          [](const backends::TacticInfo& t) { return t.name == "packed"; }));
  for (const auto& tactic : tactics) {
    if (!tactic.name.ends_with("_fp16")) continue;
    tested_tactics().insert(tactic.name);
    for (int threads : thread_counts) {
      auto result = run_tactic(exact, tactic.id, threads);
      ASSERT_TRUE(result.has_value())
          << c.describe() << " tactic " << tactic.name << ": " << result.status().to_string();
      for (std::size_t i = 0; i < reference_rounded->size(); ++i) {
        const Tensor& want = (*reference_rounded)[i];
        if (!want.is_valid()) continue;
        const std::string where = c.describe() + " tactic " + tactic.name + " threads " +
                                  std::to_string(threads) + " output " + std::to_string(i);
        EXPECT_LE(worst_error_ratio((*result)[i], want, kAtol, kRtol), 1.0) << where;
        // FP16 weights are within 2^-11 relative of the exact ones: well inside 1e-2.
        EXPECT_LE(worst_error_ratio((*result)[i], (*reference_exact)[i], 1e-3, 1e-2), 1.0) << where;
        double off_rounded = 0, off_exact = 0;
        for (std::int64_t e = 0; e < want.element_count(); ++e) {
          const float got = (*result)[i].data<float>()[e];
          off_rounded += std::fabs(got - want.data<float>()[e]);
          off_exact += std::fabs(got - (*reference_exact)[i].data<float>()[e]);
        }
        EXPECT_LT(off_rounded * 4, off_exact) << where << ": R was not rounded to FP16";
        if (tactic.id == 0) {
          // The fp16 reference is the reference on rounded R, to the bit.
          EXPECT_EQ(std::memcmp((*result)[i].raw_data(), want.raw_data(), want.size_bytes()), 0)
              << where;
        }
      }
    }
  }
}

TEST(RecurrentTactics, Fp16WeightsMatchTheReferenceOnRoundedWeights) {
  std::uint32_t seed = 700;
  for (ir::OpKind op : {ir::OpKind::kGRU, ir::OpKind::kLSTM, ir::OpKind::kRNN}) {
    for (const char* direction : {"forward", "bidirectional"}) {
      for (std::int64_t batch : {1, 3}) {
        for (std::int64_t hidden : {7, 40}) {  // one padded block, odd depth; five blocks
          RecurrentCase c;
          c.op = op;
          c.direction = direction;
          c.batch = batch;
          c.hidden = hidden;
          c.input = 9;
          c.seq = 5;
          c.initial_states = true;
          c.peepholes = op == ir::OpKind::kLSTM;
          c.linear_before_reset = static_cast<int>(seed % 2);
          if (batch > 1) c.lengths = {5, 2, 4};
          c.seed = seed++;
          expect_fp16_tactics_match_rounded_reference(c, {1, 2});
        }
      }
    }
  }
}

TEST(RecurrentTactics, ZzEveryTacticWasCompared) {
  // Runs after the other RecurrentTactics tests (gtest keeps definition order within a file).
  EXPECT_TRUE(tested_tactics().count("blas"));
  EXPECT_TRUE(tested_tactics().count("onednn"));
  if (backends::cpu::recurrent::packed_available()) {
    EXPECT_TRUE(tested_tactics().count("packed"));
    EXPECT_TRUE(tested_tactics().count("packed_single_thread"));
    EXPECT_TRUE(tested_tactics().count("packed_directions_in_turn"));
    EXPECT_TRUE(tested_tactics().count("packed_fp16"));
    EXPECT_TRUE(tested_tactics().count("packed_single_thread_fp16"));
    EXPECT_TRUE(tested_tactics().count("packed_directions_in_turn_fp16"));
  }
}

TEST(RecurrentTactics, UnsupportedActivationIsAClearError) {
  RecurrentCase c;
  c.activations = {"Sigmoid", "Gelu"};
  RecurrentFixture fixture;
  build_fixture(c, fixture);
  EXPECT_TRUE(backends::cpu::tactics_for(*fixture.node).empty());
  auto kernel = backends::cpu::create_kernel(*fixture.node, 0);
  ASSERT_FALSE(kernel.has_value());
  EXPECT_NE(kernel.status().message().find("Gelu"), std::string::npos);
  EXPECT_NE(kernel.status().message().find("rnn_under_test"), std::string::npos);
}

}  // namespace
}  // namespace voxrt::recurrent_test
