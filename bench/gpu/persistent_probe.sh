#!/usr/bin/env bash
# bench/gpu/persistent_probe.sh: where a step of the persistent recurrent kernel goes, and how its
# launch-time settings move the model's time. Run on the GPU machine from the repo root with
# .device carried:
#   bash bench/gpu/persistent_probe.sh bilstm1 fp32
# Builds the DS2 case (bench/gpu/build_case.sh), prints its layer table and the recurrent layers'
# autotuning candidates, then for each setting below times `voxrt bench --device-time` (medians
# of 200 runs, ms) and prints the phase split of the last persistent launch of one traced run
# (VOXRT_CUDA_RECURRENT_TRACE=1: ns per step, mean and max over the blocks). The settings only change how the persistent kernel is launched, so
# one engine serves them all.
set -euo pipefail
cd "$(dirname "$0")/../.."
case_name=${1:-bilstm1}
precision=${2:-fp32}
source bench/gpu/device_env.sh
work=$(mktemp -d /tmp/voxrt_probe_XXXX)
source bench/gpu/build_case.sh
"$dev/bin/voxrt" inspect "$work/m.engine" | sed -n '/^#/,/^total/p'
# The recurrent layers' autotuning candidates.
print_tactic_timings 'LSTM|GRU'
# VOXRT_PROBE_SETTINGS (space-separated) replaces the list.
settings=(
  ""
  "VOXRT_CUDA_PERSISTENT_KSPLIT=0"
  "VOXRT_CUDA_PERSISTENT_WARPS=8"
  "VOXRT_CUDA_REGISTER_GATE=0"
  "VOXRT_CUDA_TAGGED_STATE=0"
)
if [ -n "${VOXRT_PROBE_SETTINGS:-}" ]; then read -r -a settings <<< "$VOXRT_PROBE_SETTINGS"; settings=("" "${settings[@]}"); fi
for setting in "${settings[@]}"; do
  echo "==== ${setting:-default}"
  env $setting "$dev/bin/voxrt" bench "$work/m.engine" --shapes "$shapes" --iterations 200 \
    --warmup 100 --device-time --json > "$work/bench.json"
  python3 - "$work/bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
host = d["latency_ms"]["median"]
dev = d.get("device_ms", {}).get("median")
print(f"host median {host:.4f} ms   device median {dev:.4f} ms" if dev else f"host median {host:.4f} ms")
PY
  env $setting VOXRT_CUDA_RECURRENT_TRACE=1 "$dev/bin/voxrt" bench "$work/m.engine" \
    --shapes "$shapes" --iterations 5 --warmup 0 > /dev/null 2> "$work/trace.txt" || true
  grep -A8 "recurrent trace" "$work/trace.txt" || tail -3 "$work/trace.txt"
done
