#!/usr/bin/env bash
# bench/cpu/run.sh: voxrt's CPU engines against onnxruntime (same files, inputs, threads; runs
# interleaved), writing docs/perf/cpu.md. Not a test. Needs a release build (build/bin) and
# scripts/fetch-third-party.sh.
#   bash bench/cpu/run.sh [ROUNDS] [ITERATIONS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${VOXRT_BIN_DIR:-$root/build/bin}"
work="$root/build/bench-cpu"
rounds=${1:-5}
iterations=${2:-10}
mkdir -p "$work"
/usr/bin/python3 "$root/bench/cpu/export_models.py" "$work"
models="$root/.third_party/models"
results="$work/results.jsonl"
: > "$results"
build_log="$work/build_times.txt"
: > "$build_log"

build() {  # name onnx extra-args...
  local name=$1 onnx=$2
  shift 2
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$work/$name.buildrss" "$bin/voxrt" build --onnx "$onnx" --engine "$work/$name.engine" \
    --threads 1 --timing-cache "$work/cpu.cache" "$@" >/dev/null
  end=$(date +%s.%N)
  echo "$name $(echo "$end - $start" | bc) s, peak RSS $(cat "$work/$name.buildrss") KiB" | tee -a "$build_log"
}

build ds2_gru "$work/ds2_gru_uni512x5.onnx" --profile x:1x1x161x200/1x1x161x200/1x1x161x200
build ds2_bilstm "$work/ds2_bilstm1024x5.onnx" --profile x:1x1x161x200/1x1x161x200/1x1x161x200
build silero "$models/silero_vad_v5.onnx" --fixed-input sr=16000 --profile input:1x512/1x512/1x512 \
  --profile state:2x1x128/2x1x128/2x1x128
build melspec "$models/melspectrogram.onnx" --profile input:1x1280/1x1280/1x1280

for threads in 1 2; do
  "$bin/cpu_vs_onnxruntime" --onnx "$work/ds2_gru_uni512x5.onnx" --engine "$work/ds2_gru.engine" \
    --shapes x:1x1x161x200 --threads $threads --rounds "$rounds" --iterations "$iterations" --json | tee -a "$results"
  "$bin/cpu_vs_onnxruntime" --onnx "$work/ds2_bilstm1024x5.onnx" --engine "$work/ds2_bilstm.engine" \
    --shapes x:1x1x161x200 --threads $threads --rounds "$rounds" --iterations "$iterations" --json | tee -a "$results"
  "$bin/cpu_vs_onnxruntime" --onnx "$models/silero_vad_v5.onnx" --engine "$work/silero.engine" \
    --shapes input:1x512 --shapes state:2x1x128 --ort-input sr=16000 --threads $threads \
    --rounds "$rounds" --iterations $((iterations * 20)) --json | tee -a "$results"
  "$bin/cpu_vs_onnxruntime" --onnx "$models/melspectrogram.onnx" --engine "$work/melspec.engine" \
    --shapes input:1x1280 --threads $threads --rounds "$rounds" --iterations $((iterations * 20)) --json | tee -a "$results"
done
echo "results: $results; build times: $build_log"
