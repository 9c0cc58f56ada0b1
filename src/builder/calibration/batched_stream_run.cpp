#include "builder/calibration/batched_stream_run.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/thread_pool.h"

namespace voxrt::builder::calibration {
namespace {

// The axis of `value` whose dim is `symbol`, when exactly one is.
std::optional<std::size_t> symbol_axis(const ir::Value& value, const std::string& symbol) {
  std::optional<std::size_t> axis;
  for (std::size_t d = 0; d < value.shape.size(); ++d) {
    if (value.shape[d].is_known() || value.shape[d].symbol != symbol) continue;
    if (axis) return std::nullopt;
    axis = d;
  }
  return axis;
}

// Where the batch is in each graph input and output; empty when some input or output does not
// say (the streams then run one at a time).
struct BatchAxes {
  std::vector<std::size_t> inputs, outputs;
  std::size_t first_input = 0;  // the first graph input that is not a state
  // The most streams one run may take: the first profile's largest batch of the first input
  // that is not a state, when the config has one (the plan was built for those sizes).
  std::int64_t max_batch = std::numeric_limits<std::int64_t>::max();
};

std::optional<BatchAxes> find_batch_axes(const ir::Graph& graph, const BuilderConfig& config) {
  const ir::Value* first = nullptr;
  std::size_t first_input = 0;
  for (std::size_t i = 0; i < graph.inputs.size() && !first; ++i) {
    if (!is_state_input(config.states, graph.inputs[i]->name)) {
      first = graph.inputs[i];
      first_input = i;
    }
  }
  if (!first || first->shape.empty() || first->shape[0].is_known() ||
      first->shape[0].symbol.empty())
    return std::nullopt;
  const std::string& symbol = first->shape[0].symbol;
  BatchAxes axes;
  axes.first_input = first_input;
  for (const ir::Value* v : graph.inputs) {
    const auto axis = symbol_axis(*v, symbol);
    if (!axis) return std::nullopt;
    axes.inputs.push_back(*axis);
  }
  for (const ir::Value* v : graph.outputs) {
    const auto axis = symbol_axis(*v, symbol);
    if (!axis) return std::nullopt;
    axes.outputs.push_back(*axis);
  }
  if (!config.profiles.empty()) {
    auto it = config.profiles.front().inputs.find(first->name);
    if (it != config.profiles.front().inputs.end() && !it->second.max.empty())
      axes.max_batch = std::max<std::int64_t>(1, it->second.max[0]);
  }
  return axes;
}

// Elements before `axis` (outer) and bytes of one step along it (inner) of `dims`.
struct AxisLayout {
  std::int64_t outer = 1;
  std::size_t inner_bytes = 0;
};

AxisLayout layout(const Dims& dims, std::size_t axis, DType dtype) {
  AxisLayout l;
  std::int64_t inner = 1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d < axis) l.outer *= dims[d];
    if (d > axis) inner *= dims[d];
  }
  l.inner_bytes = static_cast<std::size_t>(inner) * dtype_size_bytes(dtype);
  return l;
}

// `parts` one after another along `axis`; every other dim must agree.
Expected<Tensor> concatenate(const std::vector<const Tensor*>& parts, std::size_t axis,
                             const std::string& what) {
  const Tensor& first = *parts.front();
  if (axis >= first.rank())
    return invalid_argument(what, ": batch axis ", axis, " of a tensor of rank ", first.rank());
  Dims dims = first.dims();
  dims[axis] = 0;
  for (const Tensor* t : parts) {
    Dims other = t->dims();
    if (t->dtype() != first.dtype() || other.size() != dims.size())
      return invalid_argument(what, ": streams of one batch give ", dims_to_string(first.dims()),
                              " and ", dims_to_string(t->dims()));
    dims[axis] += other[axis];
    other[axis] = first.dim(axis);
    if (other != first.dims())
      return invalid_argument(what, ": streams of one batch give ", dims_to_string(first.dims()),
                              " and ", dims_to_string(t->dims()), " (only axis ", axis,
                              " may differ)");
  }
  Tensor joined = Tensor::uninitialized(first.dtype(), dims);
  const AxisLayout l = layout(dims, axis, first.dtype());
  auto* out = static_cast<unsigned char*>(joined.raw_data());
  for (std::int64_t o = 0; o < l.outer; ++o) {
    for (const Tensor* t : parts) {
      const std::size_t bytes = static_cast<std::size_t>(t->dim(axis)) * l.inner_bytes;
      if (bytes == 0) continue;
      std::memcpy(out, static_cast<const unsigned char*>(t->raw_data()) + o * bytes, bytes);
      out += bytes;
    }
  }
  return joined;
}

// Rows [begin, begin + count) of `whole` along `axis`, copied.
Tensor slice(const Tensor& whole, std::size_t axis, std::int64_t begin, std::int64_t count) {
  Dims dims = whole.dims();
  dims[axis] = count;
  Tensor part = Tensor::uninitialized(whole.dtype(), dims);
  const AxisLayout l = layout(whole.dims(), axis, whole.dtype());
  const std::size_t whole_bytes = static_cast<std::size_t>(whole.dim(axis)) * l.inner_bytes;
  const std::size_t part_bytes = static_cast<std::size_t>(count) * l.inner_bytes;
  if (part_bytes == 0) return part;
  const auto* in = static_cast<const unsigned char*>(whole.raw_data());
  auto* out = static_cast<unsigned char*>(part.raw_data());
  for (std::int64_t o = 0; o < l.outer; ++o) {
    std::memcpy(out + o * part_bytes, in + o * whole_bytes + begin * l.inner_bytes, part_bytes);
  }
  return part;
}

}  // namespace

Expected<StreamChunks> read_streams(CalibrationSource& source, int count) {
  StreamChunks streams;
  const int n = std::min(count, source.stream_count());
  for (int s = 0; s < n; ++s) {
    VOXRT_ASSIGN_OR_RETURN(std::vector<CalibrationChunk> chunks, source.stream(s));
    streams.push_back(std::move(chunks));
  }
  return streams;
}

Expected<int> run_calibration_streams_batched(const ir::Graph& graph, const runtime::Plan& plan,
                                              const BuilderConfig& config,
                                              const StreamChunks& streams,
                                              const StreamRunOptions& options) {
  ThreadPool pool(1);
  backends::KernelContext context{&pool};
  const GraphOutputRoles roles = graph_output_roles(graph, config);
  const auto& output_index = roles.index_by_name;
  const auto& state_outputs = roles.state_outputs;
  const std::optional<BatchAxes> axes = find_batch_axes(graph, config);
  runtime::PlanWorkspace workspace;
  // Per stream: state input name -> value for its next run.
  std::vector<std::map<std::string, Tensor>> states(streams.size());
  std::size_t longest = 0;
  for (const auto& chunks : streams) longest = std::max(longest, chunks.size());

  // Runs the streams `members` at chunk `r` as one batch.
  const auto run_batch = [&](const std::vector<std::size_t>& members, std::size_t r) -> Status {
    const std::string where = str_cat("calibration chunk ", r, " of stream(s) ", members.front(),
                                      members.size() > 1 ? str_cat("..", members.back()) : "");
    // Each input's value per stream: the chunk's, the stream's state, or zeros on its first run
    // (a deque: the zeros must stay where they are while the others point at them).
    std::vector<std::vector<const Tensor*>> parts(graph.inputs.size());
    std::deque<Tensor> zeros;
    for (std::size_t member : members) {
      const CalibrationChunk& chunk = streams[member][r];
      const auto symbols = chunk_symbols(graph, chunk);
      for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
        const ir::Value& v = *graph.inputs[i];
        if (auto it = chunk.find(v.name); it != chunk.end()) {
          parts[i].push_back(&it->second);
        } else if (auto st = states[member].find(v.name); st != states[member].end()) {
          parts[i].push_back(&st->second);
        } else if (is_state_input(config.states, v.name)) {
          parts[i].push_back(&zeros.emplace_back(zero_state(v, symbols, config)));
        } else {
          return invalid_argument(where, ": no value for input '", v.name, "'");
        }
      }
    }
    std::vector<Tensor> inputs;
    for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
      if (members.size() == 1) {
        inputs.push_back(*parts[i].front());
        continue;
      }
      VOXRT_ASSIGN_OR_RETURN(Tensor joined,
                             concatenate(parts[i], axes->inputs[i],
                                         str_cat(where, ", input '", graph.inputs[i]->name, "'")));
      inputs.push_back(std::move(joined));
    }
    // Each stream's rows along the batch axis, from its first input that is not a state.
    std::vector<std::int64_t> rows;
    for (std::size_t m = 0; m < members.size(); ++m) {
      rows.push_back(axes ? parts[axes->first_input][m]->dim(axes->inputs[axes->first_input]) : 1);
    }
    std::vector<Tensor> outputs;
    VOXRT_RETURN_IF_ERROR(
        plan.execute(inputs, outputs, context, nullptr, &workspace).with_context(where));
    std::int64_t total_rows = 0;
    for (std::int64_t n : rows) total_rows += n;
    for (std::size_t m = 0; m < members.size(); ++m) {
      std::int64_t begin = 0;
      for (std::size_t k = 0; k < m; ++k) begin += rows[k];
      std::vector<Tensor> mine(outputs.size());
      for (std::size_t o = 0; o < outputs.size(); ++o) {
        if (members.size() == 1) {
          mine[o] = outputs[o];
          continue;
        }
        const std::size_t axis = axes->outputs[o];
        if (axis >= outputs[o].rank() || outputs[o].dim(axis) != total_rows) {
          return invalid_argument(where, ": output '", graph.outputs[o]->name, "' is ",
                                  dims_to_string(outputs[o].dims()), ", expected ", total_rows,
                                  " batch rows on axis ", axis, " for ", members.size(),
                                  " streams");
        }
        mine[o] = slice(outputs[o], axis, begin, rows[m]);
      }
      std::vector<const Tensor*> results;
      for (std::size_t o = 0; o < mine.size(); ++o) {
        if (!state_outputs.count(o)) results.push_back(&mine[o]);
      }
      if (options.on_outputs)
        options.on_outputs(static_cast<int>(members[m]), static_cast<int>(r), results);
      for (const auto& pair : config.states) {
        auto it = output_index.find(pair.output);
        if (it != output_index.end())
          states[members[m]][pair.input] =
              members.size() == 1 ? mine[it->second].clone() : std::move(mine[it->second]);
      }
    }
    return Status::ok();
  };

  // Without batch axes every stream runs alone.
  const std::int64_t max_batch = axes && !options.one_stream_at_a_time ? axes->max_batch : 1;
  int executions = 0;
  for (std::size_t r = 0; r < longest; ++r) {
    // The streams still running, grouped by their chunk's dims (a shorter last chunk runs with
    // the other streams' last chunks of its length, or alone), in stream order.
    std::vector<std::pair<std::vector<Dims>, std::vector<std::size_t>>> groups;
    for (std::size_t s = 0; s < streams.size(); ++s) {
      if (r >= streams[s].size()) continue;
      std::vector<Dims> signature;
      for (const ir::Value* v : graph.inputs) {
        auto it = streams[s][r].find(v->name);
        signature.push_back(it == streams[s][r].end() ? Dims{-1} : it->second.dims());
      }
      auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
        return g.first == signature && static_cast<std::int64_t>(g.second.size()) < max_batch;
      });
      if (group == groups.end()) {
        groups.push_back({signature, {s}});
      } else {
        group->second.push_back(s);
      }
    }
    for (const auto& [signature, members] : groups) {
      VOXRT_RETURN_IF_ERROR(run_batch(members, r));
      ++executions;
    }
  }
  return executions;
}

}  // namespace voxrt::builder::calibration
