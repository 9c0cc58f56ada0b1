#include "builder/calibration/calibration_run.h"

#include <map>
#include <set>

#include "core/thread_pool.h"

namespace voxrt::builder::calibration {

bool is_state_input(const std::vector<StatePair>& states, const std::string& name) {
  for (const auto& s : states) {
    if (s.input == name) return true;
  }
  return false;
}

Tensor zero_state(const ir::Value& value, const std::map<std::string, std::int64_t>& symbols,
                  const BuilderConfig& config) {
  const ShapeRange* profile = nullptr;
  if (!config.profiles.empty()) {
    auto it = config.profiles.front().inputs.find(value.name);
    if (it != config.profiles.front().inputs.end()) profile = &it->second;
  }
  Dims dims;
  for (std::size_t d = 0; d < value.shape.size(); ++d) {
    const ir::Dim& dim = value.shape[d];
    if (dim.is_known()) {
      dims.push_back(dim.value);
    } else if (auto it = symbols.find(dim.symbol); !dim.symbol.empty() && it != symbols.end()) {
      dims.push_back(it->second);
    } else if (profile && d < profile->opt.size()) {
      dims.push_back(profile->opt[d]);
    } else {
      dims.push_back(1);
    }
  }
  return Tensor::zeros(value.dtype, dims);
}

std::map<std::string, std::int64_t> chunk_symbols(const ir::Graph& graph,
                                                  const CalibrationChunk& chunk) {
  std::map<std::string, std::int64_t> symbols;
  for (const ir::Value* v : graph.inputs) {
    auto it = chunk.find(v->name);
    if (it == chunk.end()) continue;
    for (std::size_t d = 0; d < v->shape.size() && d < it->second.rank(); ++d) {
      if (!v->shape[d].is_known() && !v->shape[d].symbol.empty())
        symbols.emplace(v->shape[d].symbol, it->second.dim(d));
    }
  }
  return symbols;
}

CalibrationModelInfo model_info(const ir::Graph& graph, const std::vector<StatePair>& states) {
  CalibrationModelInfo info;
  info.metadata = graph.metadata;
  for (const ir::Value* v : graph.inputs) {
    CalibrationModelInfo::Input input;
    input.state = is_state_input(states, v->name);
    input.name = v->name;
    input.dtype = v->dtype;
    for (const ir::Dim& d : v->shape) input.dims.push_back(d.is_known() ? d.value : -1);
    info.inputs.push_back(std::move(input));
  }
  return info;
}

GraphOutputRoles graph_output_roles(const ir::Graph& graph, const BuilderConfig& config) {
  GraphOutputRoles roles;
  for (std::size_t i = 0; i < graph.outputs.size(); ++i)
    roles.index_by_name[graph.outputs[i]->name] = i;
  for (const auto& s : config.states) {
    if (auto it = roles.index_by_name.find(s.output); it != roles.index_by_name.end())
      roles.state_outputs.insert(it->second);
  }
  return roles;
}

Status run_calibration_streams(const ir::Graph& graph, const runtime::Plan& plan,
                               const BuilderConfig& config, CalibrationSource& source,
                               const StreamRunOptions& options) {
  ThreadPool pool(1);
  backends::KernelContext context{&pool};
  const GraphOutputRoles roles = graph_output_roles(graph, config);
  const auto& output_index = roles.index_by_name;
  const auto& state_outputs = roles.state_outputs;
  const int streams = options.max_streams < 0
                          ? source.stream_count()
                          : std::min(options.max_streams, source.stream_count());
  runtime::PlanWorkspace workspace;
  for (int s = 0; s < streams; ++s) {
    VOXRT_ASSIGN_OR_RETURN(std::vector<CalibrationChunk> chunks, source.stream(s));
    std::map<std::string, Tensor> states;  // state input name -> value for the next run
    for (std::size_t r = 0; r < chunks.size(); ++r) {
      const CalibrationChunk& chunk = chunks[r];
      // Symbol sizes from the chunk's tensors (the batch of the features is the states' batch).
      const std::map<std::string, std::int64_t> symbols = chunk_symbols(graph, chunk);
      std::vector<Tensor> inputs;
      for (const ir::Value* v : graph.inputs) {
        if (auto it = chunk.find(v->name); it != chunk.end()) {
          inputs.push_back(it->second);
        } else if (auto st = states.find(v->name); st != states.end()) {
          inputs.push_back(st->second);
        } else if (is_state_input(config.states, v->name)) {
          inputs.push_back(zero_state(*v, symbols, config));
        } else {
          return invalid_argument("calibration stream ", s, " run ", r, ": no value for input '",
                                  v->name, "' (", source.describe(), ")");
        }
      }
      std::vector<Tensor> outputs;
      VOXRT_RETURN_IF_ERROR(plan.execute(inputs, outputs, context, options.observer, &workspace)
                                .with_context(str_cat("calibration stream ", s, " run ", r)));
      std::vector<const Tensor*> results;
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (!state_outputs.count(i)) results.push_back(&outputs[i]);
      }
      if (options.on_outputs) options.on_outputs(s, static_cast<int>(r), results);
      for (const auto& pair : config.states) {
        auto it = output_index.find(pair.output);
        if (it != output_index.end()) states[pair.input] = outputs[it->second].clone();
      }
    }
  }
  return Status::ok();
}

}  // namespace voxrt::builder::calibration
