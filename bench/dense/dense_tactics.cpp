// Times every dense CPU tactic on the shapes the DS2 and Conformer models use, at 1 and 2
// threads: median of repeated runs after warm-up, with GFLOP/s. Not a test (bench/README.md).
// --cold N builds N kernels of each tactic (each packs its own copy of the weights) and runs them
// in turn, so that, as in a model whose weights exceed the caches, every run reads its weights
// from memory; the time is then per kernel run.
//   dense_tactics [--iterations N] [--cold N] [--filter TEXT]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace {

using namespace voxrt;

Tensor random_tensor(const Dims& dims, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

struct Case {
  std::string label;
  ir::OpKind op;
  std::vector<Tensor> inputs;
  std::vector<bool> constant;
  ir::Attributes attrs;
  double flops;
};

void run_case(const Case& c, int iterations, int copies) {
  ir::Graph graph;
  std::vector<ir::Value*> values;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    values.push_back(c.constant[i] ? graph.add_constant("in" + std::to_string(i), c.inputs[i])
                                   : graph.add_value("in" + std::to_string(i), DType::kF32,
                                                     ir::sym_shape_from_dims(c.inputs[i].dims())));
  }
  ir::Value* out = graph.add_value("out", DType::kF32, {}, false);
  ir::Node* node = graph.add_node(c.op, c.label, values, {out});
  node->attrs = c.attrs;
  if (Status s = ir::infer_graph(graph); !s.is_ok()) {
    std::printf("%s: %s\n", c.label.c_str(), s.to_string().c_str());
    return;
  }
  Tensor y = Tensor::zeros(DType::kF32, *ir::known_dims(out->shape));
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : c.inputs) inputs.push_back(&t);
  Tensor* outputs[] = {&y};
  for (const auto& tactic : backends::cpu::tactics_for(*node)) {
    if (tactic.id == backends::kReferenceTactic) continue;
    std::vector<std::unique_ptr<backends::Kernel>> kernels;
    for (int copy = 0; copy < copies; ++copy) {
      auto kernel = backends::cpu::create_kernel(*node, tactic.id);
      if (!kernel.has_value()) {
        std::printf("%-34s %-16s %s\n", c.label.c_str(), tactic.name.c_str(),
                    kernel.status().to_string().c_str());
        break;
      }
      kernels.push_back(std::move(*kernel));
    }
    if (kernels.size() != static_cast<std::size_t>(copies)) continue;
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      backends::KernelContext context{&pool};
      for (const auto& kernel : kernels) (void)kernel->run(inputs, outputs, context);
      std::vector<double> ms;
      for (int i = 0; i < iterations; ++i) {
        const auto start = std::chrono::steady_clock::now();
        Status s = Status::ok();
        for (const auto& kernel : kernels) s = kernel->run(inputs, outputs, context);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count() /
            copies);
        if (!s.is_ok()) std::printf("%s\n", s.to_string().c_str());
      }
      std::sort(ms.begin(), ms.end());
      const double median = ms[ms.size() / 2];
      std::printf("%-34s %-16s threads=%d  median %8.3f ms  min %8.3f ms  %6.1f GFLOP/s\n",
                  c.label.c_str(), tactic.name.c_str(), threads, median, ms.front(),
                  c.flops / (median * 1e6));
    }
  }
}

ir::Attributes conv_attrs(std::vector<std::int64_t> strides, std::vector<std::int64_t> pads,
                          std::int64_t group = 1) {
  ir::Attributes a;
  a.set("strides", strides);
  a.set("pads", pads);
  a.set("group", group);
  a.set("activation", std::string("clip"));
  a.set("activation_alpha", 0.0f);
  a.set("activation_beta", 20.0f);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 30, copies = 1;
  std::string filter;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--cold") == 0) copies = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--filter") == 0) filter = argv[i + 1];
  }
  std::vector<Case> cases;
  // DS2, 2 s of audio: a 161-bin spectrogram of 200 frames.
  const std::int64_t frames = 200;
  const std::int64_t w1 = (frames + 10 - 11) / 2 + 1;  // 100
  cases.push_back({"ds2_conv1 [1,1,161,200]",
                   voxrt::ir::OpKind::kFusedConv,
                   {random_tensor({1, 1, 161, frames}, 1), random_tensor({32, 1, 41, 11}, 2),
                    random_tensor({32}, 3)},
                   {false, true, true},
                   conv_attrs({2, 2}, {20, 5, 20, 5}),
                   2.0 * 32 * 81 * w1 * 41 * 11});
  cases.push_back({"ds2_conv2 [1,32,81,100]",
                   voxrt::ir::OpKind::kFusedConv,
                   {random_tensor({1, 32, 81, w1}, 4), random_tensor({32, 32, 21, 11}, 5),
                    random_tensor({32}, 6)},
                   {false, true, true},
                   conv_attrs({2, 1}, {10, 5, 10, 5}),
                   2.0 * 32 * 41 * w1 * 32 * 21 * 11});
  for (std::int64_t t : {std::int64_t{16}, w1}) {
    voxrt::ir::Attributes a;
    a.set("trans_b", std::int64_t{1});
    a.set("activation", std::string("none"));
    cases.push_back(
        {"gemm [" + std::to_string(t) + ",1312]x[1312,1536]",
         voxrt::ir::OpKind::kFusedMatMul,
         {random_tensor({t, 1312}, 7), random_tensor({1536, 1312}, 8), random_tensor({1536}, 9)},
         {false, true, true},
         a,
         2.0 * t * 1312 * 1536});
  }
  // Streaming front ends: a short-time Fourier transform as a strided 1-D convolution on one
  // chunk (openWakeWord's melspectrogram: 1280 samples, 257 x 512 taps, hop 160, 5 frames; Silero
  // VAD v5: 576 samples, 258 x 256 taps, hop 128, 4 frames).
  for (const auto& [label, samples, rows, taps, hop] :
       {std::tuple{"stft_melspec [1,1,1280] 257x512/160", 1280, 257, 512, 160},
        std::tuple{"stft_silero [1,1,576] 258x256/128", 576, 258, 256, 128}}) {
    voxrt::ir::Attributes a;
    a.set("strides", std::vector<std::int64_t>{hop});
    const std::int64_t frames_out = (samples - taps) / hop + 1;
    cases.push_back({label,
                     voxrt::ir::OpKind::kConv,
                     {random_tensor({1, 1, samples}, 10), random_tensor({rows, 1, taps}, 11)},
                     {false, true},
                     a,
                     2.0 * rows * taps * frames_out});
  }
  // Conformer (d_model 256, 4x feed-forward), 64 frames: FFN projection with SiLU-free GELU form.
  {
    voxrt::ir::Attributes a;
    a.set("activation", std::string("gelu_erf"));
    cases.push_back({"conformer_ffn [1,64,256]x[256,1024]",
                     voxrt::ir::OpKind::kFusedMatMul,
                     {random_tensor({1, 64, 256}, 10), random_tensor({256, 1024}, 11),
                      random_tensor({1024}, 12)},
                     {false, true, true},
                     a,
                     2.0 * 64 * 256 * 1024});
    // One 16-frame streaming chunk through the feed-forward module's two layers (SiLU between).
    voxrt::ir::Attributes silu;
    silu.set("activation", std::string("silu"));
    cases.push_back({"chunk_ffn1 [1,16,256]x[256,1024]",
                     voxrt::ir::OpKind::kFusedMatMul,
                     {random_tensor({1, 16, 256}, 18), random_tensor({256, 1024}, 19),
                      random_tensor({1024}, 20)},
                     {false, true, true},
                     silu,
                     2.0 * 16 * 256 * 1024});
    voxrt::ir::Attributes none;
    none.set("activation", std::string("none"));
    cases.push_back({"chunk_ffn2 [1,16,1024]x[1024,256]",
                     voxrt::ir::OpKind::kFusedMatMul,
                     {random_tensor({1, 16, 1024}, 21), random_tensor({1024, 256}, 22),
                      random_tensor({256}, 23)},
                     {false, true, true},
                     none,
                     2.0 * 16 * 256 * 1024});
    cases.push_back({"conformer_attn [4,64,64]x[4,64,64]",
                     voxrt::ir::OpKind::kMatMul,
                     {random_tensor({1, 4, 64, 64}, 13), random_tensor({1, 4, 64, 64}, 14)},
                     {false, false},
                     voxrt::ir::Attributes{},
                     2.0 * 4 * 64 * 64 * 64});
    voxrt::ir::Attributes dw;
    dw.set("group", std::int64_t{256});
    dw.set("pads", std::vector<std::int64_t>{7, 7});
    cases.push_back({"conformer_dwconv [1,256,64] k15",
                     voxrt::ir::OpKind::kConv,
                     {random_tensor({1, 256, 64}, 15), random_tensor({256, 1, 15}, 16),
                      random_tensor({256}, 17)},
                     {false, true, true},
                     dw,
                     2.0 * 256 * 64 * 15});
  }
  // Whisper-base's front end on 30 s: two Conv1d of kernel 3 with GELU, the second of stride 2.
  for (const auto& [label, in_channels, stride, activation] :
       {std::tuple{"whisper_conv1 [1,80,3000] k3 gelu", 80, 1, "gelu_erf"},
        std::tuple{"whisper_conv1 [1,80,3000] k3 none", 80, 1, "none"},
        std::tuple{"whisper_conv2 [1,512,3000] k3/2 gelu", 512, 2, "gelu_erf"}}) {
    voxrt::ir::Attributes a;
    a.set("strides", std::vector<std::int64_t>{stride});
    a.set("pads", std::vector<std::int64_t>{1, 1});
    a.set("activation", std::string(activation));
    const std::int64_t positions = 3000 / stride;
    cases.push_back({label,
                     voxrt::ir::OpKind::kFusedConv,
                     {random_tensor({1, in_channels, 3000}, 24),
                      random_tensor({512, in_channels, 3}, 25), random_tensor({512}, 26)},
                     {false, true, true},
                     a,
                     2.0 * 512 * in_channels * 3 * positions});
  }
  for (const Case& c : cases)
    if (c.label.find(filter) != std::string::npos) run_case(c, iterations, copies);
  return 0;
}
