// The ops Transformer-era exports add to the CUDA backend (issue 26), against the CPU reference
// kernels: elementwise ops, Where and Cast on every dtype, the reductions and ArgMax on integer
// types, grouped and depthwise convolutions with every tactic, Pad, Tile, Range and
// ConstantOfShape, and shape arithmetic over a dynamic batch that the executor computes when it
// plans (no Shape op runs on the device). Label gpu: skipped without a CUDA device.
#include <cmath>
#include <limits>

#include "gpu/gpu_test_support.h"

namespace voxrt {
namespace {

using namespace gpu_test;  // NOLINT: the shared helpers of tests/gpu
using ir::Dim;
using K = ir::OpKind;

Tensor i64_tensor(Dims dims, std::vector<std::int64_t> values) {
  return Tensor::from_vector<std::int64_t>(std::move(dims), values);
}

// Integers in [lo, hi] (negatives included: division and modulo signs matter).
Tensor random_i64(Dims dims, std::mt19937& rng, std::int64_t lo, std::int64_t hi) {
  std::uniform_int_distribution<std::int64_t> u(lo, hi);
  Tensor t = Tensor::uninitialized(DType::kI64, std::move(dims));
  for (auto& v : t.span<std::int64_t>()) v = u(rng);
  return t;
}

Tensor random_f16(Dims dims, std::mt19937& rng, float scale = 1.0f) {
  Tensor f = random_tensor(dims, rng, scale);
  Tensor t = Tensor::uninitialized(DType::kF16, std::move(dims));
  for (std::int64_t i = 0; i < f.element_count(); ++i)
    t.data<std::uint16_t>()[i] = float_to_half_bits(f.data<float>()[i]);
  return t;
}

ir::Node* cast(ir::Graph& g, const std::string& name, ir::Value* x, ir::Value* y, DType to) {
  ir::Node* n = node(g, K::kCast, name, {x}, {y});
  n->attrs.set("to", static_cast<std::int64_t>(to));
  return n;
}

TEST(CudaTransformerOps, IntegerArithmeticAndComparisons) {
  REQUIRE_CUDA_DEVICE();
  for (K op : {K::kAdd, K::kSub, K::kMul, K::kDiv, K::kMod, K::kMax, K::kMin, K::kPow}) {
    check_all_tactics(
        std::string("i64 ") + std::string(ir::op_name(op)),
        [op](ir::Graph& g, std::mt19937& rng) {
          std::vector<Tensor> ins;
          ir::Value* a = input(g, ins, "a", random_i64({3, 1, 5}, rng, -20, 20));
          // Zeros and -1 in the divisor: the chosen integer rules (x / 0 = 0, Mod by -1 = 0).
          ir::Value* b = input(g, ins, "b", i64_tensor({4, 1}, {-3, 0, -1, 7}));
          if (op == K::kPow) b = input(g, ins, "e", i64_tensor({4, 1}, {-1, 0, 3, 13}));
          ir::Value* y = out(g, "y");
          ir::Node* n = node(g, op, "op", {a, b}, {y});
          if (op == K::kMod) n->attrs.set("fmod", std::int64_t{0});
          g.outputs = {y};
          return ins;
        },
        Precision::kFp32);
  }
  for (K op : {K::kEqual, K::kGreater, K::kGreaterOrEqual, K::kLess, K::kLessOrEqual}) {
    check_all_tactics(
        std::string("masks by ") + std::string(ir::op_name(op)),
        [op](ir::Graph& g, std::mt19937& rng) {
          std::vector<Tensor> ins;
          // torchaudio's padding mask: arange(T) >= lengths[:, None], then Not, And, Or, Xor.
          ir::Value* positions = input(g, ins, "positions", i64_tensor({1, 6}, {0, 1, 2, 3, 4, 5}));
          ir::Value* lengths = input(g, ins, "lengths", i64_tensor({3, 1}, {6, 2, 4}));
          ir::Value* m = out(g, "m");
          node(g, op, "cmp", {positions, lengths}, {m});
          ir::Value* f = input(g, ins, "f", random_tensor({3, 6}, rng));
          ir::Value* z = g.add_constant("z", Tensor::scalar_f32(0.0f));
          ir::Value* pos = out(g, "pos");
          node(g, K::kGreater, "f_pos", {f, z}, {pos});
          ir::Value* n = out(g, "n");
          node(g, K::kNot, "not", {m}, {n});
          ir::Value* a = out(g, "a");
          node(g, K::kAnd, "and", {n, pos}, {a});
          ir::Value* o = out(g, "o");
          node(g, K::kOr, "or", {m, pos}, {o});
          ir::Value* x = out(g, "x");
          node(g, K::kXor, "xor", {a, o}, {x});
          g.outputs = {m, a, o, x};
          return ins;
        },
        Precision::kFp32);
  }
}

TEST(CudaTransformerOps, WhereAndCastOnEveryType) {
  REQUIRE_CUDA_DEVICE();
  check_all_tactics(
      "masked fill and casts",
      [](ir::Graph& g, std::mt19937& rng) {
        std::vector<Tensor> ins;
        ir::Value* scores = input(g, ins, "scores", random_tensor({2, 3, 4, 5}, rng));
        ir::Value* lengths = input(g, ins, "lengths", i64_tensor({2, 1, 1, 1}, {5, 2}));
        ir::Value* keys = input(g, ins, "keys", i64_tensor({5}, {0, 1, 2, 3, 4}));
        ir::Value* keep = out(g, "keep");
        node(g, K::kLess, "keep", {keys, lengths}, {keep});  // [2,1,1,5]
        ir::Value* masked = out(g, "masked");
        node(g, K::kWhere, "where",
             {keep, scores, g.add_constant("neg", Tensor::scalar_f32(-1e4f))}, {masked});
        // Where on i64 with every operand broadcast differently.
        ir::Value* ids = input(g, ins, "ids", random_i64({3, 1}, rng, -100, 100));
        ir::Value* other = input(g, ins, "other", random_i64({1, 5}, rng, -9, 9));
        ir::Value* picked = out(g, "picked");
        node(g, K::kWhere, "where_i64", {keep, ids, other}, {picked});  // [2,1,3,5]
        // Casts: f32 -> i64 (truncation, saturation), i64 -> f32, bool -> f32, f32 -> f16 -> f32,
        // f32 -> bool, i64 -> i32 (wraps).
        ir::Value* wide =
            input(g, ins, "wide",
                  Tensor::from_vector<float>({6}, {-2.7f, 2.7f, 1e30f, -1e30f, NAN, 0.5f}));
        ir::Value* as_i64 = out(g, "as_i64");
        cast(g, "to_i64", wide, as_i64, DType::kI64);
        ir::Value* back = out(g, "back");
        cast(g, "to_f32", picked, back, DType::kF32);
        ir::Value* keep_f = out(g, "keep_f");
        cast(g, "bool_to_f32", keep, keep_f, DType::kF32);
        ir::Value* half = out(g, "half");
        cast(g, "to_f16", scores, half, DType::kF16);
        ir::Value* from_half = out(g, "from_half");
        cast(g, "from_f16", half, from_half, DType::kF32);
        ir::Value* truth = out(g, "truth");
        cast(g, "to_bool", wide, truth, DType::kBool);
        ir::Value* big = input(g, ins, "big", i64_tensor({3}, {1ll << 40, -(1ll << 33) - 5, 7}));
        ir::Value* narrow = out(g, "narrow");
        cast(g, "to_i32", big, narrow, DType::kI32);
        g.outputs = {masked, picked, as_i64, back, keep_f, from_half, truth, narrow};
        return ins;
      },
      Precision::kFp32);
}

TEST(CudaTransformerOps, HalfPrecisionTensorsAndTheFloatOpsTheF32KernelsLack) {
  REQUIRE_CUDA_DEVICE();
  check_all_tactics(
      "f16 arithmetic",
      [](ir::Graph& g, std::mt19937& rng) {
        std::vector<Tensor> ins;
        ir::Value* a = input(g, ins, "a", random_f16({4, 8}, rng));
        ir::Value* b = input(g, ins, "b", random_f16({8}, rng));
        ir::Value* s = out(g, "s");
        node(g, K::kMul, "mul", {a, b}, {s});
        ir::Value* t = out(g, "t");
        node(g, K::kAdd, "add", {s, a}, {t});
        ir::Value* e = out(g, "e");
        node(g, K::kMax, "max", {t, b}, {e});
        ir::Value* w = out(g, "w");
        node(g, K::kWhere, "where_f16",
             {g.add_constant("m", Tensor::from_vector<bool>(
                                      {8}, {true, false, true, true, false, false, true, false})),
              e, t},
             {w});
        ir::Value* f = out(g, "f");
        cast(g, "up", w, f, DType::kF32);
        g.outputs = {w, f};
        return ins;
      },
      Precision::kFp32);
  for (K op : {K::kRound, K::kSign, K::kSin, K::kCos}) {
    check_all_tactics(
        std::string(ir::op_name(op)),
        [op](ir::Graph& g, std::mt19937& rng) {
          std::vector<Tensor> ins;
          Tensor x = random_tensor({3, 7}, rng, 3.0f);
          x.data<float>()[0] = 2.5f;  // halves go to the even neighbour
          x.data<float>()[1] = -3.5f;
          x.data<float>()[2] = 0.0f;
          ir::Value* xv = input(g, ins, "x", x);
          ir::Value* y = out(g, "y");
          node(g, op, "op", {xv}, {y});
          g.outputs = {y};
          return ins;
        },
        Precision::kFp32);
  }
  check_all_tactics(
      "f32 Mod (fmod and Python signs)",
      [](ir::Graph& g, std::mt19937& rng) {
        std::vector<Tensor> ins;
        ir::Value* a = input(g, ins, "a", random_tensor({5, 4}, rng, 10.0f));
        ir::Value* b =
            input(g, ins, "b", Tensor::from_vector<float>({4}, {3.0f, -3.0f, 0.7f, -2.5f}));
        ir::Value* p = out(g, "p");
        node(g, K::kMod, "mod", {a, b}, {p})->attrs.set("fmod", std::int64_t{1});
        g.outputs = {p};
        return ins;
      },
      Precision::kFp32);
}

TEST(CudaTransformerOps, ReductionsOnIntegersAndArgMax) {
  REQUIRE_CUDA_DEVICE();
  check_all_tactics(
      "lengths.max(), integer sums, float Prod / L2 / LogSumExp, ArgMax",
      [](ir::Graph& g, std::mt19937& rng) {
        std::vector<Tensor> ins;
        ir::Value* lengths = input(g, ins, "lengths", i64_tensor({4}, {7, 31, -2, 30}));
        ir::Value* longest = out(g, "longest");
        node(g, K::kReduceMax, "max", {lengths}, {longest})->attrs.set("keepdims", std::int64_t{0});
        ir::Value* counts = input(g, ins, "counts", random_i64({3, 5, 2}, rng, -1000, 1000));
        ir::Value* total = out(g, "total");
        node(g, K::kReduceSum, "sum", {counts, i64s(g, "axes1", {1})}, {total});
        ir::Value* x = input(g, ins, "x", random_tensor({2, 6, 3}, rng));
        std::vector<ir::Value*> outs = {longest, total};
        for (K op : {K::kReduceProd, K::kReduceL2, K::kReduceSumSquare, K::kReduceLogSumExp,
                     K::kReduceMean}) {
          ir::Value* r = out(g, std::string(ir::op_name(op)));
          node(g, op, std::string(ir::op_name(op)) + "_node",
               {x, i64s(g, "ax" + std::string(ir::op_name(op)), {1})}, {r});
          outs.push_back(r);
        }
        // Ties: the first maximum, or the last with select_last_index.
        Tensor tied = Tensor::from_vector<float>({2, 4}, {1, 3, 3, 0, 5, 5, 5, -1});
        ir::Value* t = input(g, ins, "tied", tied);
        ir::Value* first = out(g, "first");
        node(g, K::kArgMax, "argmax_first", {t}, {first})->attrs.set("axis", std::int64_t{1});
        ir::Value* last = out(g, "last");
        ir::Node* n = node(g, K::kArgMax, "argmax_last", {t}, {last});
        n->attrs.set("axis", std::int64_t{-1});
        n->attrs.set("select_last_index", std::int64_t{1});
        n->attrs.set("keepdims", std::int64_t{0});
        outs.push_back(first);
        outs.push_back(last);
        g.outputs = outs;
        return ins;
      },
      Precision::kFp32);
}

// The skinny GEMM tactic beside cuBLASLt at FP16/BF16: a chunk's 16 rows and a decoder step's 1
// row against weights whose K and N are not multiples of the kernel's 64, with a bias and a
// fused activation; N narrow enough that k is split over blocks (the last block of a tile adds
// the partial sums) and wide enough that it is not. Three runs each (eager, captured, replayed)
// also check that the tiles' tickets are left zeroed for the next run.
TEST(CudaTransformerOps, SkinnyGemmEveryPrecision) {
  REQUIRE_CUDA_DEVICE();
  struct Shape {
    std::int64_t rows, k, n;
    const char* activation;
  };
  for (const Shape& shape : {Shape{16, 256, 1024, "silu"}, Shape{1, 768, 2304, "none"},
                             Shape{3, 1000, 94, "gelu_erf"}, Shape{16, 4096, 256, "relu"}}) {
    for (Precision p : kAllPrecisions) {
      check_all_tactics(
          str_cat("skinny GEMM ", shape.rows, " x ", shape.k, " x ", shape.n, " ",
                  shape.activation),
          [shape](ir::Graph& g, std::mt19937& rng) {
            std::vector<Tensor> ins;
            ir::Value* x = input(g, ins, "x", random_tensor({1, shape.rows, shape.k}, rng));
            ir::Value* y = out(g, "y");
            ir::Node* mm =
                node(g, K::kFusedMatMul, "linear",
                     {x, g.add_constant("w", random_tensor({shape.k, shape.n}, rng, 0.05f)),
                      g.add_constant("b", random_tensor({shape.n}, rng, 0.1f))},
                     {y});
            mm->attrs.set("activation", std::string(shape.activation));
            g.outputs = {y};
            return ins;
          },
          p);
    }
  }
}

// A convolution over x [N, C, (H,) W] with `group` groups and weights [OC, C / group, (KH,) KW].
GraphCase grouped_conv_case(Dims x_dims, Dims w_dims, std::int64_t group, bool fused_sigmoid,
                            std::vector<std::int64_t> pads, std::vector<std::int64_t> strides,
                            std::vector<std::int64_t> dilations) {
  return [=](ir::Graph& g, std::mt19937& rng) {
    std::vector<Tensor> ins;
    ir::Value* x = input(g, ins, "x", random_tensor(x_dims, rng));
    ir::Value* y = out(g, "y");
    ir::Node* conv = node(g, fused_sigmoid ? K::kFusedConv : K::kConv, "conv",
                          {x, g.add_constant("w", random_tensor(w_dims, rng, 0.3f)),
                           g.add_constant("b", random_tensor({w_dims[0]}, rng, 0.1f))},
                          {y});
    conv->attrs.set("group", group);
    conv->attrs.set("pads", pads);
    conv->attrs.set("strides", strides);
    conv->attrs.set("dilations", dilations);
    if (fused_sigmoid) conv->attrs.set("activation", std::string("sigmoid"));
    g.outputs = {y};
    return ins;
  };
}

TEST(CudaTransformerOps, GroupedAndDepthwiseConvolutionsEveryTactic) {
  REQUIRE_CUDA_DEVICE();
  const std::vector<std::pair<std::string, GraphCase>> cases = {
      // The Conformer convolution module: 31 taps over 30 cached + 16 new frames, no padding.
      {"depthwise 1-D, 31 taps",
       grouped_conv_case({2, 32, 46}, {32, 1, 31}, 32, false, {0, 0}, {1}, {1})},
      // Its non-streaming form: same padding, and a wide row split into several column tiles.
      {"depthwise 1-D, padded, 600 columns",
       grouped_conv_case({1, 16, 600}, {16, 1, 15}, 16, true, {7, 7}, {1}, {1})},
      {"depthwise 1-D, stride 2, dilation 2, two outputs per channel",
       grouped_conv_case({3, 8, 40}, {16, 1, 5}, 8, false, {4, 4}, {2}, {2})},
      {"depthwise 2-D",
       grouped_conv_case({2, 12, 9, 11}, {12, 1, 3, 3}, 12, true, {1, 1, 1, 1}, {1, 2}, {1, 1})},
      // wav2vec2's positional convolution: 16 groups of several channels.
      {"grouped 1-D, 4 groups",
       grouped_conv_case({2, 16, 30}, {16, 4, 8}, 4, false, {4, 4}, {1}, {1})},
      {"grouped 2-D, 2 groups",
       grouped_conv_case({1, 6, 7, 8}, {4, 3, 3, 2}, 2, false, {1, 0, 1, 0}, {1, 1}, {1, 1})},
  };
  for (const auto& [name, make] : cases)
    for (Precision p : kAllPrecisions) check_all_tactics(name, make, p);
}

TEST(CudaTransformerOps, PadTileRangeAndConstantOfShape) {
  REQUIRE_CUDA_DEVICE();
  for (const char* mode : {"constant", "edge", "reflect"}) {
    check_all_tactics(
        std::string("Pad ") + mode,
        [mode](ir::Graph& g, std::mt19937& rng) {
          std::vector<Tensor> ins;
          ir::Value* x = input(g, ins, "x", random_tensor({2, 3, 5}, rng));
          ir::Value* y = out(g, "y");
          // The causal convolution's left padding of the time axis, and a crop (negative pad).
          node(g, K::kPad, "pad",
               {x, i64s(g, "pads", {0, 1, 4, 0, -1, 2}),
                g.add_constant("value", Tensor::scalar_f32(-7.5f))},
               {y})
              ->attrs.set("mode", std::string(mode));
          g.outputs = {y};
          return ins;
        },
        Precision::kFp32);
  }
  check_all_tactics(
      "Tile, Range of a run-time length, ConstantOfShape",
      [](ir::Graph& g, std::mt19937& rng) {
        std::vector<Tensor> ins;
        ir::Value* x = input(g, ins, "x", random_tensor({2, 3, 100}, rng));
        ir::Value* tiled = out(g, "tiled");
        node(g, K::kTile, "tile", {x, i64s(g, "repeats", {2, 1, 3})}, {tiled});
        // Range(0, x.shape[2], 1): more elements than shape inference keeps, so the kernel runs.
        ir::Value* shape = out(g, "shape");
        node(g, K::kShape, "shape", {x}, {shape});
        ir::Value* t = out(g, "t");
        node(g, K::kGather, "gather_t", {shape, g.add_constant("two", Tensor::scalar_i64(2))}, {t});
        ir::Value* positions = out(g, "positions");
        node(g, K::kRange, "range",
             {g.add_constant("start", Tensor::scalar_i64(-3)), t,
              g.add_constant("delta", Tensor::scalar_i64(1))},
             {positions});
        ir::Value* ramp = out(g, "ramp");
        node(g, K::kRange, "range_f32",
             {g.add_constant("fstart", Tensor::scalar_f32(0.25f)),
              g.add_constant("flimit", Tensor::scalar_f32(70.0f)),
              g.add_constant("fdelta", Tensor::scalar_f32(0.7f))},
             {ramp});
        ir::Value* filled = out(g, "filled");
        ir::Node* fill = node(g, K::kConstantOfShape, "fill", {shape}, {filled});
        fill->attrs.set("value", Tensor::from_vector<std::int64_t>({1}, {-42}));
        g.outputs = {tiled, positions, ramp, filled};
        return ins;
      },
      Precision::kFp32);
}

// Shape code over a dynamic batch, as exporters write it: Reshape to Concat(Shape(x)[0], ...),
// Expand to a shape made from Shape, a Slice whose starts and ends are arithmetic on the batch,
// a mask made by Range/Less/Where. Built through the builder with a batch range, so none of it
// folds at build time; the executor computes it when it plans each batch size. Matches the CPU
// engine at two batch sizes.
std::unique_ptr<ir::Graph> dynamic_shape_graph(std::mt19937& rng) {
  auto g = std::make_unique<ir::Graph>();
  const Dim b = Dim::symbolic("batch");
  ir::Value* x = g->add_value("x", DType::kF32, {b, Dim::known(6), Dim::known(4)});
  ir::Value* lengths = g->add_value("lengths", DType::kI64, {b});
  g->inputs = {x, lengths};
  ir::Value* shape = out(*g, "shape");
  node(*g, K::kShape, "shape", {x}, {shape});
  ir::Value* batch = out(*g, "batch");
  node(*g, K::kGather, "gather_b", {shape, i64s(*g, "zero", {0})}, {batch});
  ir::Value* time = out(*g, "time");
  node(*g, K::kGather, "gather_t", {shape, g->add_constant("one", Tensor::scalar_i64(1))}, {time});
  ir::Value* target = out(*g, "target");
  node(*g, K::kConcat, "target", {batch, i64s(*g, "rest", {2, 12})}, {target})
      ->attrs.set("axis", std::int64_t{0});
  ir::Value* r = out(*g, "r");
  node(*g, K::kReshape, "reshape", {x, target}, {r});  // [B, 2, 12]
  // The second half of the batch: x[B - (B + 1) / 2 : B], starts and ends computed from B.
  ir::Value* b1 = out(*g, "b1");
  node(*g, K::kAdd, "b_plus_1", {batch, i64s(*g, "one_v", {1})}, {b1});
  ir::Value* half = out(*g, "half");
  node(*g, K::kDiv, "half", {b1, i64s(*g, "two_v", {2})}, {half});
  ir::Value* starts = out(*g, "starts");
  node(*g, K::kSub, "starts", {batch, half}, {starts});
  ir::Value* s = out(*g, "s");
  node(*g, K::kSlice, "slice", {x, starts, batch, i64s(*g, "saxes", {0})}, {s});
  ir::Value* positions = out(*g, "positions");
  node(*g, K::kRange, "range",
       {g->add_constant("r0", Tensor::scalar_i64(0)), time,
        g->add_constant("r1", Tensor::scalar_i64(1))},
       {positions});  // [6]
  ir::Value* len2 = out(*g, "len2");
  node(*g, K::kUnsqueeze, "len2", {lengths, i64s(*g, "laxes", {1})}, {len2});
  ir::Value* keep = out(*g, "keep");
  node(*g, K::kLess, "keep", {positions, len2}, {keep});  // [B, 6]
  ir::Value* keep3 = out(*g, "keep3");
  node(*g, K::kUnsqueeze, "keep3", {keep, i64s(*g, "kaxes", {2})}, {keep3});
  ir::Value* masked = out(*g, "masked");
  node(*g, K::kWhere, "where", {keep3, x, g->add_constant("zero_f", Tensor::scalar_f32(0.0f))},
       {masked});
  ir::Value* shape_b4 = out(*g, "shape_b4");
  node(*g, K::kConcat, "shape_b4", {batch, i64s(*g, "ones", {1, 4})}, {shape_b4})
      ->attrs.set("axis", std::int64_t{0});
  ir::Value* bias = out(*g, "bias");
  node(*g, K::kExpand, "expand",
       {g->add_constant("bias_row", random_tensor({1, 1, 4}, rng)), shape_b4}, {bias});
  ir::Value* y = out(*g, "y");
  node(*g, K::kAdd, "add", {masked, bias}, {y});
  g->outputs = {r, s, y};
  return g;
}

TEST(CudaTransformerOps, ShapeArithmeticOverADynamicBatchIsComputedWhenPlanning) {
  REQUIRE_CUDA_DEVICE();
  const auto build = [](DeviceKind device) {
    std::mt19937 rng(11);
    BuilderConfig config;
    config.device = device;
    config.timing_iterations = 2;
    OptimizationProfile profile;
    profile.inputs["x"] = ShapeRange{{1, 6, 4}, {3, 6, 4}, {8, 6, 4}};
    profile.inputs["lengths"] = ShapeRange{{1}, {3}, {8}};
    config.profiles.push_back(profile);
    auto bytes = builder::build_engine_from_graph(dynamic_shape_graph(rng), 5, config);
    EXPECT_TRUE(bytes) << bytes.status().message();
    if (!bytes) return std::shared_ptr<const Engine>();
    auto engine = Engine::load_bytes(std::move(*bytes));
    EXPECT_TRUE(engine) << engine.status().message();
    return engine ? *engine : std::shared_ptr<const Engine>();
  };
  auto cpu = build(DeviceKind::kCpu);
  auto gpu = build(DeviceKind::kCuda);
  ASSERT_TRUE(cpu && gpu);
  auto cpu_ctx = cpu->create_context(1);
  auto gpu_ctx = gpu->create_context(1);
  ASSERT_TRUE(cpu_ctx && gpu_ctx);
  std::mt19937 rng(4);
  for (std::int64_t batch : {3, 5, 3}) {
    SCOPED_TRACE(str_cat("batch ", batch));
    std::vector<std::int64_t> lens;
    for (std::int64_t i = 0; i < batch; ++i) lens.push_back(i % 7);
    std::vector<Tensor> in = {random_tensor({batch, 6, 4}, rng), i64_tensor({batch}, lens)};
    auto co = (*cpu_ctx)->run(in);
    auto go = (*gpu_ctx)->run(in);
    ASSERT_TRUE(co) << co.status().message();
    ASSERT_TRUE(go) << go.status().message();
    ASSERT_EQ(go->size(), co->size());
    for (std::size_t o = 0; o < co->size(); ++o) {
      ASSERT_EQ((*go)[o].dims(), (*co)[o].dims()) << "output " << o;
      EXPECT_LE(relative_error((*go)[o], (*co)[o]), 1e-6) << "output " << o;
    }
  }
}

}  // namespace
}  // namespace voxrt
