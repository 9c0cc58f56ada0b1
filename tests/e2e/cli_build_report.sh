#!/usr/bin/env bash
# `voxrt build --json` lists every autotuning candidate of every tuned layer (tactic_timings):
# each layer that has more than one tactic has exactly one chosen, the fastest of those that ran,
# and a second build from the timing cache reports the same times and the same choice.
set -euo pipefail
voxrt=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as T
r = np.random.default_rng(2)
w = nh.from_array((r.standard_normal((64, 48)) * 0.2).astype(np.float32), "w")
g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["xw"]), h.make_node("Tanh", ["xw"], ["y"])],
                 "mm", [h.make_tensor_value_info("x", T.FLOAT, ["n", 64])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["n", 48])], [w])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1] + "/mm.onnx")
PY
for run in first cached; do
  "$voxrt" build --onnx "$work/mm.onnx" --engine "$work/mm.engine" --profile x:1x64/8x64/32x64 \
    --timing-cache "$work/cpu.cache" --json >"$work/$run.json"
done
/usr/bin/python3 - "$work" <<'PY'
import collections, json, sys
d = sys.argv[1]
first, cached = (json.load(open(f"{d}/{n}.json")) for n in ("first", "cached"))
rows = first["tactic_timings"]
assert rows, first
by_node = collections.defaultdict(list)
for row in rows:
    assert set(row) == {"node", "tactic", "time_us", "chosen", "profile"}, row
    by_node[(row["node"], row["profile"])].append(row)  # one choice per layer and profile
multi = {n: r for n, r in by_node.items() if len(r) > 1}
assert multi, f"no layer with several candidates: {rows}"
for node, cands in by_node.items():
    chosen = [c for c in cands if c["chosen"]]
    assert len(chosen) == 1, (node, cands)
    ran = [c["time_us"] for c in cands if c["time_us"] is not None]
    assert chosen[0]["time_us"] == min(ran), (node, cands)
assert first["tactics_timed"] >= len(rows) - first["timing_cache_hits"], first
# From the cache: nothing timed, the same rows.
assert cached["tactics_timed"] == 0 and cached["timing_cache_hits"] > 0, cached
key = lambda r: (r["node"], r["tactic"])
assert sorted(cached["tactic_timings"], key=key) == sorted(
    [r for r in rows if r["time_us"] is not None], key=key), (cached, rows)
print(f"ok: {len(rows)} candidates over {len(by_node)} layers")
PY
