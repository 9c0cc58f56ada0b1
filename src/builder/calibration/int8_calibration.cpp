#include "builder/calibration/int8_calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "backends/cpu/quantized/quantized_kernels.h"
#include "backends/layer_precision.h"
#include "builder/calibration/batched_stream_run.h"
#include "builder/calibration/calibration_cache.h"
#include "builder/calibration/calibration_run.h"
#include "builder/calibration/range_calibrators.h"
#include "ir/graph_walk.h"
#include "runtime/byte_stream.h"
#include "runtime/engine_format.h"
#include "runtime/plan.h"

namespace voxrt::builder::calibration {
namespace {

namespace quantized = backends::cpu::quantized;

struct Candidate {
  ir::Node* node = nullptr;
  bool named_int8 = false;  // --layer-precision NODE:int8 (never moved back automatically)
  std::string input;        // the activation value calibrated (input 0)
};

// The outputs of the runs of a few streams, to compare a partly quantized model with.
struct RecordedOutputs {
  std::vector<std::vector<Tensor>> runs;  // per run, the non-state outputs
  int plan_executions = 0;                // runs of the plan (streams batched)
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct OutputDifference {
  double relative_error = 0;
  double argmax_changed = 0;
};

bool is_weight_layer(const ir::Node& node) {
  const ir::OpFamily family = ir::op_family(node.op);
  return family == ir::OpFamily::kDense || family == ir::OpFamily::kRecurrent;
}

// A dense layer whose result reaches a graph output that is not a streaming state through no
// other weight-bearing layer: it alone sets those outputs (a CTC model's logits). (A state
// output is often a slice of a convolution's result, kept for the next chunk: that does not
// make the convolution a projection.)
bool is_final_projection(const ir::Graph& graph, const ir::Node& node,
                         const std::vector<StatePair>& states) {
  if (ir::op_family(node.op) != ir::OpFamily::kDense) return false;
  std::set<const ir::Value*> outputs;
  for (const ir::Value* v : graph.outputs) {
    const bool state = std::any_of(states.begin(), states.end(),
                                   [&](const StatePair& s) { return s.output == v->name; });
    if (!state) outputs.insert(v);
  }
  std::vector<const ir::Value*> frontier(node.outputs.begin(), node.outputs.end());
  std::set<const ir::Value*> seen;
  while (!frontier.empty()) {
    const ir::Value* v = frontier.back();
    frontier.pop_back();
    if (!v || !seen.insert(v).second) continue;
    if (outputs.count(v)) return true;
    for (const ir::Node* consumer : graph.consumers(v)) {
      if (is_weight_layer(*consumer)) continue;
      frontier.insert(frontier.end(), consumer->outputs.begin(), consumer->outputs.end());
    }
  }
  return false;
}

std::string hex(std::uint64_t v) {
  std::ostringstream out;
  out << std::hex << v;
  return out.str();
}

// What decides the numbers in the cache besides the data: the model, its front end and
// chunking, the builder, and the calibration settings.
std::string cache_key(const ir::Graph& graph, std::uint64_t model_hash, const Int8Config& int8) {
  std::string front_end;
  for (const auto& [key, value] : graph.metadata) {
    if (key.starts_with("voxrt.feature.") || key == "voxrt.chunk_frames" ||
        key == "voxrt.shift_frames" || key == "voxrt.subsampling")
      front_end += str_cat(key, "=", value, "\n");
  }
  return str_cat("model ", hex(model_hash), " front-end ",
                 hex(runtime::fnv1a64(front_end.data(), front_end.size())), " calibrator ",
                 calibrator_name(int8.calibrator), " percentile ", int8.percentile, " final-fp32 ",
                 int8.keep_final_projection_fp32 ? 1 : 0, " max-output-error ",
                 int8.max_output_error, " sensitivity-streams ", int8.sensitivity_streams, " ",
                 runtime::kBuilderVersion);
}

void set_int8(ir::Node& node, const CachedRange& range) {
  node.attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
  node.attrs.set(quantized::kInputScaleAttr, range.quantization.scale);
  node.attrs.set(quantized::kInputZeroPointAttr,
                 static_cast<std::int64_t>(range.quantization.zero_point));
  node.attrs.set(quantized::kInputRangeAttr, std::vector<float>{range.min, range.max});
}

void clear_int8(ir::Node& node, Precision fallback) {
  node.attrs.erase(quantized::kInputScaleAttr);
  node.attrs.erase(quantized::kInputZeroPointAttr);
  node.attrs.erase(quantized::kInputRangeAttr);
  node.attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(fallback));
}

// Whether two recordings hold the same tensors, byte for byte.
bool identical(const RecordedOutputs& a, const RecordedOutputs& b) {
  if (a.runs.size() != b.runs.size()) return false;
  for (std::size_t r = 0; r < a.runs.size(); ++r) {
    if (a.runs[r].size() != b.runs[r].size()) return false;
    for (std::size_t o = 0; o < a.runs[r].size(); ++o) {
      const Tensor& x = a.runs[r][o];
      const Tensor& y = b.runs[r][o];
      if (x.dtype() != y.dtype() || x.dims() != y.dims() ||
          std::memcmp(x.raw_data(), y.raw_data(), x.size_bytes()) != 0)
        return false;
    }
  }
  return true;
}

OutputDifference compare(const RecordedOutputs& reference, const RecordedOutputs& got) {
  double squared = 0, norm = 0;
  std::int64_t rows = 0, changed = 0;
  for (std::size_t r = 0; r < reference.runs.size() && r < got.runs.size(); ++r) {
    for (std::size_t o = 0; o < reference.runs[r].size() && o < got.runs[r].size(); ++o) {
      const Tensor& want = reference.runs[r][o];
      const Tensor& have = got.runs[r][o];
      if (want.dtype() != DType::kF32 || have.dtype() != DType::kF32 || want.dims() != have.dims())
        continue;
      const float* w = want.data<float>();
      const float* h = have.data<float>();
      const std::int64_t count = want.element_count();
      for (std::int64_t i = 0; i < count; ++i) {
        const double d = double{h[i]} - w[i];
        squared += d * d;
        norm += double{w[i]} * w[i];
      }
      const std::int64_t width = want.rank() > 0 ? want.dims().back() : 1;
      if (width < 2) continue;
      for (std::int64_t row = 0; row + width <= count; row += width) {
        ++rows;
        changed += std::max_element(w + row, w + row + width) - (w + row) !=
                   std::max_element(h + row, h + row + width) - (h + row);
      }
    }
  }
  OutputDifference d;
  d.relative_error = norm > 0 ? std::sqrt(squared / norm) : std::sqrt(squared);
  d.argmax_changed = rows > 0 ? static_cast<double>(changed) / rows : 0.0;
  return d;
}

// Runs the graph as it is marked now over `streams` (read once for every run), the streams
// batched unless `batched` is false. The outputs are recorded stream by stream, chunk by chunk, as
// the batch-1 runs recorded them, so compare() sums the same terms in the same order.
Expected<RecordedOutputs> run_marked(const ir::Graph& graph, const BuilderConfig& config,
                                     const StreamChunks& streams, bool batched) {
  VOXRT_ASSIGN_OR_RETURN(auto plan,
                         runtime::Plan::compile(graph, runtime::TacticPolicy::kFirstFastPrepacked));
  std::vector<std::vector<std::vector<Tensor>>> by_stream(streams.size());
  for (std::size_t s = 0; s < streams.size(); ++s) by_stream[s].resize(streams[s].size());
  StreamRunOptions options;
  options.one_stream_at_a_time = !batched;
  options.on_outputs = [&](int stream, int run, const std::vector<const Tensor*>& outputs) {
    std::vector<Tensor>& copies =
        by_stream[static_cast<std::size_t>(stream)][static_cast<std::size_t>(run)];
    for (const Tensor* t : outputs) copies.push_back(t->clone());
  };
  VOXRT_ASSIGN_OR_RETURN(const int executions,
                         run_calibration_streams_batched(graph, *plan, config, streams, options));
  RecordedOutputs recorded;
  recorded.plan_executions = executions;
  for (auto& runs : by_stream) {
    for (auto& outputs : runs) recorded.runs.push_back(std::move(outputs));
  }
  return recorded;
}

}  // namespace

Status calibrate_int8_layers(ir::Graph& graph, std::uint64_t model_hash,
                             const BuilderConfig& config, BuildReport& report,
                             const Int8Target& target) {
  const Int8Config& int8 = config.int8;
  const auto has_int8_kernel = [&](const ir::Node& node) {
    return quantized::int8_candidate(node) &&
           (!target.has_int8_kernel || target.has_int8_kernel(node));
  };
  // Candidates, in execution order.
  std::vector<Candidate> candidates;
  for (ir::Node* node : ir::nodes_with_branches(graph)) {
    const bool named = node->attrs.has(backends::kLayerPrecisionAttr);
    if (backends::layer_precision(*node, config.precision) != Precision::kInt8) continue;
    if (!has_int8_kernel(*node) || !node->input(0)) {
      if (named) {
        report.notes.push_back(str_cat("warning: layer '", node->name, "' (", ir::op_name(node->op),
                                       ") was asked for int8; the ", target.backend,
                                       " backend has INT8 kernels only for ", target.kernels,
                                       ", so it runs in ", precision_name(target.fallback)));
        clear_int8(*node, target.fallback);
      }
      continue;
    }
    // Calibration runs the graph in FP32: no int8 marks until the ranges are known.
    node->attrs.erase(backends::kLayerPrecisionAttr);
    candidates.push_back(Candidate{node, named, node->input(0)->name});
  }
  if (candidates.empty()) {
    if (config.precision == Precision::kInt8) {
      report.notes.push_back(
          str_cat("warning: int8: no layer of this model has INT8 kernels on the ", target.backend,
                  "; it runs in ", precision_name(target.fallback)));
    }
    return Status::ok();
  }

  // A CPU cache's layer choices were made among other candidates than another backend's.
  const std::string key = target.backend == "CPU" ? cache_key(graph, model_hash, int8)
                                                  : str_cat(cache_key(graph, model_hash, int8),
                                                            " target ", target.backend);
  CalibrationSource* source = int8.data.get();
  std::string fingerprint;
  if (source) {
    VOXRT_RETURN_IF_ERROR(
        source->prepare(model_info(graph, config.states)).with_context("calibration data"));
    fingerprint = source->fingerprint();
  }
  std::optional<CalibrationCache> cached;
  if (!int8.cache_path.empty()) {
    VOXRT_ASSIGN_OR_RETURN(cached, CalibrationCache::load(int8.cache_path));
    std::string why_not;
    if (cached && cached->key != key)
      why_not = "it was made for another model, front end or settings";
    if (cached && why_not.empty() && source && cached->data_fingerprint != fingerprint)
      why_not = "the calibration data changed";
    for (const Candidate& c : candidates) {
      if (cached && why_not.empty() && !cached->ranges.count(c.input))
        why_not = str_cat("it has no range for '", c.input, "'");
    }
    if (cached && !why_not.empty()) {
      report.notes.push_back(str_cat("int8: calibration cache ", int8.cache_path, " not used (",
                                     why_not, "); calibrating again"));
      cached.reset();
    }
  }

  CalibrationCache result;
  result.key = key;
  result.data_fingerprint = fingerprint;
  std::map<std::string, Int8LayerReport> layer_reports;  // by node name
  if (cached) {
    result = *cached;
    for (const auto& layer : cached->layers) layer_reports[layer.node] = layer;
    report.notes.push_back(str_cat("int8: ranges and layer precisions from the ",
                                   "calibration cache ", int8.cache_path,
                                   " (calibration skipped)"));
  } else {
    if (!source) {
      return invalid_argument("int8: calibration needs data (--calibration-data DIR: audio for a ",
                              "speech model, or test_data_set_N/input_K.pb tensor sets), or a ",
                              "--calibration-cache made for this model",
                              int8.cache_path.empty() ? "" : " (the one given does not match)");
    }
    // One pass over the data in FP32: histograms of every candidate's activation, and the
    // outputs of the first streams for the sensitivity measurements.
    std::map<std::string, TensorHistogram> histograms;
    std::set<const ir::Node*> observed;
    for (const Candidate& c : candidates) {
      histograms[c.input];
      observed.insert(c.node);
    }
    runtime::StepObserver observer = [&](const ir::Node& node,
                                         std::span<const Tensor* const> inputs,
                                         std::span<const Tensor* const>, double) {
      if (!observed.count(&node) || inputs.empty() || !inputs[0]) return;
      const Tensor& x = *inputs[0];
      if (x.dtype() == DType::kF32) histograms[node.input(0)->name].add(x.span<float>());
    };
    const auto histograms_start = std::chrono::steady_clock::now();
    VOXRT_ASSIGN_OR_RETURN(
        auto plan, runtime::Plan::compile(graph, runtime::TacticPolicy::kFirstFastPrepacked));
    int runs = 0;
    StreamRunOptions options;
    options.observer = &observer;
    options.on_outputs = [&](int, int, const std::vector<const Tensor*>&) { ++runs; };
    VOXRT_RETURN_IF_ERROR(run_calibration_streams(graph, *plan, config, *source, options));
    if (runs == 0) {
      return invalid_argument("int8: the calibration data gave no model runs (", source->describe(),
                              "); recordings shorter than one chunk are skipped");
    }
    for (const auto& [name, histogram] : histograms) {
      const CalibratedRange range = calibrate_range(histogram, int8.calibrator, int8.percentile);
      result.ranges[name] =
          CachedRange{histogram.min(), histogram.max(), range.quantization, range.symmetric};
    }
    report.notes.push_back(str_cat("int8: calibrated ", histograms.size(), " activation(s) on ",
                                   runs, " run(s) of ", source->describe(), " (",
                                   calibrator_name(int8.calibrator), " calibrator), ",
                                   seconds_since(histograms_start), " s"));

    // Decisions and sensitivities.
    const int sensitivity_streams = std::min(int8.sensitivity_streams, source->stream_count());
    const auto sensitivity_start = std::chrono::steady_clock::now();
    int model_runs = 0, plan_executions = 0;
    bool batched = true;
    StreamChunks streams;
    RecordedOutputs reference;
    if (sensitivity_streams > 0) {
      VOXRT_ASSIGN_OR_RETURN(streams, read_streams(*source, sensitivity_streams));
      VOXRT_ASSIGN_OR_RETURN(reference, run_marked(graph, config, streams, true));
      // Batching gives each stream its batch-1 outputs only where every kernel computes a batch
      // row from that row alone; the FP32 reference is run both ways to check it on this model
      // (one run more in 86 for the default model), and the pass runs one stream at a time where
      // they differ.
      VOXRT_ASSIGN_OR_RETURN(RecordedOutputs one_at_a_time,
                             run_marked(graph, config, streams, false));
      model_runs += 2;
      plan_executions += reference.plan_executions + one_at_a_time.plan_executions;
      if (!identical(reference, one_at_a_time)) {
        batched = false;
        reference = std::move(one_at_a_time);
        report.notes.push_back(
            "int8: this model's outputs in a batch of streams differ from one stream at a time; "
            "the per-layer sensitivity runs one stream at a time");
      }
    }
    for (const Candidate& c : candidates) {
      Int8LayerReport layer;
      layer.node = c.node->name;
      layer.int8 = true;
      layer.reason = c.named_int8 ? "named int8" : "calibrated";
      if (!c.named_int8 && int8.keep_final_projection_fp32 &&
          is_final_projection(graph, *c.node, config.states)) {
        layer.int8 = false;
        layer.reason =
            str_cat("final projection (", precision_name(target.fallback), " by default)");
      }
      if (sensitivity_streams > 0) {
        set_int8(*c.node, result.ranges.at(c.input));
        VOXRT_ASSIGN_OR_RETURN(RecordedOutputs alone, run_marked(graph, config, streams, batched));
        clear_int8(*c.node, target.fallback);
        c.node->attrs.erase(backends::kLayerPrecisionAttr);
        ++model_runs;
        plan_executions += alone.plan_executions;
        const OutputDifference d = compare(reference, alone);
        layer.output_error = d.relative_error;
        layer.argmax_changed = d.argmax_changed;
      }
      layer_reports[layer.node] = layer;
    }
    if (int8.max_output_error > 0 && sensitivity_streams > 0) {
      // Most sensitive first back to FP32 until the whole INT8 model is within the limit.
      while (true) {
        for (const Candidate& c : candidates) {
          if (layer_reports[c.node->name].int8) set_int8(*c.node, result.ranges.at(c.input));
        }
        VOXRT_ASSIGN_OR_RETURN(RecordedOutputs all, run_marked(graph, config, streams, batched));
        for (const Candidate& c : candidates) c.node->attrs.erase(backends::kLayerPrecisionAttr);
        ++model_runs;
        plan_executions += all.plan_executions;
        const double error = compare(reference, all).relative_error;
        Int8LayerReport* worst = nullptr;
        for (const Candidate& c : candidates) {
          Int8LayerReport& layer = layer_reports[c.node->name];
          if (layer.int8 && !c.named_int8 && (!worst || layer.output_error > worst->output_error))
            worst = &layer;
        }
        report.notes.push_back(str_cat("int8: output error with the int8 layers as now: ", error,
                                       " (limit ", int8.max_output_error, ")"));
        if (error <= int8.max_output_error || !worst) break;
        worst->int8 = false;
        worst->reason = str_cat("sensitive (alone: output error ", worst->output_error,
                                "; the model's was ", error, ", over ", int8.max_output_error, ")");
      }
    }
    if (sensitivity_streams > 0) {
      std::size_t chunks = 0;
      for (const auto& stream : streams) chunks += stream.size();
      report.notes.push_back(str_cat(
          "int8: per-layer sensitivity: ", model_runs, " run(s) of the model over ", streams.size(),
          " stream(s) of ", chunks, " chunk(s) in all", batched ? ", streams batched" : "", ": ",
          plan_executions, " plan execution(s) where one stream at a time took ",
          static_cast<std::size_t>(model_runs) * chunks, ", ", seconds_since(sensitivity_start),
          " s"));
    }
    for (const Candidate& c : candidates) result.layers.push_back(layer_reports[c.node->name]);
    if (!int8.cache_path.empty()) VOXRT_RETURN_IF_ERROR(result.save(int8.cache_path));
  }

  // The marks the kernels read.
  int int8_layers = 0;
  for (const Candidate& c : candidates) {
    auto it = layer_reports.find(c.node->name);
    Int8LayerReport layer = it != layer_reports.end() ? it->second : Int8LayerReport{};
    layer.node = c.node->name;
    layer.op = ir::op_name(c.node->op);
    if (it == layer_reports.end()) {  // a cache from before this layer existed: int8
      layer.int8 = true;
      layer.reason = "calibrated";
    }
    if (c.named_int8 && !layer.int8) {
      layer.int8 = true;
      layer.reason = "named int8";
    }
    const CachedRange& range = result.ranges.at(c.input);
    layer.input_min = range.min;
    layer.input_max = range.max;
    layer.input_scale = range.quantization.scale;
    layer.input_zero_point = range.quantization.zero_point;
    if (layer.int8) {
      set_int8(*c.node, range);
      ++int8_layers;
    } else {
      clear_int8(*c.node, target.fallback);
    }
    report.int8_layers.push_back(layer);
  }
  report.notes.push_back(str_cat("int8: ", int8_layers, " layer(s) marked int8, ",
                                 candidates.size() - static_cast<std::size_t>(int8_layers),
                                 " kept in ", precision_name(target.fallback)));
  return Status::ok();
}

void report_tuned_int8_layers(const ir::Graph& graph, BuildReport& report) {
  std::map<std::string, const ir::Node*> by_name;
  for (const ir::Node* node : ir::nodes_with_branches(graph)) by_name[node->name] = node;
  for (Int8LayerReport& layer : report.int8_layers) {
    auto it = by_name.find(layer.node);
    if (!layer.int8 || it == by_name.end()) continue;
    if (backends::layer_precision(*it->second, Precision::kFp32) == Precision::kInt8) continue;
    layer.int8 = false;
    layer.reason = str_cat(
        "its ", precision_name(backends::layer_precision(*it->second, Precision::kFp32)),
        " tactic (", it->second->attrs.get_string(runtime::kTacticNameAttr, "?"), ") timed faster");
  }
}

}  // namespace voxrt::builder::calibration
