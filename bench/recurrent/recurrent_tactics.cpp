// Times every CPU tactic of the recurrent family on the layer shapes of the DS2 models that
// voxrt is measured on (shared/bench/torch_ds2_baseline.py): uni-GRU 512x5 (1312 -> 512, then
// 512 -> 512) and BiLSTM 1024x5 (1312 -> 1024 bidirectional, then 2048 -> 1024), T = 100 steps
// (2 s of audio after the conv front end), batch 1 and 16, 1 and 2 threads. Prints the median
// of each tactic and, for batch 1, the recurrent part of each whole model (1 first layer + 4
// others) with its fastest tactic.
//
// Usage: recurrent_tactics [--iterations N] [--seq T] [--only LAYER] [--reference] [--quick]
//   --only      layers whose name contains LAYER (gru, bilstm, gru_512_512, ...)
//   --reference also times the naive tactic (slow: seconds per BiLSTM layer)
//   --quick     batch 1 only, fewer iterations
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/layer_precision.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace {

using namespace voxrt;

struct LayerShape {
  const char* name;
  ir::OpKind op;
  std::int64_t input, hidden;
  bool bidirectional;
};

Tensor random_tensor(std::mt19937& rng, Dims dims, float scale) {
  Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

struct Layer {
  ir::Graph graph;
  ir::Node* node = nullptr;
  Tensor x;
  std::vector<Tensor> outputs;
};

void build_layer(const LayerShape& shape, std::int64_t seq, std::int64_t batch, Layer& layer) {
  std::mt19937 rng(7);
  const std::int64_t dirs = shape.bidirectional ? 2 : 1;
  const std::int64_t gates = shape.op == ir::OpKind::kGRU ? 3 : 4;
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.hidden));
  layer.x = random_tensor(rng, {seq, batch, shape.input}, 1.0f);
  ir::Value* x = layer.graph.add_value("X", DType::kF32, ir::sym_shape_from_dims(layer.x.dims()));
  ir::Value* w = layer.graph.add_constant(
      "W", random_tensor(rng, {dirs, gates * shape.hidden, shape.input}, scale));
  ir::Value* r = layer.graph.add_constant(
      "R", random_tensor(rng, {dirs, gates * shape.hidden, shape.hidden}, scale));
  ir::Value* b =
      layer.graph.add_constant("B", random_tensor(rng, {dirs, 2 * gates * shape.hidden}, scale));
  std::vector<ir::Value*> outs = {layer.graph.add_value("Y", DType::kF32, {}, false),
                                  layer.graph.add_value("Y_h", DType::kF32, {}, false)};
  layer.node = layer.graph.add_node(shape.op, shape.name, {x, w, r, b}, outs);
  layer.node->opset = 14;
  layer.node->attrs.set("hidden_size", shape.hidden);
  layer.node->attrs.set("direction",
                        std::string(shape.bidirectional ? "bidirectional" : "forward"));
  if (shape.op == ir::OpKind::kGRU) layer.node->attrs.set("linear_before_reset", std::int64_t{1});
  layer.outputs = {Tensor::zeros(DType::kF32, {seq, dirs, batch, shape.hidden}),
                   Tensor::zeros(DType::kF32, {dirs, batch, shape.hidden})};
}

// CPU time of the calling thread: on a shared, oversubscribed machine this is a steadier measure
// of single-thread work than wall time (it excludes time the thread spent descheduled).
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 15;
  std::int64_t seq = 100;
  bool with_reference = false, quick = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seq") && i + 1 < argc) {
      seq = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else if (!std::strcmp(argv[i], "--reference")) {
      with_reference = true;
    } else if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
      iterations = std::min(iterations, 7);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--iterations N] [--seq T] [--only LAYER] [--reference] [--quick]\n",
                   argv[0]);
      return 2;
    }
  }
  const LayerShape shapes[] = {
      {"gru_1312_512", ir::OpKind::kGRU, 1312, 512, false},
      {"gru_512_512", ir::OpKind::kGRU, 512, 512, false},
      {"bilstm_1312_1024", ir::OpKind::kLSTM, 1312, 1024, true},
      {"bilstm_2048_1024", ir::OpKind::kLSTM, 2048, 1024, true},
  };
  std::vector<std::int64_t> batches = {1, 16};
  if (quick) batches = {1};
  // best[{fp16, threads}][layer] = fastest median at batch 1, for the model estimates.
  std::map<std::pair<bool, int>, std::map<std::string, double>> best;
  std::printf("%-18s %5s %7s %-30s %12s %16s\n", "layer", "batch", "threads", "tactic", "median_ms",
              "caller_cpu_ms");
  for (const LayerShape& shape : shapes) {
    if (!only.empty() && std::string(shape.name).find(only) == std::string::npos) continue;
    for (std::int64_t batch : batches) {
      Layer layer;
      build_layer(shape, seq, batch, layer);
      std::vector<std::unique_ptr<backends::Kernel>> kernels;
      std::vector<std::string> names;
      std::vector<bool> fp16_kernel;
      for (const bool fp16 : {false, true}) {
        if (fp16) {
          layer.node->attrs.set(backends::kLayerPrecisionAttr,
                                static_cast<std::int64_t>(Precision::kFp16));
        }
        for (const auto& tactic : backends::cpu::tactics_for(*layer.node)) {
          if (tactic.id == 0 && (fp16 || !with_reference)) continue;
          // The fp16 round adds only the FP16 kernels (the FP32 ones follow them in its list).
          if (fp16 && !tactic.name.ends_with("_fp16")) continue;
          auto kernel = backends::cpu::create_kernel(*layer.node, tactic.id);
          if (!kernel) {
            std::fprintf(stderr, "%s: %s\n", tactic.name.c_str(),
                         kernel.status().to_string().c_str());
            continue;
          }
          kernels.push_back(std::move(*kernel));
          names.push_back(tactic.name);
          fp16_kernel.push_back(fp16);
        }
      }
      const Tensor* inputs[] = {&layer.x, nullptr, nullptr, nullptr};
      inputs[1] = &*layer.node->inputs[1]->constant;
      inputs[2] = &*layer.node->inputs[2]->constant;
      inputs[3] = &*layer.node->inputs[3]->constant;
      Tensor* outputs[] = {&layer.outputs[0], &layer.outputs[1]};
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        backends::KernelContext context{&pool};
        std::vector<std::vector<double>> times(kernels.size()), cpu_times(kernels.size());
        const int runs =
            names.size() && names[0] == "reference" ? std::min(iterations, 3) : iterations;
        for (int it = -1; it < runs; ++it) {  // iteration -1 warms up (and creates caches)
          // Interleave tactics so that machine noise hits them alike.
          for (std::size_t k = 0; k < kernels.size(); ++k) {
            const double cpu_start = thread_cpu_ms();
            const auto start = std::chrono::steady_clock::now();
            Status status = kernels[k]->run(inputs, outputs, context);
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
            if (!status.is_ok()) {
              std::fprintf(stderr, "%s: %s\n", names[k].c_str(), status.to_string().c_str());
              return 1;
            }
            const double cpu_ms = thread_cpu_ms() - cpu_start;
            if (it >= 0) {
              times[k].push_back(ms);
              cpu_times[k].push_back(cpu_ms);
            }
          }
        }
        for (std::size_t k = 0; k < kernels.size(); ++k) {
          const double m = median(times[k]);
          std::printf("%-18s %5lld %7d %-30s %12.3f %16.3f\n", shape.name,
                      static_cast<long long>(batch), threads, names[k].c_str(), m,
                      median(cpu_times[k]));
          if (batch == 1 && names[k] != "reference") {
            double& b = best[{fp16_kernel[k], threads}][shape.name];
            if (b == 0.0 || m < b) b = m;
          }
        }
      }
    }
  }
  for (auto& [key, layers] : best) {
    const auto& [fp16, threads] = key;
    const double gru = layers["gru_1312_512"] + 4 * layers["gru_512_512"];
    const double lstm = layers["bilstm_1312_1024"] + 4 * layers["bilstm_2048_1024"];
    std::printf(
        "model estimate (recurrent layers only, %s, batch 1, T=%lld, %d thread%s): "
        "uni-GRU 512x5 %.2f ms, BiLSTM 1024x5 %.2f ms\n",
        fp16 ? "fp16" : "fp32", static_cast<long long>(seq), threads, threads == 1 ? "" : "s", gru,
        lstm);
  }
  return 0;
}
