// voxrt bench: latency percentiles and throughput of an engine in the style of trtexec, with
// an optional per-layer profile.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "commands.h"
#include "runtime/engine_impl.h"
#include "runtime/state_pool.h"
#include "shape_args.h"
#include "thread_check.h"

namespace voxrt::cli {
namespace {

struct BenchArgs {
  std::string engine_path;
  std::vector<std::string> shapes;
  int iterations = 0;
  double duration_s = 3.0;
  double warmup_ms = 200.0;
  int threads = 1;
  bool json = false;
  bool profile = false;
  bool device_time = false;
  bool state_pool = false;
};

double percentile(const std::vector<double>& sorted, double p) {
  const double at = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - static_cast<double>(lo));
}

// Without --shapes, an input takes the first profile's opt shape; an input the profile does not
// name takes its static dims, and for a symbolic dim the size the profile's opt shapes give that
// symbol on another input (the states' "batch" from the features'), as the builder's profiling
// run does.
Expected<Dims> input_dims(const Engine& engine, const TensorInfo& info,
                          const std::map<std::string, Dims>& shapes) {
  auto it = shapes.find(info.name);
  if (it != shapes.end()) return it->second;
  const auto& profiles = engine.impl().contents.profiles;
  if (!profiles.empty() && profiles.front().inputs.count(info.name))
    return profiles.front().inputs.at(info.name).opt;
  std::map<std::string, std::int64_t> symbol_size;
  if (!profiles.empty()) {
    for (const TensorInfo& other : engine.inputs()) {
      auto range = profiles.front().inputs.find(other.name);
      if (range == profiles.front().inputs.end()) continue;
      for (std::size_t d = 0; d < other.dims.size() && d < range->second.opt.size(); ++d) {
        if (other.dims[d] < 0 && d < other.dim_names.size() && !other.dim_names[d].empty())
          symbol_size.emplace(other.dim_names[d], range->second.opt[d]);
      }
    }
  }
  Dims dims;
  for (std::size_t d = 0; d < info.dims.size(); ++d) {
    if (info.dims[d] >= 0) {
      dims.push_back(info.dims[d]);
      continue;
    }
    const std::string name = d < info.dim_names.size() ? info.dim_names[d] : "";
    auto size = symbol_size.find(name);
    if (size == symbol_size.end()) {
      return invalid_argument("input '", info.name, "' dim ", d, " ('", name,
                              "') is dynamic and no profile gives its size: give --shapes ",
                              info.name, ":...");
    }
    dims.push_back(size->second);
  }
  return dims;
}

// Random inputs for `infos` (the engine's inputs, or a state pool's stream inputs).
Expected<std::vector<Tensor>> make_inputs(const Engine& engine,
                                          const std::vector<TensorInfo>& infos,
                                          const std::map<std::string, Dims>& shapes) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<Tensor> inputs;
  for (const auto& info : infos) {
    VOXRT_ASSIGN_OR_RETURN(Dims dims, input_dims(engine, info, shapes));
    Tensor t = Tensor::uninitialized(info.dtype, dims);
    for (std::int64_t i = 0; i < t.element_count(); ++i) {
      if (info.dtype == DType::kF32) {
        t.data<float>()[i] = normal(rng);
      } else if (info.dtype == DType::kI64) {
        t.data<std::int64_t>()[i] = 1;
      } else {
        std::memset(static_cast<char*>(t.raw_data()) + i * dtype_size_bytes(info.dtype), 0,
                    dtype_size_bytes(info.dtype));
      }
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// --state-pool: the pool, its slots (all of them: capacity = batch) and one batch's stream inputs.
struct PoolRun {
  std::unique_ptr<StatePool> pool;
  std::vector<int> slots;
  std::vector<Tensor> stream_inputs;
  // Every engine input, states as zeros at the batch: what --profile and --device-time time.
  std::vector<Tensor> all_inputs;
};

// The batch is the stream inputs' dim 0; state inputs' --shapes are not needed (the pool holds
// the states) and only set the batch of an engine whose every input is a state.
Expected<PoolRun> make_pool_run(const std::shared_ptr<const Engine>& engine,
                                const std::map<std::string, Dims>& shapes) {
  // A one-slot pool first: StatePool::create says why an engine cannot have one, before any
  // complaint about shapes, and names the stream inputs.
  VOXRT_ASSIGN_OR_RETURN(auto probe, StatePool::create(engine, 1));
  const std::vector<TensorInfo> stream_infos = probe->stream_inputs();
  PoolRun run;
  VOXRT_ASSIGN_OR_RETURN(run.stream_inputs, make_inputs(*engine, stream_infos, shapes));
  std::int64_t batch = -1;
  for (std::size_t i = 0; i < run.stream_inputs.size(); ++i) {
    const Tensor& t = run.stream_inputs[i];
    if (t.rank() == 0) {
      return invalid_argument("stream input '", stream_infos[i].name,
                              "' is a scalar; the pool runs batch-first stream inputs");
    }
    if (batch >= 0 && t.dim(0) != batch) {
      return invalid_argument("the stream inputs disagree on the batch (dim 0): '",
                              stream_infos[i].name, "' is ", dims_to_string(t.dims()),
                              ", an earlier one has batch ", batch);
    }
    batch = t.dim(0);
  }
  const auto& infos = engine->inputs();
  auto is_state = [&](const TensorInfo& info) {
    return std::none_of(stream_infos.begin(), stream_infos.end(),
                        [&](const TensorInfo& s) { return s.name == info.name; });
  };
  for (const auto& info : infos) {
    if (batch >= 0) break;
    auto given = shapes.find(info.name);
    if (is_state(info) && given != shapes.end() && !given->second.empty()) batch = given->second[0];
  }
  if (batch < 0) batch = 1;
  if (batch < 1 || batch > (1 << 20))
    return invalid_argument("batch ", batch, " is not in 1..2^20");
  VOXRT_ASSIGN_OR_RETURN(run.pool, StatePool::create(engine, static_cast<int>(batch)));
  for (std::int64_t b = 0; b < batch; ++b) {
    VOXRT_ASSIGN_OR_RETURN(int slot, run.pool->acquire());
    run.slots.push_back(slot);
  }
  std::size_t next_stream = 0;
  for (const auto& info : infos) {
    if (!is_state(info)) {
      run.all_inputs.push_back(run.stream_inputs[next_stream++]);
      continue;
    }
    Dims state_dims = info.dims;  // StatePool::create checked: static but for dim 0
    state_dims[0] = batch;
    run.all_inputs.push_back(Tensor::zeros(info.dtype, state_dims));
  }
  return run;
}

int run_bench(const BenchArgs& args) {
  auto engine = Engine::load_file(args.engine_path);
  if (!engine) {
    std::cerr << "error: " << engine.status().message() << "\n";
    return 1;
  }
  auto shapes = parse_shapes(args.shapes);
  if (!shapes) {
    std::cerr << "error: " << shapes.status().message() << "\n";
    return 2;
  }
  for (const auto& [name, dims] : *shapes) {
    const auto& infos = (*engine)->inputs();
    if (std::none_of(infos.begin(), infos.end(),
                     [&](const TensorInfo& i) { return i.name == name; })) {
      std::string names;
      for (const auto& i : infos) names += (names.empty() ? "" : ", ") + i.name;
      std::cerr << "error: --shapes " << name << ":" << dims_to_string(dims)
                << ": the engine has no input '" << name << "' (its inputs: " << names << ")\n";
      return 2;
    }
  }
  std::vector<Tensor> inputs;  // every engine input: what run, --profile and --device-time take
  std::optional<PoolRun> pool_run;
  if (args.state_pool) {
    auto made = make_pool_run(*engine, *shapes);
    if (!made) {
      std::cerr << "error: --state-pool: " << made.status().message() << "\n";
      return 2;
    }
    inputs = made->all_inputs;
    pool_run = std::move(*made);
  } else {
    auto made = make_inputs(**engine, (*engine)->inputs(), *shapes);
    if (!made) {
      std::cerr << "error: " << made.status().message() << "\n";
      return 2;
    }
    inputs = std::move(*made);
  }
  if (const std::string warning = thread_count_warning(**engine, args.threads); !warning.empty())
    std::cerr << warning << "\n";
  auto context = (*engine)->create_context(args.threads);
  if (!context) {
    std::cerr << "error: " << context.status().message() << "\n";
    return 1;
  }
  if (pool_run) {
    // Device pools plan and capture every batch bucket up to this batch here, as a server does
    // before its first batch; the timed loop below then measures steady state.
    std::vector<Tensor> one_row;
    for (const Tensor& t : pool_run->stream_inputs) {
      Dims row_dims = t.dims();
      row_dims[0] = 1;
      Tensor row = Tensor::uninitialized(t.dtype(), row_dims);
      std::memcpy(row.raw_data(), t.raw_data(), row.size_bytes());
      one_row.push_back(std::move(row));
    }
    Status warmed = pool_run->pool->warm_up(**context, one_row,
                                            static_cast<std::int64_t>(pool_run->slots.size()));
    if (!warmed) {
      std::cerr << "error: --state-pool warm-up: " << warmed.message() << "\n";
      return 1;
    }
  }
  using clock = std::chrono::steady_clock;
  auto one = [&]() -> Expected<double> {
    const auto start = clock::now();
    auto out = pool_run
                   ? pool_run->pool->run_batch(**context, pool_run->slots, pool_run->stream_inputs)
                   : (*context)->run(inputs);
    if (!out) return out.status();
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
  };
  const auto warm_start = clock::now();
  do {
    auto t = one();
    if (!t) {
      std::cerr << "error: " << t.status().message() << "\n";
      return 1;
    }
  } while (std::chrono::duration<double, std::milli>(clock::now() - warm_start).count() <
           args.warmup_ms);

  std::vector<double> times_ms;
  const auto start = clock::now();
  for (;;) {
    auto t = one();
    if (!t) {
      std::cerr << "error: " << t.status().message() << "\n";
      return 1;
    }
    times_ms.push_back(*t);
    const double elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
    if (args.iterations > 0 ? static_cast<int>(times_ms.size()) >= args.iterations
                            : elapsed_s >= args.duration_s)
      break;
  }
  const double wall_s = std::chrono::duration<double>(clock::now() - start).count();
  std::vector<double> sorted = times_ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double t : sorted) mean += t;
  mean /= static_cast<double>(sorted.size());
  double var = 0;
  for (double t : sorted) var += (t - mean) * (t - mean);
  const double cov =
      sorted.size() > 1 ? std::sqrt(var / static_cast<double>(sorted.size() - 1)) / mean : 0;

  nlohmann::json layers = nlohmann::json::array();
  if (args.profile && (*engine)->impl().device_executable) {
    // Device engines: per-node device time from CUDA events (eager run, one stream).
    const auto& executable = *(*engine)->impl().device_executable;
    auto session = executable.create_session();
    auto times = session ? (*session)->run_profiled(inputs, 20)
                         : Expected<std::vector<double>>(session.status());
    if (!times) {
      std::cerr << "error: " << times.status().message() << "\n";
      return 1;
    }
    // The tactics of the profile these shapes fit (engines tuned per profile).
    const auto steps = executable.tactics((*session)->last_profile());
    for (std::size_t i = 0; i < steps.size() && i < times->size(); ++i) {
      layers.push_back({{"name", steps[i].first->name},
                        {"op", std::string(ir::op_name(steps[i].first->op))},
                        {"tactic", steps[i].second},
                        {"median_us", (*times)[i]}});
    }
  } else if (args.profile) {
    std::map<const ir::Node*, std::vector<double>> per_node;
    std::vector<const ir::Node*> order;
    runtime::StepObserver observer = [&](const ir::Node& n, std::span<const Tensor* const>,
                                         std::span<const Tensor* const>, double us) {
      if (!per_node.count(&n)) order.push_back(&n);
      per_node[&n].push_back(us);
    };
    for (int i = 0; i < 20; ++i) {
      auto out = (*context)->impl().run(inputs, &observer);
      if (!out) {
        std::cerr << "error: " << out.status().message() << "\n";
        return 1;
      }
    }
    // The tactics of the plan that ran: with several profiles, the one these shapes fit.
    std::map<const ir::Node*, std::string> tactic_of;
    if (const runtime::Plan* plan = (*context)->impl().last_plan()) {
      for (const auto& [node, name] : plan->tactics()) tactic_of[node] = name;
    }
    for (const ir::Node* n : order) {
      auto v = per_node[n];
      std::sort(v.begin(), v.end());
      auto named = tactic_of.find(n);
      layers.push_back({{"name", n->name},
                        {"op", std::string(ir::op_name(n->op))},
                        {"tactic", named != tactic_of.end()
                                       ? named->second
                                       : n->attrs.get_string(runtime::kTacticNameAttr, "view")},
                        {"median_us", v[v.size() / 2]}});
    }
  }
  // Device engines: the computation alone on the GPU (CUDA events, inputs already there), the
  // number PyTorch's own timing reports; the host latency above adds the copies and the sync.
  std::vector<double> device_sorted;
  if (args.device_time) {
    if (!(*engine)->impl().device_executable) {
      std::cerr << "error: --device-time needs an engine built for a device (--device cuda); "
                   "this one is for the CPU\n";
      return 2;
    }
    auto session = (*engine)->impl().device_executable->create_session();
    auto times = session ? (*session)->time_compute(inputs, static_cast<int>(sorted.size()))
                         : Expected<std::vector<double>>(session.status());
    if (!times) {
      std::cerr << "error: " << times.status().message() << "\n";
      return 1;
    }
    device_sorted = std::move(*times);
    std::sort(device_sorted.begin(), device_sorted.end());
  }
  nlohmann::json j = {
      {"latency_ms",
       {{"min", sorted.front()},
        {"mean", mean},
        {"median", percentile(sorted, 50)},
        {"p90", percentile(sorted, 90)},
        {"p95", percentile(sorted, 95)},
        {"p99", percentile(sorted, 99)},
        {"max", sorted.back()}}},
      {"throughput_per_s", static_cast<double>(sorted.size()) / wall_s},
      {"cov", cov},
      {"iterations", sorted.size()},
      {"threads", args.threads},
      {"mode", pool_run ? "state_pool" : "run"},
  };
  if (pool_run) {
    j["batch"] = pool_run->slots.size();
    j["states_on_device"] = pool_run->pool->states_on_device();
  }
  if (args.profile) j["layers"] = layers;
  if (!device_sorted.empty()) {
    j["device_ms"] = {{"min", device_sorted.front()},
                      {"median", percentile(device_sorted, 50)},
                      {"p99", percentile(device_sorted, 99)},
                      {"max", device_sorted.back()},
                      {"iterations", device_sorted.size()}};
  }
  if (args.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << std::fixed << std::setprecision(3) << "iterations " << sorted.size() << " in "
            << wall_s << " s, threads " << args.threads << "\nlatency ms: min " << sorted.front()
            << "  mean " << mean << "  median " << percentile(sorted, 50) << "  p90 "
            << percentile(sorted, 90) << "  p95 " << percentile(sorted, 95) << "  p99 "
            << percentile(sorted, 99) << "  max " << sorted.back() << "\nthroughput "
            << j["throughput_per_s"].get<double>() << " /s, coefficient of variation " << cov * 100
            << " %\n";
  if (pool_run) {
    std::cout << "state pool: batch " << pool_run->slots.size() << " (padded to "
              << pool_run->pool->padded_batch(static_cast<std::int64_t>(pool_run->slots.size()))
              << "), states on the " << (pool_run->pool->states_on_device() ? "device" : "host")
              << "\n";
  }
  if (!device_sorted.empty()) {
    std::cout << "device ms (compute only, CUDA events): min " << device_sorted.front()
              << "  median " << percentile(device_sorted, 50) << "  p99 "
              << percentile(device_sorted, 99) << "  max " << device_sorted.back() << "\n";
  }
  if (cov > 0.1)
    std::cout << "warning: latency varies by more than 10 %: other load on the machine?\n";
  for (const auto& l : layers) {
    std::cout << "  " << std::left << std::setw(28) << l["name"].get<std::string>().substr(0, 27)
              << std::setw(16) << l["op"].get<std::string>() << std::setw(16)
              << l["tactic"].get<std::string>() << std::right << std::setw(10)
              << l["median_us"].get<double>() << " us\n";
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure an engine's latency and throughput");
  cmd->footer(
      "Warms up, then runs for --duration seconds (or --iterations runs) with random inputs and "
      "prints\n"
      "min/mean/median/p90/p95/p99 latency, throughput and the coefficient of variation.\n"
      "The latency is host wall time of one run: input copy, launch, output copy and sync on a\n"
      "device engine. --device-time adds the device time of the computation alone.\n"
      "--state-pool times what a server runs instead: StatePool::run_batch for a batch of\n"
      "stream slots whose states (the engine's voxrt build --state IN:OUT pairs, batch-first)\n"
      "stay in the runtime's slot pool (on the GPU for a CUDA engine, gathered and scattered\n"
      "inside the CUDA graph), so only the other inputs travel. The batch is their dim 0\n"
      "(--shapes, else the first profile's opt); --shapes of state inputs are ignored. The\n"
      "pool is warmed up first (StatePool::warm_up). With --state-pool, --profile and\n"
      "--device-time still time the computation alone (zero states, no gather/scatter).\n"
      "Examples:\n"
      "  voxrt bench model.engine --shapes features:1x32x80 --threads 2 --json\n"
      "  voxrt bench model.engine --state-pool --shapes features:8x32x80 --json");
  cmd->add_option("engine", args->engine_path, "Engine file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--shapes", args->shapes,
                  "NAME:DIMS[,NAME:DIMS...] for dynamic inputs (default: the first profile's opt)")
      ->delimiter(',');
  cmd->add_option("--iterations", args->iterations,
                  "Timed runs, 1..10000000 (overrides --duration)")
      ->check(CLI::Range(1, 10000000));
  cmd->add_option("--duration", args->duration_s, "Seconds to run, 0.001..86400")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  cmd->add_option("--warmup", args->warmup_ms, "Warm-up milliseconds, 0..3600000")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600000));
  cmd->add_option("--threads", args->threads, "Kernel threads, 1..256")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--profile", args->profile, "Also print the median time of every layer");
  cmd->add_flag("--device-time", args->device_time,
                "Device engines: also time the computation alone on the GPU with CUDA events "
                "(inputs already on the device, no copies), as many runs as the host timing");
  cmd->add_flag("--state-pool", args->state_pool,
                "Time StatePool::run_batch over the engine's state pairs (states stay in the "
                "pool) instead of ExecutionContext::run; JSON adds mode, batch, states_on_device");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, &exit_code] { exit_code = run_bench(*args); });
}

}  // namespace voxrt::cli
