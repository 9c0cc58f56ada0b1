// The CUDA DeviceBackend: device fingerprint and its check, support queries, autotuning at build
// time (every candidate tactic timed on the device with CUDA events, results in the builder's
// timing cache) and compilation of loaded engines.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/executor.h"
#include "backends/cuda/int8_gemm_host.h"
#include "ir/view_ops.h"
#include "runtime/engine_format.h"

namespace voxrt::backends::cuda {
namespace {

// "key=value" fields; name= takes the rest of the line (device names have spaces).
std::map<std::string, std::string> parse_fingerprint(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream in(text);
  std::string token;
  while (in >> token) {
    const auto eq = token.find('=');
    if (eq == std::string::npos) continue;
    std::string key = token.substr(0, eq), value = token.substr(eq + 1);
    if (key == "name") {
      std::string rest;
      std::getline(in, rest);
      value += rest;
    }
    fields[key] = value;
  }
  return fields;
}

class CudaBackend final : public DeviceBackend {
 public:
  DeviceKind kind() const override { return DeviceKind::kCuda; }

  Status select_device(int ordinal) const override {
    std::string why;
    if (!cuda_device_available(&why)) return unsupported("CUDA device ", ordinal, ": ", why);
    int count = 0;
    VOXRT_CUDA_TRY(cudaGetDeviceCount(&count));
    if (ordinal < 0 || ordinal >= count) {
      return invalid_argument("CUDA device ", ordinal, " does not exist: this machine has ", count,
                              " (0..", count - 1, ")");
    }
    VOXRT_CUDA_TRY(cudaSetDevice(ordinal));
    return Status::ok();
  }

  Expected<std::string> fingerprint() const override {
    std::string why;
    if (!cuda_device_available(&why)) return unsupported("--device cuda: ", why);
    int device = 0;
    VOXRT_CUDA_TRY(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    VOXRT_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
    int driver = 0, runtime = 0;
    VOXRT_CUDA_TRY(cudaDriverGetVersion(&driver));
    VOXRT_CUDA_TRY(cudaRuntimeGetVersion(&runtime));
    return str_cat("cuda sm=", prop.major * 10 + prop.minor, " driver=", driver,
                   " runtime=", runtime, " cublasLt=", cublasLtGetVersion(), " ",
                   cudnn_fingerprint(), " name=", prop.name);
  }

  Status check_fingerprint(const std::string& recorded) const override {
    std::string why;
    if (!cuda_device_available(&why)) {
      return unsupported("this engine was built for a CUDA GPU, and ", why,
                         ": build a CPU engine for this machine (voxrt build without --device)");
    }
    VOXRT_ASSIGN_OR_RETURN(const std::string here, fingerprint());
    const auto built = parse_fingerprint(recorded);
    const auto now = parse_fingerprint(here);
    std::string differs;
    for (const char* field : {"sm", "driver", "runtime", "cublasLt", "cudnn"}) {
      auto a = built.find(field);
      auto b = now.find(field);
      const std::string va = a == built.end() ? "?" : a->second;
      const std::string vb = b == now.end() ? "?" : b->second;
      if (va != vb)
        differs += str_cat(differs.empty() ? "" : ", ", field, " (engine ", va, ", this machine ",
                           vb, ")");
    }
    if (!differs.empty()) {
      return version_mismatch("engine target: the CUDA engine was built for '", recorded,
                              "'; here it is '", here, "': ", differs,
                              " differ; rebuild the engine on this machine");
    }
    return Status::ok();
  }

  bool int8_candidate(const ir::Node& node) const override { return cuda_int8_applies(node); }

  std::vector<std::string> unsupported_nodes(const ir::Graph& graph,
                                             Precision precision) const override {
    std::vector<std::string> out;
    for (const ir::Node* node : graph.nodes()) {
      if (ir::is_view_op(*node)) continue;
      const std::string why = unsupported_reason(*node, layer_precision(*node, precision));
      if (!why.empty()) out.push_back(str_cat(node->describe(), ": ", why));
    }
    return out;
  }

  Status select_tactics(ir::Graph& graph, std::span<const Tensor> opt_inputs, Precision precision,
                        bool autotune, int iterations, TacticTimingStore& store,
                        TacticSelectionStats& stats) const override {
    VOXRT_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, graph.topological_order());
    // Generated kernels are compiled once, here, and travel in the engine (the runtime never
    // compiles); the timing runs below already use them.
    for (ir::Node* node : order) {
      if (node->op == ir::OpKind::kFusedPointwise)
        VOXRT_RETURN_IF_ERROR(attach_fused_pointwise_code(*node));
    }
    std::map<const ir::Node*, std::vector<TacticInfo>> tactics;
    const char* fallback_env = std::getenv("VOXRT_CUDA_INT8_FP16_FALLBACK");
    const bool int8_fp16_fallback = !(fallback_env && fallback_env[0] == '0');
    std::size_t variants = 1;
    for (ir::Node* node : order) {
      if (ir::is_view_op(*node)) continue;
      tactics[node] = tactics_for(*node, layer_precision(*node, precision));
      if (!int8_fp16_fallback && layer_precision(*node, precision) == Precision::kInt8 &&
          runs_int8(*node)) {
        // VOXRT_CUDA_INT8_FP16_FALLBACK=0: an int8 layer is timed on its IMMA tactics alone
        // (after the reference, which stays first).
        auto& list = tactics[node];
        list.erase(std::remove_if(list.begin() + 1, list.end(),
                                  [](const TacticInfo& t) { return !is_int8_gemm_tactic(t.id); }),
                   list.end());
      }
      variants = std::max(variants, tactics[node].size());
    }
    // times[node][i]: measured or cached time of tactics[node][i]; < 0 = not known.
    std::map<const ir::Node*, std::vector<double>> times;
    bool missing = false;
    for (auto& [node, list] : tactics) {
      times[node].assign(list.size(), -1.0);
      if (!autotune || list.size() < 2) continue;
      for (std::size_t i = 1; i < list.size(); ++i) {  // the reference is never timed
        if (auto hit = store.find(*node, list[i])) {
          times[node][i] = *hit;
          ++stats.cache_hits;
        } else {
          missing = true;
        }
      }
    }
    if (autotune && missing) {
      // Variant v runs every node with its (v+1)-th tactic (the last one when it has fewer; the
      // reference kernel, tactic 0, is the oracle and is not timed), so one whole-graph profiled
      // run times one candidate of every node at the real opt shapes.
      for (std::size_t v = 0; v + 1 < variants; ++v) {
        for (auto& [node, list] : tactics) {
          const auto& t = list[list.size() < 2 ? 0 : std::min(v + 1, list.size() - 1)];
          const_cast<ir::Node*>(node)->attrs.set(runtime::kTacticAttr,
                                                 static_cast<std::int64_t>(t.id));
        }
        // A variant that cannot be prepared or run is simply not chosen; the reason goes into
        // the build report.
        auto exe = compile_graph(graph, precision);
        if (!exe) {
          stats.notes.push_back(str_cat("tactic variant ", v, ": ", exe.status().message()));
          continue;
        }
        auto session = (*exe)->create_session();
        if (!session) return session.status();
        auto measured = (*session)->run_profiled(opt_inputs, iterations);
        if (!measured) {
          stats.notes.push_back(str_cat("tactic variant ", v, ": ", measured.status().message()));
          continue;
        }
        const auto steps = (*exe)->tactics(0);
        for (std::size_t s = 0; s < steps.size(); ++s) {
          const ir::Node* node = steps[s].first;
          auto it = tactics.find(node);
          if (it == tactics.end() || v + 1 >= it->second.size()) continue;
          if ((*measured)[s] < 0) {
            stats.notes.push_back(str_cat(node->describe(), ": tactic ", it->second[v + 1].name,
                                          " cannot run at the opt shapes"));
            continue;
          }
          if (times[node][v + 1] < 0) {
            times[node][v + 1] = (*measured)[s];
            store.put(*node, it->second[v + 1], (*measured)[s]);
            ++stats.timed;
          }
        }
      }
    }
    for (auto& [node, list] : tactics) {
      std::size_t best = list.size() > 1 ? 1 : 0;
      double best_us = 0;
      if (autotune && list.size() > 1) {
        bool found = false;
        for (std::size_t i = 1; i < list.size(); ++i) {
          const double t = times[node][i];
          if (t >= 0 && (!found || t < best_us)) {  // ties go to the lower id
            best = i;
            best_us = t;
            found = true;
          }
        }
        if (!found) {
          best = 0;
          stats.notes.push_back(str_cat(node->describe(),
                                        ": no fast CUDA tactic ran at the opt shapes; using the "
                                        "reference kernel"));
        }
      }
      if (autotune && list.size() > 1) {
        for (std::size_t i = 1; i < list.size(); ++i)
          stats.timings.push_back({node->name, list[i].name, times[node][i], i == best});
      }
      auto* n = const_cast<ir::Node*>(node);
      n->attrs.set(runtime::kTacticAttr, static_cast<std::int64_t>(list[best].id));
      n->attrs.set(runtime::kTacticNameAttr, list[best].name);
      n->attrs.set(runtime::kTimeUsAttr, static_cast<float>(best_us));
    }
    return Status::ok();
  }

  Expected<std::unique_ptr<DeviceExecutable>> compile(
      const ir::Graph& graph, Precision precision,
      std::span<const OptimizationProfile> profiles) const override {
    std::string why;
    if (!cuda_device_available(&why)) return unsupported("loading a CUDA engine: ", why);
    // As the build chose (tune_graph); VOXRT_CUDA_RNN_STACK=0 / 1 overrides it.
    const char* forced = std::getenv("VOXRT_CUDA_RNN_STACK");
    auto chosen = graph.metadata.find(kCudaRnnStackKey);
    const bool stack = forced && forced[0] != '\0'
                           ? forced[0] == '1'
                           : chosen != graph.metadata.end() && chosen->second == "1";
    return compile_graph(graph, precision, {profiles.begin(), profiles.end()}, stack);
  }

  Status tune_graph(ir::Graph& graph, std::span<const Tensor> opt_inputs, Precision precision,
                    int iterations, TacticTimingStore& store,
                    TacticSelectionStats& stats) const override {
    graph.metadata.erase(kCudaRnnStackKey);
    // Two more compiles (each with its own copy of the weights on the device) only where a
    // stack could form: a graph with fewer than two GRU nodes has nothing to compare.
    int grus = 0;
    for (const ir::Node* node : graph.nodes()) grus += node->op == ir::OpKind::kGRU;
    if (grus < 2) return Status::ok();
    VOXRT_ASSIGN_OR_RETURN(auto layered, compile_graph(graph, precision, {}, false));
    VOXRT_ASSIGN_OR_RETURN(auto stacked, compile_graph(graph, precision, {}, true));
    const auto stacked_steps = stacked->tactics(0);
    if (stacked_steps.size() == layered->tactics(0).size()) return Status::ok();  // no chain
    // The times belong to the first stack's top node (the candidates are whole-graph ways).
    const ir::Node* anchor = nullptr;
    for (const auto& [node, tactic] : stacked_steps)
      if (!anchor && tactic.rfind("cudnn_rnn_stack", 0) == 0) anchor = node;
    if (!anchor) return Status::ok();
    const TacticInfo as_layers{kGraphLayerByLayer, "graph_layer_by_layer"};
    const TacticInfo as_stack{kGraphRnnStack, "graph_rnn_stack"};
    std::optional<double> layered_us = store.find(*anchor, as_layers);
    std::optional<double> stacked_us = store.find(*anchor, as_stack);
    if (layered_us && stacked_us) {
      stats.cache_hits += 2;
    } else {
      // Whole-graph device time, the two ways in turn, best median of two rounds each.
      const auto time = [&](const DeviceExecutable& exe) -> Expected<double> {
        VOXRT_ASSIGN_OR_RETURN(auto session, exe.create_session());
        VOXRT_ASSIGN_OR_RETURN(std::vector<double> ms,
                               session->time_compute(opt_inputs, std::max(iterations, 10)));
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2] * 1000.0;
      };
      double best_layered = 1e300, best_stacked = 1e300;
      for (int round = 0; round < 2; ++round) {
        VOXRT_ASSIGN_OR_RETURN(double a, time(*layered));
        auto b = time(*stacked);
        if (!b) {
          stats.notes.push_back(
              str_cat("the GRU layers as one cuDNN call could not run at the "
                      "opt shapes: ",
                      b.status().message()));
          return Status::ok();
        }
        best_layered = std::min(best_layered, a);
        best_stacked = std::min(best_stacked, *b);
      }
      layered_us = best_layered;
      stacked_us = best_stacked;
      store.put(*anchor, as_layers, *layered_us);
      store.put(*anchor, as_stack, *stacked_us);
      stats.timed += 2;
    }
    const bool stack = *stacked_us < *layered_us;
    graph.metadata[kCudaRnnStackKey] = stack ? "1" : "0";
    // Listed apart from the node's own tactics: these are times of the whole graph.
    const std::string label = str_cat(anchor->name, " (whole graph)");
    stats.timings.push_back({label, as_layers.name, *layered_us, !stack});
    stats.timings.push_back({label, as_stack.name, *stacked_us, stack});
    return Status::ok();
  }
};

}  // namespace

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    cudaGetLastError();
    if (why) {
      // Without a GPU the runtime reports a missing or "insufficient" driver: say what it means.
      const bool no_gpu = error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
                          error == cudaSuccess;
      *why =
          str_cat(no_gpu ? "no CUDA device: this machine has no usable NVIDIA GPU"
                         : "no CUDA device: the CUDA driver cannot be used",
                  error != cudaSuccess ? str_cat(" (cudaGetDeviceCount: ", cudaGetErrorName(error),
                                                 ", ", cudaGetErrorString(error), ")")
                                       : std::string(" (cudaGetDeviceCount found 0 devices)"));
    }
    return false;
  }
  return true;
}

DeviceBackend& cuda_backend() {
  static CudaBackend backend;
  return backend;
}

void register_cuda_backend() {
  register_device_backend(&cuda_backend());
}

}  // namespace voxrt::backends::cuda
