#!/usr/bin/env bash
# `voxrt check`: against a test_data_set's expected outputs (pass, and fail on wrong data; an fp16
# engine within looser tolerances), and
# --mark-all against onnxruntime, which must compare every intermediate tensor in node order.
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node=/usr/share/libonnx-testdata/data/node/test_gru_defaults
"$voxrt" check "$node/model.onnx" --data "$node/test_data_set_0" | tee "$work/pass.txt"
grep -q "^PASSED" "$work/pass.txt"

# Expected outputs that are wrong must fail with exit status 1.
cp -r "$node/test_data_set_0" "$work/wrong"
/usr/bin/python3 - "$work/wrong/output_0.pb" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper as nh
t = onnx.TensorProto(); t.ParseFromString(open(sys.argv[1], "rb").read())
a = nh.to_array(t).copy(); a.flat[0] += 0.5
open(sys.argv[1], "wb").write(nh.from_array(a, t.name).SerializeToString())
PY
if "$voxrt" check "$node/model.onnx" --data "$work/wrong" >"$work/fail.txt"; then
  echo "FAIL: check passed with a wrong expected output"; exit 1
fi
grep -q "^FAIL " "$work/fail.txt"

# --precision fp16 (CPU: R stored in FP16) against the same FP32 expected outputs: within a
# tolerance for FP16 weights, and an error naming the precision for one the CPU lacks.
"$voxrt" check "$node/model.onnx" --data "$node/test_data_set_0" --precision fp16 \
  --rtol 1e-2 --atol 1e-3 | tee "$work/fp16.txt"
grep -q "^PASSED" "$work/fp16.txt"
if "$voxrt" check "$node/model.onnx" --data "$node/test_data_set_0" --precision bf16 \
  2>"$work/bf16.txt"; then
  echo "FAIL: check accepted bf16 on the CPU"; exit 1
fi
grep -q "precision bf16 is not available on the CPU backend" "$work/bf16.txt"

# --mark-all on a chain that voxrt would otherwise fuse (MatMul+Add+Relu -> Gemm, then Softmax).
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as T
r = np.random.default_rng(1)
w = nh.from_array(r.standard_normal((16, 8)).astype(np.float32), "w")
b = nh.from_array(r.standard_normal(8).astype(np.float32), "b")
nodes = [h.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
         h.make_node("Add", ["mm", "b"], ["biased"], name="add"),
         h.make_node("Relu", ["biased"], ["act"], name="relu"),
         h.make_node("Softmax", ["act"], ["y"], name="softmax", axis=-1)]
g = h.make_graph(nodes, "chain", [h.make_tensor_value_info("x", T.FLOAT, ["n", 16])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["n", 8])], [w, b])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
onnx.save(m, sys.argv[1] + "/chain.onnx")
import os; os.makedirs(sys.argv[1] + "/chain_data")
open(sys.argv[1] + "/chain_data/input_0.pb", "wb").write(
    nh.from_array(r.standard_normal((3, 16)).astype(np.float32), "x").SerializeToString())
PY
if [ ! -d "$src/.third_party/node_modules/onnxruntime-node" ]; then
  echo "SKIP --mark-all part: onnxruntime-node not fetched (scripts/fetch-third-party.sh)"; exit 0
fi
"$voxrt" check "$work/chain.onnx" --data "$work/chain_data" --mark-all --json >"$work/mark.json"
/usr/bin/python3 - "$work/mark.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
names = [o["output"] for o in r["outputs"]]
assert names == ["mm", "biased", "act", "y"], names
assert r["reference"] == "onnxruntime" and r["pass"] and r["first_failure"] == "", r
print("mark-all ok:", names)
PY
