"""Per-kernel device time of the PyTorch peer, so voxrt's per-layer profile has a counterpart.

Runs one DS2 case of bench_gpu.py (same model definitions and weights) eagerly under
torch.profiler and prints the CUDA kernels sorted by total device time, per call.
Usage (on the GPU machine): python3 bench/gpu/torch_kernel_profile.py --case gru256 --fp16
"""
import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import DS2, StreamingDS2, init_weights  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", choices=["gru1", "gru256", "bilstm1"], default="gru256")
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    if args.case.startswith("gru"):
        batch = 1 if args.case == "gru1" else 256
        model = init_weights(StreamingDS2(bidir=False, hidden=512, layers=5, rnn=nn.GRU))
        inputs = [torch.randn(batch, 1, 161, 16), torch.zeros(5, batch, 512)]
    else:
        model = init_weights(DS2())
        inputs = [torch.randn(1, 1, 161, 200)]
    model = model.cuda()
    inputs = [x.cuda() for x in inputs]
    if args.fp16:
        model = model.half()
        inputs = [x.half() for x in inputs]
    with torch.no_grad():
        for _ in range(5):
            model(*inputs)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(args.iters):
                model(*inputs)
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        total_us = getattr(e, "device_time_total", None)
        if total_us is None:
            total_us = e.cuda_time_total
        if total_us > 0:
            rows.append((total_us / args.iters, e.count // args.iters, e.key))
    rows.sort(reverse=True)
    print(f"case {args.case} {'fp16' if args.fp16 else 'fp32'}: device us per inference, calls")
    for us, calls, name in rows[:25]:
        print(f"{us:9.1f} {calls:4d}  {name[:110]}")
    print(f"{sum(r[0] for r in rows):9.1f}       sum")


if __name__ == "__main__":
    main()
