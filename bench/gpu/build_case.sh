# Sourced by bench/gpu/ncu_kernels.sh and bench/gpu/persistent_probe.sh on the GPU machine, with
# $case_name (gru256, gru1 or bilstm1), $precision, $work and $dev set: exports that DS2 model
# with bench_gpu.py's definitions to $work/m.onnx, builds $work/m.engine (--device cuda, autotuned
# with 20 timing iterations; $work/build.json lists every candidate) and sets $shapes.
# print_tactic_timings [NODE_REGEX] then prints the autotuning candidates of the matching layers.
python3 - "$case_name" "$work" <<'PY'
import os, sys
import torch, torch.nn as nn
sys.path.insert(0, "bench/gpu")
from bench_gpu import DS2, StreamingDS2, export_onnx, init_weights
case, work = sys.argv[1], sys.argv[2]
if case.startswith("gru"):
    b = 1 if case == "gru1" else 256
    m = init_weights(StreamingDS2(bidir=False, hidden=512, layers=5, rnn=nn.GRU))
    args, names, outs = (torch.randn(b, 1, 161, 16), torch.zeros(5, b, 512)), ["x", "h0"], ["logp", "hn"]
    shapes = f"x:{b}x1x161x16,h0:5x{b}x512"
else:
    m = init_weights(DS2())
    args, names, outs = (torch.randn(1, 1, 161, 200),), ["x"], ["logp"]
    shapes = "x:1x1x161x200"
export_onnx(m, args, names, outs, os.path.join(work, "m.onnx"))
open(os.path.join(work, "shapes"), "w").write(shapes)
PY
shapes=$(cat "$work/shapes")
# The export has static shapes, so the engine needs no optimization profile.
"$dev/bin/voxrt" build --onnx "$work/m.onnx" --engine "$work/m.engine" --device cuda \
  --precision "$precision" --timing-iterations 20 --json > "$work/build.json" 2> "$work/build.log" ||
  { cat "$work/build.log"; exit 1; }

# Autotuning candidates of the layers whose name matches $1 (all by default): us at the opt shapes,
# - = could not run, * = chosen.
print_tactic_timings() {
  python3 - "$work/build.json" "${1:-.}" <<'PY'
import json, re, sys
for t in json.load(open(sys.argv[1]))["tactic_timings"]:
    if re.search(sys.argv[2], t["node"]):
        us = "-" if t["time_us"] is None else f"{t['time_us']:.1f}"
        print(f"{t['node']:<24} {t['tactic']:<34} {us:>8}{'  *' if t['chosen'] else ''}")
PY
}
