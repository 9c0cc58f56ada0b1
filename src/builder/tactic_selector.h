// Chooses a tactic per node by timing every candidate on the node's real inputs at the first
// profile's opt shapes (captured from one profiling run of the whole graph), with a timing cache.
#pragma once

#include <functional>
#include <random>

#include "builder/timing_cache.h"
#include "runtime/engine_format.h"
#include "voxrt/builder.h"

namespace voxrt::builder {

struct ProfilingRun {
  // Every node's inputs and outputs (top-level and branch nodes), in execution order.
  struct Record {
    const ir::Node* node = nullptr;
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    double elapsed_us = 0;
  };
  std::vector<Record> records;
};

// Random inputs at the opt shapes (symbolic dims without a profile become 1; a warning is added).
Expected<std::vector<Tensor>> make_opt_inputs(const ir::Graph& graph, const BuilderConfig& config,
                                              std::vector<std::string>& warnings);
Expected<ProfilingRun> run_profiling(const ir::Graph& graph, std::span<const Tensor> inputs,
                                     int threads);

// Writes voxrt.tactic / voxrt.tactic_name / voxrt.time_us into each node.
Status select_tactics(ir::Graph& graph, const ProfilingRun& run, const BuilderConfig& config,
                      TimingCache& cache, BuildReport& report);

// Engines with several optimization profiles: chooses the tactics again at every other
// profile's opt shapes and records each node's choice per profile (runtime::kProfileTacticsAttr
// and friends), so that a stream at batch 1 and a batch of 64 each run the kernels that are
// fastest for them. voxrt.tactic keeps profile 0's choice. `tune_at(p)` chooses every node's
// tactic at profile p's opt shapes, writing voxrt.tactic / voxrt.tactic_name / voxrt.time_us
// (the CPU: cpu_tune_at_profile below; a device: its backend's select_tactics); timings it adds
// to report.tactic_timings are marked with profile p.
Status select_profile_tactics(ir::Graph& graph, const BuilderConfig& config, BuildReport& report,
                              const std::function<Status(std::size_t profile)>& tune_at);

// The CPU's tune_at: one profiling run at profile p's opt inputs (`opt_inputs`), then
// select_tactics timed there; the progress display names the profile.
Status cpu_tune_at_profile(ir::Graph& graph, const BuilderConfig& config, std::size_t profile,
                           std::span<const Tensor> opt_inputs, TimingCache& cache,
                           BuildReport& report);

runtime::MemoryPlanRecord plan_memory(const ir::Graph& graph, const ProfilingRun& run);

}  // namespace voxrt::builder
