"""voxrt's CUDA engines against PyTorch on the same GPU, same weights (issue 5).

For each case: build the DS2 model in PyTorch (definitions of shared/bench/torch_ds2_baseline.py),
export it to ONNX, build the voxrt engine with --device cuda, check that voxrt's outputs agree
with PyTorch's, then time, interleaved over rounds:
  torch eager       (CUDA events around model(x); inputs already on the GPU),
  torch CUDA graph  (torch.cuda.CUDAGraph replay, static inputs),
  voxrt             (`voxrt bench --json`: host wall time of ExecutionContext::run, which includes
                     the host->device input copy, one CUDA graph launch, the device->host copy
                     and the synchronize), and for CUDA engines also `--device-time`: the
                     computation alone between CUDA events, inputs already on the GPU, the
                     same span PyTorch's timing covers (reported as voxrt_device, with its
                     own ratios; the host-wall ratios stay as the stricter twin),
  voxrt state pool  (GRU chunk cases only; `voxrt bench --state-pool --json`: host wall time of
                     StatePool::run_batch, what a server runs: the GRU state stays in the
                     runtime's slot pool, on the GPU for a CUDA engine, gathered and scattered
                     inside the CUDA graph, so only x travels to the device and logp back.
                     The pool needs batch-first states and nn.GRU's h0 is [layers, batch,
                     hidden], so this times a second engine built with --state h0:hn from
                     BatchFirstStateDS2 (same weights, h0/hn as [batch, layers, hidden],
                     transposed inside the graph), checked against PyTorch like the others.
                     PyTorch's timings stay those of the unchanged model: the transposes are
                     voxrt's cost only. Reported as voxrt_pool {p50, p99, p99_over_p50},
                     pool_speedup_vs_eager / _vs_graph, voxrt_pool_items_per_s,
                     pool_states_on_device, pool_rel_err / pool_agree / pool_build_s; skipped
                     (voxrt_pool_skipped) when the time budget runs short).
Cases: (1) BiLSTM 1024x5, 2 s of audio, batch 1, fp32 and fp16; (2) uni-GRU 512x5 streaming
chunk of 16 frames + GRU state, batch 1 (p50/p99); (3) the same at batch 256, fp16 throughput.
Every build and timing stays inside --budget-s (the GRU cases build two engines per precision).
Writes one JSON line per measurement to OUT/bench.json as it goes and prints a table last.

  python3 bench/gpu/bench_gpu.py --voxrt .device/bin/voxrt --out $OUT [--iters 50] [--rounds 2]
  python3 bench/gpu/bench_gpu.py --voxrt build/bin/voxrt --out /tmp/x --cpu-dry-run   (no GPU:
      tiny models, voxrt --device cpu, torch on the CPU: checks the script's plumbing only)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn


class DS2(nn.Module):
    def __init__(self, bidir=True, hidden=1024, layers=5, rnn=nn.LSTM, nfreq=161, nclass=29):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 32, (41, 11), (2, 2), (20, 5)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20),
            nn.Conv2d(32, 32, (21, 11), (2, 1), (10, 5)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20))
        f = (nfreq + 2 * 20 - 41) // 2 + 1
        f = (f + 2 * 10 - 21) // 2 + 1
        self.rnn = rnn(32 * f, hidden, layers, batch_first=True, bidirectional=bidir)
        self.fc = nn.Linear(hidden * (2 if bidir else 1), nclass)

    def features(self, x):
        y = self.conv(x)
        b, c, f, t = y.shape
        return y.view(b, c * f, t).transpose(1, 2)

    def forward(self, x):  # x: B, 1, F, T
        y, _ = self.rnn(self.features(x))
        return self.fc(y).log_softmax(-1)


class StreamingDS2(DS2):
    """One streaming chunk: features of a 16-frame chunk, the GRU state in and out."""

    def forward(self, x, h0):
        y, hn = self.rnn(self.features(x), h0)
        return self.fc(y).log_softmax(-1), hn


class BatchFirstStateDS2(nn.Module):
    """A StreamingDS2 (same weights) with its GRU state batch-first, for voxrt's state pool only:
    the pool holds states as [batch, ...], nn.GRU takes h0 as [layers, batch, hidden]. h0 comes in
    as [batch, layers, hidden] and hn goes out the same way; the two transposes are in the exported
    graph, so voxrt pays for them and PyTorch (timed on the unchanged model) does not."""

    def __init__(self, streaming):
        super().__init__()
        self.streaming = streaming

    def forward(self, x, h0):
        logp, hn = self.streaming(x, h0.transpose(0, 1).contiguous())
        return logp, hn.transpose(0, 1)


def init_weights(model):
    torch.manual_seed(0)
    for p in model.parameters():
        nn.init.uniform_(p, -0.05, 0.05)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


def summary(times_ms):
    return {"p50": percentile(times_ms, 50), "p90": percentile(times_ms, 90),
            "p99": percentile(times_ms, 99), "min": min(times_ms), "n": len(times_ms)}


def time_torch(fn, iters, device):
    if device == "cpu":
        ts = []
        for _ in range(iters):
            t = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t) * 1e3)
        return ts
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        ts.append(start.elapsed_time(end))
    return ts


def torch_graph(model, inputs):
    """A replay function for model(*inputs) captured into a CUDA graph (static inputs)."""
    static = [x.clone() for x in inputs]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(3):
            model(*static)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        model(*static)
    return graph.replay


def export_onnx(model, inputs, names, out_names, path):
    """The TorchScript exporter at opset 17 (the shapes are static; bench/gpu/ncu_kernels.sh uses it too)."""
    args = (model.cpu(), tuple(x.cpu() for x in inputs), path)
    kw = dict(input_names=names, output_names=out_names, opset_version=17)
    try:
        torch.onnx.export(*args, **kw, dynamo=False)  # torch >= 2.9 defaults to dynamo
    except TypeError:
        torch.onnx.export(*args, **kw)


def write_pb(path, array, name):
    from onnx import numpy_helper
    t = numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def read_pb(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def rel_err(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if not np.all(np.isfinite(a)):
        return float("inf")
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


class Bench:
    def __init__(self, args):
        self.args = args
        self.device = "cpu" if args.cpu_dry_run else "cuda"
        self.voxrt_device = "cpu" if args.cpu_dry_run else "cuda"
        self.work = tempfile.mkdtemp(prefix="voxrt_gpu_bench_")
        self.results_path = os.path.join(args.out, "bench.json")
        self.rows = []
        self.t0 = time.time()

    def left_s(self):
        return self.args.budget_s - (time.time() - self.t0)

    def record(self, **row):
        row["elapsed_s"] = round(time.time() - self.t0, 1)
        self.rows.append(row)
        with open(self.results_path, "a") as f:
            f.write(json.dumps(row) + "\n")
        print("RESULT", json.dumps(row), flush=True)

    def voxrt(self, *cmd, timeout=120, env=None):
        full = [self.args.voxrt, *cmd]
        p = subprocess.run(full, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, **(env or {})))
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(full)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
        self.last_warnings = [l[:300] for l in p.stderr.splitlines() if "warning" in l][:3]
        return p.stdout

    def build(self, name, onnx_path, profiles, precision, states=(), env=None):
        engine = os.path.join(self.work, f"{name}_{precision}.engine")
        cmd = ["build", "--onnx", onnx_path, "--engine", engine, "--device", self.voxrt_device,
               "--threads", str(self.args.build_threads), "--timing-iterations", "20",
               "--timing-cache", os.path.join(self.work, "cuda.cache"), "--json"]
        if self.voxrt_device == "cuda":
            cmd += ["--precision", precision]
        for p in profiles:
            cmd += ["--profile", p]
        for pair in states:
            cmd += ["--state", pair]
        t = time.time()
        report = self.voxrt(*cmd, timeout=max(30, int(self.left_s())), env=env)
        build_s = time.time() - t
        inspect = self.voxrt("inspect", engine, env=env)  # opt-in tactics load only with env
        with open(os.path.join(self.args.out, "inspect.txt"), "a") as f:
            f.write(f"==== {name} {precision} (build {build_s:.1f} s)\n{inspect}\n")
        # Every autotuning candidate's time (which tactics lost, and by how much).
        try:
            timings = json.loads(report).get("tactic_timings", [])
        except ValueError:
            timings = []
        with open(os.path.join(self.args.out, "tactic_timings.txt"), "a") as f:
            f.write(f"==== {name} {precision}\n")
            for t in timings:
                us = "-" if t["time_us"] is None else f"{t['time_us']:.1f}"
                f.write(f"{t['node']:<32} {t['tactic']:<34} {us:>9}{'  *' if t['chosen'] else ''}\n")
        return engine, build_s, report

    def voxrt_outputs(self, engine, arrays, names, env=None):
        d = tempfile.mkdtemp(dir=self.work)
        os.makedirs(os.path.join(d, "out"))
        for i, (a, n) in enumerate(zip(arrays, names)):
            write_pb(os.path.join(d, f"input_{i}.pb"), a, n)
        self.voxrt("run", engine, "--inputs", d, "--outputs", os.path.join(d, "out"), env=env)
        outs, i = [], 0
        while os.path.exists(os.path.join(d, "out", f"output_{i}.pb")):
            outs.append(read_pb(os.path.join(d, "out", f"output_{i}.pb")))
            i += 1
        return outs

    def voxrt_bench(self, engine, shapes, iters, profile=False, env=None, state_pool=False):
        extra = ["--profile"] if profile else []
        if state_pool:  # StatePool::run_batch: only the stream inputs travel
            extra.append("--state-pool")
        elif self.device == "cuda":
            extra.append("--device-time")
        out = self.voxrt("bench", engine, "--shapes", shapes, "--iterations", str(iters),
                         "--warmup", "200", "--json", *extra, env=env)
        return json.loads(out)

    # Code written in sessions without a device stays opt-in until it has run on one; each
    # switch is built and timed on the batch-256 chunk on its own, then all together.
    OPT_INS = {
        "persistent_tc": {"VOXRT_CUDA_PERSISTENT_TC": "1"},  # recurrent tactic 7
        "cudnn_graph": {"VOXRT_CUDA_CUDNN_GRAPH": "1"},  # conv tactics cudnn_graph_0..3
        "step_graph_timing": {"VOXRT_CUDA_STEP_GRAPH_TIMING": "1"},  # autotuner timing
        "rnn_stack": {"VOXRT_CUDA_RNN_STACK": "1"},  # GRU layers as one cuDNN call, forced
    }

    def opt_in_ab(self, label, env, name, onnx_path, profiles, precision, shapes, inputs,
                  in_names, ref, tol):
        """The same case built with opt-in switches `env` set: its outputs against PyTorch's,
        then device and host time and the tactics chosen, so one device call both checks the
        code and says whether it wins."""
        if self.left_s() < 30:
            return {"skipped": "out of time budget"}
        try:
            engine, build_s, _ = self.build(f"{name}_{label}", onnx_path, profiles,
                                            precision, env=env)
            outs = self.voxrt_outputs(engine, [x.numpy() for x in inputs], in_names, env=env)
            errs = [rel_err(o, r) for o, r in zip(outs, ref)]
            result = {"build_s": round(build_s, 2), "rel_err": errs,
                      "agree": len(outs) == len(ref) and all(e <= tol for e in errs)}
            bench = self.voxrt_bench(engine, shapes, self.args.iters, profile=True, env=env)
            result["p50"] = bench["latency_ms"]["median"]
            if "device_ms" in bench:
                result["device_p50"] = bench["device_ms"]["median"]
            result["rnn_tactics"] = sorted({l["tactic"] for l in bench.get("layers", [])
                                            if l["op"] == "GRU"})
            result["conv_tactics"] = [l["tactic"] for l in bench.get("layers", [])
                                      if "Conv" in l["op"]]
            result["layers_sum_us"] = round(sum(l["median_us"]
                                                for l in bench.get("layers", [])), 1)
            return result
        except Exception as e:  # a failing opt-in tactic must not hide the case's numbers
            return {"error": str(e)[-1500:]}

    def pool_engine(self, name, pool, pool_onnx, precision, ref, tol):
        """Builds the state-pool twin of a case (pool: see run()) and checks its outputs against
        PyTorch's; returns the engine (None when skipped or failed) and the row's pool_* fields."""
        if self.left_s() < 20:
            return None, {"voxrt_pool_skipped": "out of time budget"}
        try:
            engine, build_s, _ = self.build(f"{name}_pool", pool_onnx, pool["profiles"], precision,
                                            states=pool["states"])
            outs = self.voxrt_outputs(engine, [x.numpy() for x in pool["inputs"]], pool["names"])
            pool_ref = pool["ref_map"](ref)
            errs = [rel_err(o, r) for o, r in zip(outs, pool_ref)]
            agree = len(outs) == len(pool_ref) and all(e <= tol for e in errs)
            return engine, {"pool_build_s": round(build_s, 2), "pool_rel_err": errs,
                            "pool_agree": agree}
        except Exception as e:  # the pool twin failing must not hide the case's other numbers
            return None, {"voxrt_pool_error": str(e)[-1000:]}

    def case(self, name, model, inputs, in_names, out_names, profiles, shapes, precisions,
             per_chunk_items=1, pool=None):
        if self.left_s() < 20:
            self.record(case=name, skipped="out of time budget")
            return
        onnx_path = os.path.join(self.work, f"{name}.onnx")
        export_onnx(model, inputs, in_names, out_names, onnx_path)
        if pool:  # before model.to(device): export_onnx moves the shared weights to the CPU
            pool_onnx = os.path.join(self.work, f"{name}_pool.onnx")
            export_onnx(pool["model"], pool["inputs"], pool["names"], out_names, pool_onnx)
        dev_model = model.to(self.device)
        dev_inputs = [x.to(self.device) for x in inputs]
        with torch.no_grad():
            ref = dev_model(*dev_inputs)
        ref = ref if isinstance(ref, tuple) else (ref,)
        ref = [r.float().cpu().numpy() for r in ref]
        for precision in precisions:
            if self.left_s() < 15:
                self.record(case=name, precision=precision, skipped="out of time budget")
                continue
            try:
                engine, build_s, report = self.build(name, onnx_path, profiles, precision)
                try:
                    warnings = [w[:400] for w in json.loads(report).get("rewrites", [])
                                if w.startswith("warning")]
                except ValueError:
                    warnings = ["(unparsed build report)"]
                outs = self.voxrt_outputs(engine, [x.numpy() for x in inputs], in_names)
                errs = [rel_err(o, r) for o, r in zip(outs, ref)]
                tol = 1e-3 if precision in ("fp32", "tf32") else 3e-2
                agree = len(outs) == len(ref) and all(e <= tol for e in errs)
                pool_engine, pool_row = None, {}
                if pool:
                    pool_engine, pool_row = self.pool_engine(name, pool, pool_onnx, precision, ref,
                                                             tol)
                # The torch peer at the same precision.
                half = precision == "fp16" and self.device == "cuda"
                tm = dev_model.half() if half else dev_model
                ti = [x.half() if half and x.is_floating_point() else x for x in dev_inputs]
                with torch.no_grad():
                    eager_fn = lambda: tm(*ti)  # noqa: E731
                    graph_fn = torch_graph(tm, ti) if self.device == "cuda" else None
                    eager, graphed, vox, pooled = [], [], [], []
                    for r in range(self.args.rounds):
                        eager += time_torch(eager_fn, self.args.iters, self.device)
                        # The first round also reports per-layer device times (CUDA events).
                        vox += [self.voxrt_bench(engine, shapes, self.args.iters, profile=r == 0)]
                        bench_warnings = getattr(self, "last_warnings", [])
                        if pool_engine:
                            try:
                                pooled += [self.voxrt_bench(pool_engine, pool["shapes"],
                                                            self.args.iters, state_pool=True)]
                            except Exception as e:
                                pool_row["voxrt_pool_error"] = str(e)[-1000:]
                                pool_engine, pooled = None, []
                        if graph_fn:
                            graphed += time_torch(graph_fn, self.args.iters, self.device)
                if half:
                    dev_model.float()
                vox_p50 = float(np.median([v["latency_ms"]["median"] for v in vox]))
                vox_p99 = float(max(v["latency_ms"]["p99"] for v in vox))
                row = dict(case=name, precision=precision, build_s=round(build_s, 2),
                           rel_err=errs, agree=agree, torch_eager=summary(eager),
                           voxrt={"p50": vox_p50, "p99": vox_p99,
                                  "p99_over_p50": vox_p99 / vox_p50},
                           speedup_vs_eager=summary(eager)["p50"] / vox_p50,
                           items_per_chunk=per_chunk_items, build_warnings=warnings,
                           voxrt_items_per_s=per_chunk_items / vox_p50 * 1e3,
                           torch_eager_items_per_s=per_chunk_items / summary(eager)["p50"] * 1e3)
                layers = sorted(vox[0].get("layers", []), key=lambda l: -l["median_us"])
                row["layers_top"] = [(l["name"], l["op"], l["tactic"], round(l["median_us"], 1))
                                     for l in layers[:12]]
                row["layers_sum_us"] = round(sum(l["median_us"] for l in layers), 1)
                row["bench_warnings"] = bench_warnings  # e.g. a CUDA graph that failed to capture
                if "stream16_b1" in name:  # what the CUDA graph buys: the same engine without it
                    nog = self.voxrt_bench(engine, shapes, self.args.iters,
                                           env={"VOXRT_CUDA_GRAPHS": "0"})
                    row["voxrt_no_graph_p50"] = nog["latency_ms"]["median"]
                    # ... and what the copy kernel for small transfers buys (one memcpy each).
                    noz = self.voxrt_bench(engine, shapes, self.args.iters,
                                           env={"VOXRT_CUDA_ZERO_COPY": "0"})
                    row["voxrt_no_zero_copy_p50"] = noz["latency_ms"]["median"]
                if self.device == "cuda" and precision in ("fp16", "bf16") and "stream16_b256" in name:
                    every = {}
                    for label, env in self.OPT_INS.items():
                        every.update(env)
                        row[f"voxrt_{label}"] = self.opt_in_ab(
                            label, env, name, onnx_path, profiles, precision, shapes, inputs,
                            in_names, ref, tol)
                    row["voxrt_all_opt_ins"] = self.opt_in_ab(
                        "all_opt_ins", every, name, onnx_path, profiles, precision, shapes,
                        inputs, in_names, ref, tol)
                if all("device_ms" in v for v in vox):
                    dev_p50 = float(np.median([v["device_ms"]["median"] for v in vox]))
                    dev_p99 = float(max(v["device_ms"]["p99"] for v in vox))
                    row["voxrt_device"] = {"p50": dev_p50, "p99": dev_p99,
                                           "p99_over_p50": dev_p99 / dev_p50}
                    row["device_speedup_vs_eager"] = summary(eager)["p50"] / dev_p50
                    row["voxrt_device_items_per_s"] = per_chunk_items / dev_p50 * 1e3
                    if graphed:
                        row["device_speedup_vs_graph"] = summary(graphed)["p50"] / dev_p50
                if graphed:
                    row["torch_graph"] = summary(graphed)
                    row["speedup_vs_graph"] = summary(graphed)["p50"] / vox_p50
                if pooled:  # voxrt bench --state-pool on the batch-first twin, same rounds
                    pool_p50 = float(np.median([v["latency_ms"]["median"] for v in pooled]))
                    pool_p99 = float(max(v["latency_ms"]["p99"] for v in pooled))
                    row["voxrt_pool"] = {"p50": pool_p50, "p99": pool_p99,
                                         "p99_over_p50": pool_p99 / pool_p50}
                    row["pool_speedup_vs_eager"] = summary(eager)["p50"] / pool_p50
                    if graphed:
                        row["pool_speedup_vs_graph"] = summary(graphed)["p50"] / pool_p50
                    row["voxrt_pool_items_per_s"] = per_chunk_items / pool_p50 * 1e3
                    row["pool_batch"] = pooled[0]["batch"]
                    row["pool_states_on_device"] = pooled[0]["states_on_device"]
                row.update(pool_row)
                self.record(**row)
            except Exception as e:  # keep going: one failing case must not hide the others
                if half_model_is_half(dev_model):
                    dev_model.float()
                self.record(case=name, precision=precision, error=str(e)[-2000:])

    def run(self):
        a = self.args
        small = a.cpu_dry_run
        hidden_l, hidden_g, layers = (64, 64, 2) if small else (1024, 512, 5)
        torch.manual_seed(1)
        # (1) BiLSTM 1024x5, 2 s of audio (200 frames), batch 1.
        x = torch.randn(1, 1, 161, 200)
        m = init_weights(DS2(hidden=hidden_l, layers=layers))
        self.case("bilstm1024x5_2s_b1", m, [x], ["x"], ["y"], ["x:1x1x161x200/1x1x161x200/1x1x161x200"],
                  "x:1x1x161x200", ["fp32", "fp16"] if not small else ["fp32"])
        # (2) uni-GRU 512x5 streaming: 16 frames + state, batch 1.
        for batch, precisions in ((1, ["fp32", "fp16"]), (256, ["fp16"])):
            if small and batch > 1:
                batch = 4
            g = init_weights(StreamingDS2(bidir=False, hidden=hidden_g, layers=layers, rnn=nn.GRU))
            xs = torch.randn(batch, 1, 161, 16)
            h0 = torch.randn(layers, batch, hidden_g) * 0.1
            shp = f"x:{batch}x1x161x16,h0:{layers}x{batch}x{hidden_g}"
            x_prof = f"x:{batch}x1x161x16/{batch}x1x161x16/{batch}x1x161x16"
            prof = [x_prof,
                    f"h0:{layers}x{batch}x{hidden_g}/{layers}x{batch}x{hidden_g}/{layers}x{batch}x{hidden_g}"]
            # The state-pool twin: the same weights with h0/hn batch-first, built with --state
            # h0:hn and timed with `voxrt bench --state-pool` (only x travels; the pool keeps h0).
            bf = f"{batch}x{layers}x{hidden_g}"
            # eval(): the exporter restores the wrapper's mode on exit, recursively, into g too.
            pool = dict(model=BatchFirstStateDS2(g).eval(),
                        inputs=[xs, h0.transpose(0, 1).contiguous()], names=["x", "h0"],
                        profiles=[x_prof, f"h0:{bf}/{bf}/{bf}"], states=["h0:hn"],
                        shapes=f"x:{batch}x1x161x16",
                        ref_map=lambda ref: [ref[0], ref[1].transpose(1, 0, 2)])
            self.case(f"gru512x5_stream16_b{batch}", g, [xs, h0], ["x", "h0"], ["logp", "hn"], prof,
                      shp, precisions if not small else ["fp32"], per_chunk_items=batch, pool=pool)
        self.table()

    def table(self):
        print("\ncase                         prec  agree  build_s  torch_eager_p50  torch_graph_p50  "
              "voxrt_p50  voxrt_p99/p50  x_eager  x_graph  dev_p50  dev_p99/p50  dev_x_eager  "
              "dev_x_graph  pool_agree  pool_p50  pool_p99/p50  pool_x_eager  pool_x_graph  "
              "pool_items/s  pool_on_dev")
        for r in self.rows:
            if "voxrt" not in r:
                print(f"{r['case']:<28} {r.get('precision', ''):<5} {r.get('error', r.get('skipped', ''))[:300]}")
                continue
            tg = r.get("torch_graph", {}).get("p50", float("nan"))
            print(f"{r['case']:<28} {r['precision']:<5} {str(r['agree']):<6} {r['build_s']:>7.1f}  "
                  f"{r['torch_eager']['p50']:>15.3f}  {tg:>15.3f}  {r['voxrt']['p50']:>9.3f}  "
                  f"{r['voxrt']['p99_over_p50']:>13.2f}  {r['speedup_vs_eager']:>7.2f}  "
                  f"{r.get('speedup_vs_graph', float('nan')):>7.2f}  "
                  f"{r.get('voxrt_device', {}).get('p50', float('nan')):>7.3f}  "
                  f"{r.get('voxrt_device', {}).get('p99_over_p50', float('nan')):>11.2f}  "
                  f"{r.get('device_speedup_vs_eager', float('nan')):>11.2f}  "
                  f"{r.get('device_speedup_vs_graph', float('nan')):>11.2f}  "
                  f"{str(r.get('pool_agree', '-')):<10}  "
                  f"{r.get('voxrt_pool', {}).get('p50', float('nan')):>8.3f}  "
                  f"{r.get('voxrt_pool', {}).get('p99_over_p50', float('nan')):>12.2f}  "
                  f"{r.get('pool_speedup_vs_eager', float('nan')):>12.2f}  "
                  f"{r.get('pool_speedup_vs_graph', float('nan')):>12.2f}  "
                  f"{r.get('voxrt_pool_items_per_s', float('nan')):>12.0f}  "
                  f"{str(r.get('pool_states_on_device', '-')):<11}"
                  + (f"  pool: {(r.get('voxrt_pool_error') or r.get('voxrt_pool_skipped'))[:200]}"
                     if r.get('voxrt_pool_error') or r.get('voxrt_pool_skipped') else ""))


def half_model_is_half(model):
    return next(model.parameters()).dtype == torch.float16


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--voxrt", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=110)
    p.add_argument("--build-threads", type=int, default=8)
    p.add_argument("--cpu-dry-run", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if not args.cpu_dry_run and not torch.cuda.is_available():
        sys.exit("no CUDA device for torch (use --cpu-dry-run to check the plumbing)")
    if not args.cpu_dry_run:
        print("torch", torch.__version__, torch.cuda.get_device_name(0), flush=True)
    Bench(args).run()


if __name__ == "__main__":
    main()
