#include "builder/tactic_selector.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/graph_walk.h"
#include "runtime/plan.h"

namespace voxrt::builder {

Expected<std::vector<Tensor>> make_opt_inputs(const ir::Graph& graph, const BuilderConfig& config,
                                              std::vector<std::string>& warnings) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Symbolic dims shared by several inputs (a "batch" on features and states) take the size
  // the profile gives the first input that has them, so the profiling run is consistent.
  std::map<std::string, std::int64_t> symbol_size;
  if (!config.profiles.empty()) {
    for (const ir::Value* v : graph.inputs) {
      auto it = config.profiles.front().inputs.find(v->name);
      if (it == config.profiles.front().inputs.end()) continue;
      for (std::size_t d = 0; d < v->shape.size() && d < it->second.opt.size(); ++d) {
        if (!v->shape[d].is_known() && !v->shape[d].symbol.empty()) {
          symbol_size.emplace(v->shape[d].symbol, it->second.opt[d]);
        }
      }
    }
  }
  std::vector<Tensor> inputs;
  for (const ir::Value* v : graph.inputs) {
    if (auto given = config.profiling_values.find(v->name);
        given != config.profiling_values.end()) {
      if (given->second.dtype() != v->dtype) {
        return invalid_argument("profiling value for input '", v->name, "' is ",
                                dtype_name(given->second.dtype()), ", the input is ",
                                dtype_name(v->dtype));
      }
      inputs.push_back(given->second.clone());
      continue;
    }
    Dims dims;
    const ShapeRange* range = nullptr;
    if (!config.profiles.empty()) {
      auto it = config.profiles.front().inputs.find(v->name);
      if (it != config.profiles.front().inputs.end()) range = &it->second;
    }
    if (range) {
      dims = range->opt;
    } else {
      for (const ir::Dim& d : v->shape) {
        if (d.is_known()) {
          dims.push_back(d.value);
        } else if (symbol_size.count(d.symbol)) {
          dims.push_back(symbol_size.at(d.symbol));
        } else {
          dims.push_back(1);
          warnings.push_back(
              str_cat("input '", v->name, "' dim '", d.symbol.empty() ? "?" : d.symbol,
                      "' has no profile: tactics are timed with 1 (give --profile)"));
        }
      }
    }
    Tensor t = Tensor::uninitialized(v->dtype, dims);
    for (std::int64_t i = 0; i < t.element_count(); ++i) {
      switch (v->dtype) {
        case DType::kF32: t.data<float>()[i] = normal(rng); break;
        case DType::kF16: t.data<std::uint16_t>()[i] = float_to_half_bits(normal(rng)); break;
        case DType::kBF16: t.data<std::uint16_t>()[i] = float_to_bfloat16_bits(normal(rng)); break;
        // Integer inputs are usually lengths, ids or rates: 1 is valid for all of them.
        case DType::kI64: t.data<std::int64_t>()[i] = 1; break;
        case DType::kI32: t.data<std::int32_t>()[i] = 1; break;
        case DType::kI8: t.data<std::int8_t>()[i] = 1; break;
        case DType::kU8: t.data<std::uint8_t>()[i] = 1; break;
        case DType::kBool: t.data<bool>()[i] = true; break;
      }
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

Expected<ProfilingRun> run_profiling(const ir::Graph& graph, std::span<const Tensor> inputs,
                                     int threads) {
  VOXRT_ASSIGN_OR_RETURN(auto plan,
                         runtime::Plan::compile(graph, runtime::TacticPolicy::kFirstFast));
  ProfilingRun run;
  runtime::StepObserver observer = [&](const ir::Node& node, std::span<const Tensor* const> ins,
                                       std::span<const Tensor* const> outs, double elapsed_us) {
    ProfilingRun::Record r;
    r.node = &node;
    for (const Tensor* t : ins) r.inputs.push_back(t ? *t : Tensor());
    for (const Tensor* t : outs) r.outputs.push_back(t ? *t : Tensor());
    r.elapsed_us = elapsed_us;
    run.records.push_back(std::move(r));
  };
  ThreadPool pool(threads);
  backends::KernelContext context{&pool};
  std::vector<Tensor> outputs;
  VOXRT_RETURN_IF_ERROR(plan->execute(inputs, outputs, context, &observer)
                            .with_context("profiling run at the opt shapes"));
  return run;
}

namespace {

double median_us(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// A candidate whose warm-up run already takes this many times the best median so far is not
// timed further (the naive reference kernels of large GEMMs take seconds a run).
constexpr double kHopelessFactor = 8.0;
// Constant inputs from this size on are timed cold when the model's weights do not fit the
// last-level cache: a run then streams them from memory every call (a decoder step, a chunk of a
// large encoder), and the kernel that is fastest on cached weights need not be fastest there.
constexpr std::int64_t kColdWeightBytes = 64 << 10;

// Pushes the weights out of the caches by reading a buffer twice the cache they could stay in.
void evict_caches() {
  static std::vector<std::uint64_t> buffer(
      static_cast<std::size_t>(2 * backends::cpu::weight_cache_bytes() / 8), 1);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < buffer.size(); i += 8) sum += buffer[i];
  asm volatile("" : : "r"(sum));  // keep the reads
}

std::int64_t constant_bytes(const ir::Node& node) {
  std::int64_t bytes = 0;
  for (const ir::Value* in : node.inputs)
    if (in && in->is_constant()) bytes += static_cast<std::int64_t>(in->constant->size_bytes());
  return bytes;
}

Expected<double> time_tactic(const ir::Node& node, const backends::TacticInfo& tactic,
                             const ProfilingRun::Record& rec, int iterations,
                             backends::KernelContext& context, double best_us, bool cold) {
  VOXRT_ASSIGN_OR_RETURN(auto kernel, backends::cpu::create_kernel(node, tactic.id));
  std::vector<const Tensor*> ins;
  for (const Tensor& t : rec.inputs) ins.push_back(t.is_valid() ? &t : nullptr);
  std::vector<Tensor> outs;
  std::vector<Tensor*> out_ptrs;
  outs.reserve(rec.outputs.size());
  for (const Tensor& t : rec.outputs) {
    if (t.is_valid()) {
      outs.push_back(Tensor::uninitialized(t.dtype(), t.dims()));
      out_ptrs.push_back(&outs.back());
    } else {
      outs.emplace_back();
      out_ptrs.push_back(nullptr);
    }
  }
  const auto warm_up_start = std::chrono::steady_clock::now();
  VOXRT_RETURN_IF_ERROR(kernel->run(ins, out_ptrs, context));  // warm-up: caches, primitives
  const double warm_up_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - warm_up_start)
          .count();
  if (best_us > 0 && warm_up_us > kHopelessFactor * best_us) return warm_up_us;
  std::vector<double> samples;
  for (int i = 0; i < iterations; ++i) {
    if (cold) evict_caches();
    const auto start = std::chrono::steady_clock::now();
    VOXRT_RETURN_IF_ERROR(kernel->run(ins, out_ptrs, context));
    samples.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return median_us(samples);
}

}  // namespace

Status select_tactics(ir::Graph& graph, const ProfilingRun& run, const BuilderConfig& config,
                      TimingCache& cache, BuildReport& report) {
  std::unordered_map<const ir::Node*, const ProfilingRun::Record*> record_of;
  for (const auto& r : run.records) record_of.emplace(r.node, &r);
  ThreadPool pool(config.threads);
  backends::KernelContext context{&pool};
  const std::string fingerprint = backends::cpu::cpu_fingerprint();
  std::int64_t weights = 0;
  for (const ir::Value* value : graph.values())
    if (value->is_constant()) weights += static_cast<std::int64_t>(value->constant->size_bytes());
  const bool weights_stream = weights > backends::cpu::weight_cache_bytes();

  // Nodes of branch graphs are tuned too.
  const std::vector<ir::Node*> nodes = ir::nodes_with_branches(graph);
  int done = 0;
  for (ir::Node* node : nodes) {
    ++done;
    if (node->op == ir::OpKind::kIf) continue;
    const auto tactics = backends::cpu::tactics_for(*node);
    if (tactics.empty())
      continue;  // view ops run without a kernel; unsupported ones failed earlier
    auto rec_it = record_of.find(node);
    const backends::TacticInfo* best = tactics.size() > 1 ? &tactics[1] : &tactics[0];
    double best_us = rec_it != record_of.end() ? rec_it->second->elapsed_us : 0;
    if (config.autotune && rec_it != record_of.end() && tactics.size() > 1) {
      best = nullptr;
      const std::size_t first_timing = report.tactic_timings.size();
      std::vector<const Tensor*> ins;
      for (const Tensor& t : rec_it->second->inputs) ins.push_back(t.is_valid() ? &t : nullptr);
      // The reference kernel (tactic 0) last, so a hopeless one stops after its warm-up run.
      std::vector<const backends::TacticInfo*> order;
      for (std::size_t t = 1; t < tactics.size(); ++t) order.push_back(&tactics[t]);
      order.push_back(&tactics[0]);
      const bool cold = weights_stream && constant_bytes(*node) >= kColdWeightBytes;
      for (const backends::TacticInfo* candidate : order) {
        const auto& tactic = *candidate;
        const std::string key = TimingCache::key(
            *node, ins, tactic, cold ? fingerprint + " cold" : fingerprint, config.threads);
        double us = 0;
        if (auto hit = cache.find(key)) {
          us = *hit;
          ++report.timing_cache_hits;
        } else {
          auto timed = time_tactic(*node, tactic, *rec_it->second, config.timing_iterations,
                                   context, best ? best_us : 0.0, cold);
          if (!timed) {  // a tactic that fails on real data is simply not chosen
            report.tactic_timings.push_back({node->name, tactic.name, -1.0, false});
            continue;
          }
          us = *timed;
          cache.put(key, us);
          ++report.tactics_timed;
        }
        report.tactic_timings.push_back({node->name, tactic.name, us, false});
        // Ties go to the lower id, so the same cache always gives the same plan.
        if (!best || us < best_us || (us == best_us && tactic.id < best->id)) {
          best = &tactic;
          best_us = us;
        }
      }
      if (!best) return internal_error(node->describe(), ": no tactic ran on the profiling inputs");
      for (std::size_t t = first_timing; t < report.tactic_timings.size(); ++t)
        report.tactic_timings[t].chosen = report.tactic_timings[t].tactic == best->name;
    }
    node->attrs.set(runtime::kTacticAttr, static_cast<std::int64_t>(best->id));
    // The first profile timed is profile 0 (what inspect's table shows); later ones keep its note.
    if (rec_it != record_of.end() && !node->attrs.has(runtime::kScratchNoteAttr)) {
      std::vector<Dims> input_dims;
      for (const Tensor& t : rec_it->second->inputs) input_dims.push_back(t.dims());
      const std::string note = backends::cpu::scratch_note(*node, best->id, input_dims);
      if (!note.empty()) node->attrs.set(runtime::kScratchNoteAttr, note);
    }
    node->attrs.set(runtime::kTacticNameAttr, best->name);
    node->attrs.set(runtime::kTimeUsAttr, static_cast<float>(best_us));
    if (config.on_progress) {
      config.on_progress(
          BuildProgress{"autotune", done, static_cast<int>(nodes.size()), node->name});
    }
  }
  return Status::ok();
}

Status cpu_tune_at_profile(ir::Graph& graph, const BuilderConfig& config, std::size_t profile,
                           std::span<const Tensor> opt_inputs, TimingCache& cache,
                           BuildReport& report) {
  auto run = run_profiling(graph, opt_inputs, config.threads);
  if (!run) {
    return run.status().with_context(
        str_cat("profile '", config.profiles[profile].name, "' (number ", profile, ")"));
  }
  // select_tactics times at the first profile's opt shapes: make this profile the first.
  BuilderConfig at_p = config;
  std::swap(at_p.profiles[0], at_p.profiles[profile]);
  if (config.on_progress) {
    // The progress display says which profile's opt shapes the layers are timed at.
    at_p.on_progress = [&config, name = config.profiles[profile].name](BuildProgress progress) {
      progress.detail = str_cat(name, ": ", progress.detail);
      config.on_progress(progress);
    };
  }
  return select_tactics(graph, *run, at_p, cache, report);
}

Status select_profile_tactics(ir::Graph& graph, const BuilderConfig& config, BuildReport& report,
                              const std::function<Status(std::size_t profile)>& tune_at) {
  const std::size_t profiles = config.profiles.size();
  if (profiles < 2) return Status::ok();
  struct Choice {
    std::int64_t id = -1;
    std::string name;
    float time_us = 0;
  };
  const std::vector<ir::Node*> nodes = ir::nodes_with_branches(graph);
  std::map<const ir::Node*, std::vector<Choice>> chosen;  // per node, per profile
  const auto collect = [&] {
    for (const ir::Node* node : nodes) {
      if (!node->attrs.has(runtime::kTacticAttr)) continue;
      chosen[node].push_back({node->attrs.get_int(runtime::kTacticAttr, -1),
                              node->attrs.get_string(runtime::kTacticNameAttr, ""),
                              node->attrs.get_float(runtime::kTimeUsAttr, 0)});
    }
  };
  collect();  // profile 0, chosen before this call
  for (std::size_t p = 1; p < profiles; ++p) {
    const std::size_t first_timing = report.tactic_timings.size();
    VOXRT_RETURN_IF_ERROR(tune_at(p));
    for (std::size_t t = first_timing; t < report.tactic_timings.size(); ++t)
      report.tactic_timings[t].profile = static_cast<int>(p);
    collect();
  }
  for (ir::Node* node : nodes) {
    auto it = chosen.find(node);
    if (it == chosen.end()) continue;
    const std::vector<Choice>& per_profile = it->second;
    // voxrt.tactic keeps profile 0's choice (the rounds above overwrote it).
    node->attrs.set(runtime::kTacticAttr, per_profile[0].id);
    node->attrs.set(runtime::kTacticNameAttr, per_profile[0].name);
    node->attrs.set(runtime::kTimeUsAttr, per_profile[0].time_us);
    if (per_profile.size() != profiles) continue;  // not tuned at every profile: profile 0's
    std::vector<std::int64_t> ids;
    std::vector<std::string> names;
    std::vector<float> times;
    for (const Choice& c : per_profile) {
      ids.push_back(c.id);
      names.push_back(c.name);
      times.push_back(c.time_us);
    }
    node->attrs.set(runtime::kProfileTacticsAttr, ids);
    node->attrs.set(runtime::kProfileTacticNamesAttr, names);
    node->attrs.set(runtime::kProfileTimesUsAttr, times);
  }
  return Status::ok();
}

runtime::MemoryPlanRecord plan_memory(const ir::Graph& graph, const ProfilingRun& run) {
  // Lifetimes of top-level intermediates in execution order, then greedy best-fit placement of
  // the largest first: the arena a static-shape executor would need at the opt shapes.
  struct Interval {
    const ir::Value* value;
    std::uint64_t bytes;
    int first, last;
    std::uint64_t offset = 0;
  };
  std::unordered_map<const ir::Value*, std::size_t> interval_of;
  std::vector<Interval> intervals;
  int step = 0;
  const auto top_nodes = graph.nodes();
  std::unordered_map<const ir::Node*, bool> is_top;
  for (auto* n : top_nodes) is_top[n] = true;
  for (const auto& rec : run.records) {
    if (!is_top.count(rec.node)) continue;
    for (const ir::Value* in : rec.node->inputs) {
      auto it = in ? interval_of.find(in) : interval_of.end();
      if (it != interval_of.end()) intervals[it->second].last = step;
    }
    for (std::size_t i = 0; i < rec.node->outputs.size(); ++i) {
      const ir::Value* out = rec.node->outputs[i];
      if (!out || i >= rec.outputs.size() || !rec.outputs[i].is_valid()) continue;
      interval_of[out] = intervals.size();
      const int last = graph.is_graph_output(out) ? 1 << 30 : step;
      intervals.push_back({out, (rec.outputs[i].size_bytes() + 63) / 64 * 64, step, last});
    }
    ++step;
  }
  runtime::MemoryPlanRecord plan;
  std::vector<std::size_t> order(intervals.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return intervals[a].bytes > intervals[b].bytes; });
  std::vector<std::size_t> placed;
  for (std::size_t idx : order) {
    Interval& cur = intervals[idx];
    plan.unplanned_bytes += cur.bytes;
    // Collect overlapping placed blocks sorted by offset and take the first gap that fits.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;
    for (std::size_t p : placed) {
      const Interval& o = intervals[p];
      if (o.first <= cur.last && cur.first <= o.last)
        busy.emplace_back(o.offset, o.offset + o.bytes);
    }
    std::sort(busy.begin(), busy.end());
    std::uint64_t offset = 0;
    for (auto [b, e] : busy) {
      if (offset + cur.bytes <= b) break;
      offset = std::max(offset, e);
    }
    cur.offset = offset;
    plan.peak_bytes = std::max(plan.peak_bytes, offset + cur.bytes);
    placed.push_back(idx);
  }
  for (const auto& i : intervals) plan.offsets.emplace_back(i.value->name, i.offset);
  for (const ir::Value* v : graph.values()) {
    if (v->constant) plan.weights_bytes += v->constant->size_bytes();
  }
  return plan;
}

}  // namespace voxrt::builder
