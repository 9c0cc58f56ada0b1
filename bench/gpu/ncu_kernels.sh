#!/usr/bin/env bash
# bench/gpu/ncu_kernels.sh: device time of every kernel of one voxrt inference, from Nsight
# Compute (ncu), next to bench/gpu/torch_kernel_profile.py's view of the PyTorch peer.
# Run on the GPU machine from the repo root with .device carried:
#   bash bench/gpu/ncu_kernels.sh gru256 fp16
# Exports the DS2 streaming GRU (batch 256 or 1) or the BiLSTM with bench_gpu.py's definitions,
# builds the engine, then profiles `voxrt bench --iterations 1` (graphs off: ncu replays kernels
# one by one) and prints kernels in launch order with their durations in microseconds. Before
# that it prints every autotuning candidate's time (VOXRT_SKIP_NCU=1: only that).
set -euo pipefail
cd "$(dirname "$0")/../.."
case_name=${1:-gru256}
precision=${2:-fp16}
source bench/gpu/device_env.sh
work=$(mktemp -d /tmp/voxrt_ncu_XXXX)
source bench/gpu/build_case.sh
"$dev/bin/voxrt" inspect "$work/m.engine" | sed -n '/^#/,/^total/p'
# Every autotuning candidate of every layer.
print_tactic_timings
# VOXRT_SKIP_NCU=1: the tactic table only.
[ "${VOXRT_SKIP_NCU:-0}" = 1 ] && exit 0
VOXRT_CUDA_GRAPHS=0 ncu --metrics gpu__time_duration.sum --csv --launch-skip 0 --launch-count 2000 \
  "$dev/bin/voxrt" bench "$work/m.engine" --shapes "$shapes" --iterations 1 --warmup 0 \
  > "$work/ncu.csv" 2> "$work/ncu.err" || { tail -20 "$work/ncu.err"; exit 1; }
python3 - "$work/ncu.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
ki, vi, ui = head.index("Kernel Name"), head.index("Metric Value"), head.index("Metric Unit")
ids = head.index("ID")
to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
per = [(int(r[ids]), r[ki], float(r[vi].replace(",", "")) * to_us[r[ui]]) for r in rows]
# Every kernel of the process in launch order: the session's weight conversions first, then each
# inference `voxrt bench` runs; the table after it sums them per kernel name.
print(f"{len(per)} kernels profiled, in launch order (us):")
for i, name, us in per:
    print(f"{us:8.1f}  {name[:100]}")
agg = collections.defaultdict(lambda: [0.0, 0])
for _, name, us in per:
    agg[name[:60]][0] += us; agg[name[:60]][1] += 1
print("by kernel (us in total, launches):")
for name, (us, n) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
    print(f"{us:8.1f} {n:4d}  {name}")
PY
