#!/usr/bin/env bash
# `voxrt bench --state-pool` on a tiny streaming cell (state pair h:hn, batch-first): the JSON
# of the pool mode and of the plain mode, --shapes setting the batch, and the errors for an
# engine without state pairs and for a state that is not batch-first.
set -euo pipefail
voxrt=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# cell.onnx: hn = tanh(x W + h), y = 2 hn; x [n, 8], h [n, 4]. cell_t.onnx: the same with the
# state as [4, n] (not batch-first).
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as T
r = np.random.default_rng(1)
w = nh.from_array((r.standard_normal((8, 4)) * 0.3).astype(np.float32), "w")
two = nh.from_array(np.array(2.0, np.float32), "two")
def model(batch_first):
    # batch_first: h and hn are [n, 4]; otherwise [4, n], transposed around the cell.
    state_dims = ["n", 4] if batch_first else [4, "n"]
    nodes = [h.make_node("MatMul", ["x", "w"], ["xw"])]
    if not batch_first:
        nodes.append(h.make_node("Transpose", ["h"], ["h_rows"], perm=[1, 0]))
    nodes += [h.make_node("Add", ["xw", "h" if batch_first else "h_rows"], ["sum"]),
              h.make_node("Tanh", ["sum"], ["hn" if batch_first else "hn_rows"]),
              h.make_node("Mul", ["hn" if batch_first else "hn_rows", "two"], ["y"])]
    if not batch_first:
        nodes.append(h.make_node("Transpose", ["hn_rows"], ["hn"], perm=[1, 0]))
    g = h.make_graph(nodes, "cell",
                     [h.make_tensor_value_info("x", T.FLOAT, ["n", 8]),
                      h.make_tensor_value_info("h", T.FLOAT, state_dims)],
                     [h.make_tensor_value_info("y", T.FLOAT, ["n", 4]),
                      h.make_tensor_value_info("hn", T.FLOAT, state_dims)], [w, two])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
onnx.save(model(True), sys.argv[1] + "/cell.onnx")
onnx.save(model(False), sys.argv[1] + "/cell_t.onnx")
PY
"$voxrt" build --onnx "$work/cell.onnx" --engine "$work/cell.engine" --no-autotune \
  --profile x:1x8/4x8/8x8 --profile h:1x4/4x4/8x4 --state h:hn
"$voxrt" build --onnx "$work/cell.onnx" --engine "$work/plain.engine" --no-autotune \
  --profile x:1x8/4x8/8x8 --profile h:1x4/4x4/8x4
"$voxrt" build --onnx "$work/cell_t.onnx" --engine "$work/cell_t.engine" --no-autotune \
  --profile x:1x8/4x8/8x8 --profile h:4x1/4x4/4x8 --state h:hn
# Static shapes (min = max): h is [4, 2], so its dim 0 passes for a batch, but x's batch is 2.
"$voxrt" build --onnx "$work/cell_t.onnx" --engine "$work/cell_t_static.engine" --no-autotune \
  --profile x:2x8/2x8/2x8 --profile h:4x2/4x2/4x2 --state h:hn

"$voxrt" bench "$work/cell.engine" --state-pool --iterations 20 --warmup 20 --json >"$work/pool.json"
# The state's shape is ignored: the batch is x's dim 0.
"$voxrt" bench "$work/cell.engine" --state-pool --iterations 20 --warmup 20 --json \
  --shapes x:3x8,h:8x4 >"$work/pool3.json"
"$voxrt" bench "$work/cell.engine" --iterations 20 --warmup 20 --json >"$work/run.json"
"$voxrt" bench "$work/cell.engine" --state-pool --iterations 5 --warmup 5 --profile \
  | tee "$work/pool.txt"
grep -q "state pool: batch 4 (padded to 4), states on the host" "$work/pool.txt"
/usr/bin/python3 - "$work" <<'PY'
import json, sys
d = sys.argv[1]
pool = json.load(open(d + "/pool.json"))
assert pool["mode"] == "state_pool", pool
assert pool["batch"] == 4, pool  # the first profile's opt
assert pool["states_on_device"] is False, pool  # a CPU engine keeps its states on the host
assert pool["iterations"] == 20, pool
lat = pool["latency_ms"]
for key in ("min", "mean", "median", "p90", "p95", "p99", "max"):
    assert lat[key] > 0, (key, lat)
assert lat["min"] <= lat["median"] <= lat["p99"] <= lat["max"], lat
assert pool["throughput_per_s"] > 0 and pool["cov"] >= 0, pool
pool3 = json.load(open(d + "/pool3.json"))
assert pool3["mode"] == "state_pool" and pool3["batch"] == 3, pool3
run = json.load(open(d + "/run.json"))
assert run["mode"] == "run" and "batch" not in run and "states_on_device" not in run, run
assert run["latency_ms"]["median"] > 0, run
print("bench --state-pool json ok: batch", pool["batch"], "median", lat["median"], "ms")
PY

# Errors: exit status 2 and a message that says why.
expect_error() {  # ENGINE PATTERN [BENCH ARGS...]
  local engine=$1 pattern=$2
  shift 2
  if "$voxrt" bench "$engine" --iterations 2 --json "$@" >"$work/out" 2>"$work/err"; then
    echo "FAIL: bench $engine $* succeeded"; exit 1
  else
    rc=$?
  fi
  cat "$work/err"
  [ "$rc" -eq 2 ] || { echo "FAIL: exit status $rc, expected 2"; exit 1; }
  grep -qF "$pattern" "$work/err" || { echo "FAIL: expected '$pattern' in the error"; exit 1; }
}
expect_error "$work/plain.engine" "no state pairs (build it with --state IN:OUT)" --state-pool
expect_error "$work/cell_t.engine" "state 'h' dim 1 is dynamic" --state-pool
expect_error "$work/cell_t_static.engine" "state 'h' is 4x2: its dim 0 is not the batch (2" --state-pool
expect_error "$work/cell.engine" "the engine has no input 'z' (its inputs: x, h)" --shapes z:4x8
echo PASS
