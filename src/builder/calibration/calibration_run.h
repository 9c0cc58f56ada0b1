// Runs an optimized graph over calibration streams as a live stream would: each stream starts
// from zero states, and after every run its state outputs become the next run's state inputs.
// Used to collect activation histograms (calibration) and to compare a partly quantized graph's
// outputs with the FP32 graph's (sensitivity).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/plan.h"
#include "voxrt/builder.h"
#include "voxrt/calibration.h"

namespace voxrt::builder::calibration {

bool is_state_input(const std::vector<StatePair>& states, const std::string& name);

// Sizes of the symbolic dims of the graph inputs that `chunk` gives, from its tensors (the
// batch of the features is the states' batch).
std::map<std::string, std::int64_t> chunk_symbols(const ir::Graph& graph,
                                                  const CalibrationChunk& chunk);

// Where each graph output is, by name, and which outputs feed a state input (the rest are the
// outputs a calibration run reports).
struct GraphOutputRoles {
  std::map<std::string, std::size_t> index_by_name;
  std::set<std::size_t> state_outputs;
};
GraphOutputRoles graph_output_roles(const ir::Graph& graph, const BuilderConfig& config);

// Zeros for state input `value`, its symbolic dims resolved as run_calibration_streams says.
Tensor zero_state(const ir::Value& value, const std::map<std::string, std::int64_t>& symbols,
                  const BuilderConfig& config);

// What a source needs to know about `graph` (its inputs and its metadata).
CalibrationModelInfo model_info(const ir::Graph& graph, const std::vector<StatePair>& states);

struct StreamRunOptions {
  int max_streams = -1;  // -1: all of them
  const runtime::StepObserver* observer = nullptr;
  // run_calibration_streams_batched only: run the streams one at a time all the same (the
  // sensitivity pass checks its batched FP32 reference against this).
  bool one_stream_at_a_time = false;
  // Called after each run with the graph's outputs that are not states, in graph-output order.
  std::function<void(int stream, int run, const std::vector<const Tensor*>& outputs)> on_outputs;
};

// Runs `plan` (compiled from `graph`) over the source's streams on one thread, so results do
// not depend on the thread count. State inputs that the chunks do not give start as zeros whose
// symbolic dims take the sizes the chunk gives the same symbols (the batch), then the first
// profile's opt dims, then 1.
Status run_calibration_streams(const ir::Graph& graph, const runtime::Plan& plan,
                               const BuilderConfig& config, CalibrationSource& source,
                               const StreamRunOptions& options);

}  // namespace voxrt::builder::calibration
