#!/usr/bin/env bash
# bench/server/deploy_to_serve.sh [cpu|cuda]: the time from `voxrt deploy` of a changed model to a
# server answering with it (docs/model_repository.md). A scratch copy of models/repo gets version
# 1 deployed and served (`voxrt serve --repo`), then a version 2 (the same model with other build
# settings, so its engine is built anew); the clock runs from the start of `voxrt deploy` for
# version 2 to the first stream whose /readyz shows version 2 serving, split into deploy (build,
# warm-up, gates, publish) and pick-up (the server's next repository read, load and warm-up).
# Environment: VOXRT (binary, default build/bin/voxrt), POLL_MS (the server's --repo-poll-ms, 2000).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
target=${1:-cpu}
voxrt=${VOXRT:-build/bin/voxrt}
poll_ms=${POLL_MS:-2000}
work=$(mktemp -d)
server=""
# On any failure, the step's log before the scratch folder goes.
trap 'rc=$?; [ $rc -ne 0 ] && tail -30 "$work"/*.log 2>/dev/null; [ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$work"' EXIT
# The example repository's version 1 is a link to models/default/model.onnx; copies that drop
# links (the device tool's working tree) leave it dangling, so the model itself is copied in.
cp -r models/repo "$work/repo"
rm -f "$work/repo/default/1/model.onnx"
cp models/default/model.onnx "$work/repo/default/1/model.onnx"
rm -rf "$work/repo/eval"  # no accuracy gate here: this measures the pipeline, not the model
mkdir -p "$work/repo/default/1"
printf '{"profiles": ["features:1x4x80/8x32x80/64x32x80"], "gates": {"latency": {"max_p99_ms": 1000, "batch": 8}}}\n' \
  > "$work/repo/default/1/build.json"
"$voxrt" deploy default --repo "$work/repo" --version 1 --target "$target" > "$work/deploy1.log" 2>&1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$voxrt" serve --repo "$work/repo" --repo-target "$target" --port "$port" --repo-poll-ms "$poll_ms" \
  > "$work/serve.log" 2>&1 &
server=$!
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do sleep 0.1; done
mkdir -p "$work/repo/default/2"
cp -L "$work/repo/default/1/model.onnx" "$work/repo/default/2/model.onnx"
printf '{"profiles": ["features:1x4x80/16x32x80/64x32x80"], "gates": {"latency": {"max_p99_ms": 1000, "batch": 8}}}\n' \
  > "$work/repo/default/2/build.json"
start=$(date +%s.%N)
"$voxrt" deploy default --repo "$work/repo" --version 2 --target "$target" > "$work/deploy2.log" 2>&1
deployed=$(date +%s.%N)
until curl -s "http://127.0.0.1:$port/readyz" | grep -q '"serving":\[2\]'; do sleep 0.05; done
serving=$(date +%s.%N)
python3 - "$start" "$deployed" "$serving" "$target" "$poll_ms" <<'PY'
import sys
start, deployed, serving = map(float, sys.argv[1:4])
print(f"target {sys.argv[4]}: deploy {deployed - start:.1f} s (build, warm-up, latency gate, publish) + "
      f"pick-up {serving - deployed:.1f} s (--repo-poll-ms {sys.argv[5]}, load, warm-up) = "
      f"{serving - start:.1f} s from voxrt deploy to serving")
PY
grep "\[deploy\]" "$work/deploy2.log"
