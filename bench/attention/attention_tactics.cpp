// Times every Attention CPU tactic but the reference on the shapes of issue 26's Transformer
// cases at one thread: the Whisper-base encoder's self-attention (8 heads, 1500 x 1500 x 64), a
// Whisper decoder step's cross-attention (1 query against 1500 keys) and a streaming Conformer
// chunk's (4 heads, 16 queries against 80 keys). Reports the thread's CPU time per run (not wall
// time: the development VM is shared, and time slicing inflates wall time), minimum and median,
// with GFLOP/s of the two products. Not a test (bench/README.md).
//   attention_tactics [--iterations N] [--filter TEXT]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace {

using namespace voxrt;

Tensor random_tensor(const Dims& dims, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) * 1e-6;
}

struct Case {
  std::string label;
  std::int64_t heads, queries, keys, depth;
};

void run_case(const Case& c, int iterations) {
  const Tensor q = random_tensor({1, c.heads, c.queries, c.depth}, 1);
  const Tensor k = random_tensor({1, c.heads, c.keys, c.depth}, 2);
  const Tensor v = random_tensor({1, c.heads, c.keys, c.depth}, 3);
  ir::Graph graph;
  std::vector<ir::Value*> values;
  for (const Tensor* t : {&q, &k, &v})
    values.push_back(graph.add_value("in" + std::to_string(values.size()), DType::kF32,
                                     ir::sym_shape_from_dims(t->dims())));
  ir::Value* out = graph.add_value("out", DType::kF32, {}, false);
  ir::Node* node = graph.add_node(ir::OpKind::kAttention, c.label, values, {out});
  if (Status s = ir::infer_graph(graph); !s.is_ok()) {
    std::printf("%s: %s\n", c.label.c_str(), s.to_string().c_str());
    return;
  }
  Tensor y = Tensor::zeros(DType::kF32, *ir::known_dims(out->shape));
  const Tensor* inputs[] = {&q, &k, &v};
  Tensor* outputs[] = {&y};
  const double flops = 4.0 * static_cast<double>(c.heads * c.queries * c.keys * c.depth);
  for (const auto& tactic : backends::cpu::tactics_for(*node)) {
    if (tactic.id == backends::kReferenceTactic) continue;
    auto kernel = backends::cpu::create_kernel(*node, tactic.id);
    if (!kernel.has_value()) {
      std::printf("%-40s %-14s %s\n", c.label.c_str(), tactic.name.c_str(),
                  kernel.status().to_string().c_str());
      continue;
    }
    ThreadPool pool(1);
    backends::KernelContext context{&pool};
    for (int i = 0; i < 2; ++i) (void)(*kernel)->run(inputs, outputs, context);
    std::vector<double> ms;
    for (int i = 0; i < iterations; ++i) {
      const double start = thread_cpu_ms();
      Status s = (*kernel)->run(inputs, outputs, context);
      ms.push_back(thread_cpu_ms() - start);
      if (!s.is_ok()) std::printf("%s\n", s.to_string().c_str());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-40s %-14s CPU ms: min %8.3f  median %8.3f  %6.1f GFLOP/s (min)\n",
                c.label.c_str(), tactic.name.c_str(), ms.front(), ms[ms.size() / 2],
                flops / (ms.front() * 1e6));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 20;
  std::string filter;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--filter") == 0) filter = argv[i + 1];
  }
  const Case cases[] = {
      {"whisper_encoder [1,8,1500,64] x 1500", 8, 1500, 1500, 64},
      {"whisper_decoder_cross [1,8,1,64] x 1500", 8, 1, 1500, 64},
      {"conformer_chunk [1,4,16,64] x 80", 4, 16, 80, 64},
  };
  for (const Case& c : cases)
    if (c.label.find(filter) != std::string::npos) run_case(c, iterations);
  return 0;
}
