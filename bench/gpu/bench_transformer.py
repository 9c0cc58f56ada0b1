"""voxrt's CUDA engines against PyTorch on Transformer-era speech models (issue 26), same GPU, same
weights, FP16, in one run.

The models are the reference's own modules (shared/bench/torch_transformer_baseline.py, loaded by
bench/gpu/transformer_models.py): the streaming Conformer chunk (12 x 256, 4 heads, FFN 1024,
depthwise conv 31, 16 frames with 64 cached key/value frames and 30 cached convolution frames per
layer) at batch 1 and 256, the Whisper-small encoder (12 x 768, 30 s) at batch 1 and the
Whisper-small decoder step (64 past tokens, 1500 encoder frames) at batch 1. Each is exported to
ONNX here (TorchScript exporter, opset 17, static shapes), built with
`voxrt build --device cuda --precision fp16`, checked against PyTorch's output (FP32 module;
relative L2 error <= 3e-2), then timed in interleaved rounds:
  torch eager        the FP16 module with F.scaled_dot_product_attention, CUDA events
  torch CUDA graph   the same captured into a torch.cuda.CUDAGraph and replayed
  voxrt              `voxrt bench --json --device-time`: host wall time of a run (inputs in and
                     outputs out through pinned memory) and the device time of the computation
                     alone (one CUDA graph replay between CUDA events, inputs already on the GPU:
                     the span PyTorch's timing covers)
and the ratios printed against the issue's goals (device time vs the CUDA graph: 3x on the chunk
at batch 1, 1.5x at batch 256, 1.3x on the encoder, 2x on the decoder step; p99/p50 <= 1.2).
The Bench class of bench_gpu.py does the export, build, check and timing of each case.

  python3 bench/gpu/bench_transformer.py --voxrt .device/bin/voxrt --out $OUT [--iters 50]
  python3 bench/gpu/bench_transformer.py --voxrt build/bin/voxrt --out /tmp/x --cpu-dry-run
      (no GPU: tiny models, voxrt --device cpu, torch on the CPU: the plumbing only)
Writes OUT/bench.json (one JSON line per case), OUT/inspect.txt, OUT/tactic_timings.txt and
OUT/transformer_summary.txt (the ratio table).
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpu  # noqa: E402
import transformer_models as tm  # noqa: E402

GOALS = {  # device time of voxrt vs PyTorch's CUDA graph (issue 26)
    "conformer12x256_chunk16_left64_b1": 3.0,
    "conformer12x256_chunk16_left64_b256": 1.5,
    "whisper_small_encoder_30s_b1": 1.3,
    "whisper_small_decoder_step_past64_b1": 2.0,
}


def fixed_profiles(names, inputs):
    dims = ["x".join(str(d) for d in x.shape) for x in inputs]
    return [f"{n}:{d}/{d}/{d}" for n, d in zip(names, dims)]


def fixed_shapes(names, inputs):
    return ",".join(f"{n}:{'x'.join(str(d) for d in x.shape)}" for n, x in zip(names, inputs))


class TransformerBench(bench_gpu.Bench):
    def transformer_case(self, name, model, inputs, names, out_names, items):
        self.case(name, model, inputs, names, out_names, fixed_profiles(names, inputs),
                  fixed_shapes(names, inputs), ["fp16"], per_chunk_items=items)

    def run(self):
        small = self.args.cpu_dry_run
        ns = tm.load_reference(device=self.device)
        torch.manual_seed(0)
        cases = self.args.cases.split(",")
        if "conformer" in cases:
            for batch in ((1, 2) if small else (1, 256)):
                layers, d = (2, 64) if small else (12, 256)
                model, inputs, names = tm.conformer_chunk(ns, batch, layers=layers, d=d)
                self.transformer_case(f"conformer12x256_chunk16_left64_b{batch}", model, inputs,
                                      names, ["logp"], batch)
        if "encoder" in cases:
            if small:
                model, inputs, names = tm.whisper_encoder(ns, 1, layers=2, d=64, heads=4,
                                                          frames=200)
            else:
                model, inputs, names = tm.whisper_encoder(ns, 1)
            self.transformer_case("whisper_small_encoder_30s_b1", model, inputs, names, ["h"], 1)
        if "decoder" in cases:
            if small:
                model, inputs, names = tm.whisper_decoder_step(ns, 1, layers=2, d=64, heads=4,
                                                               past=8, frames=20, vocab=100)
            else:
                model, inputs, names = tm.whisper_decoder_step(ns, 1)
            self.transformer_case("whisper_small_decoder_step_past64_b1", model, inputs, names,
                                  ["logits"], 1)
        self.summary()

    def summary(self):
        lines = ["case                                   agree  torch_graph_ms  voxrt_dev_ms  "
                 "x_graph(dev)  goal  met  voxrt_host_ms  x_graph(host)  p99/p50(host)  "
                 "p99/p50(dev)  attention tactics"]
        for r in self.rows:
            if "voxrt" not in r:
                lines.append(f"{r['case']:<38} {r.get('error', r.get('skipped', ''))[:400]}")
                continue
            goal = GOALS.get(r["case"])
            dev = r.get("voxrt_device", {})
            x_dev = r.get("device_speedup_vs_graph", float("nan"))
            met = "-" if goal is None or x_dev != x_dev else ("yes" if x_dev >= goal else "no")
            attention = sorted({f"{l[1]}:{l[2]}" for l in r.get("layers_top", [])
                                if l[1] in ("Attention", "Softmax", "MatMul")})
            lines.append(
                f"{r['case']:<38} {str(r['agree']):<6} "
                f"{r.get('torch_graph', {}).get('p50', float('nan')):>14.3f}  "
                f"{dev.get('p50', float('nan')):>12.3f}  {x_dev:>12.2f}  "
                f"{goal if goal else float('nan'):>4.1f}  {met:<4} {r['voxrt']['p50']:>13.3f}  "
                f"{r.get('speedup_vs_graph', float('nan')):>13.2f}  "
                f"{r['voxrt']['p99_over_p50']:>13.2f}  "
                f"{dev.get('p99_over_p50', float('nan')):>12.2f}  {' '.join(attention)[:200]}")
        text = "\n".join(lines)
        print("\n" + text, flush=True)
        with open(os.path.join(self.args.out, "transformer_summary.txt"), "w") as f:
            f.write(text + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--voxrt", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=420)
    p.add_argument("--build-threads", type=int, default=8)
    p.add_argument("--cases", default="conformer,encoder,decoder")
    p.add_argument("--cpu-dry-run", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if not args.cpu_dry_run and not torch.cuda.is_available():
        sys.exit("no CUDA device for torch (use --cpu-dry-run to check the plumbing)")
    if not args.cpu_dry_run:
        print("torch", torch.__version__, torch.cuda.get_device_name(0), flush=True)
    t0 = time.time()
    TransformerBench(args).run()
    print(f"bench_transformer: {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
