#!/usr/bin/env bash
# bench/cpu/run.sh: voxrt's CPU engines against onnxruntime (same files, inputs, threads; runs
# interleaved), for docs/perf/cpu.md. Not a test. Needs a release build (build/bin, or
# VOXRT_BIN_DIR) and scripts/fetch-third-party.sh. Each engine is built (tactics timed) with the
# thread count it is then run with: the fastest tactic at 1 thread is often not the fastest at 2.
# The DS2 models are also built with --precision fp16 (R of the recurrent layers stored in FP16,
# FP32 arithmetic) and timed against the same FP32 onnxruntime session: those rows are a
# different precision, reported apart from the FP32 comparison.
#   bash bench/cpu/run.sh [ROUNDS] [ITERATIONS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${VOXRT_BIN_DIR:-$root/build/bin}"
work="${VOXRT_BENCH_DIR:-$(dirname "$bin")/bench-cpu}"
rounds=${1:-5}
iterations=${2:-10}
mkdir -p "$work"
/usr/bin/python3 "$root/bench/cpu/export_models.py" "$work"
models="$root/.third_party/models"
results="$work/results.jsonl"
: > "$results"
build_log="$work/build_times.txt"
: > "$build_log"
# Timings from an older build would choose tactics for code that has changed: start afresh.
rm -f "$work/cpu.cache"

build() {  # name threads onnx extra-args... -> $work/name_tTHREADS.engine
  local name=$1 threads=$2 onnx=$3
  shift 3
  local start end engine="${name}_t${threads}"
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$work/$engine.buildrss" "$bin/voxrt" build --onnx "$onnx" \
    --engine "$work/$engine.engine" --threads "$threads" --timing-cache "$work/cpu.cache" "$@" >/dev/null
  end=$(date +%s.%N)
  echo "$engine $(echo "$end - $start" | bc) s, peak RSS $(cat "$work/$engine.buildrss") KiB" | tee -a "$build_log"
}

for threads in 1 2; do
  build ds2_gru $threads "$work/ds2_gru_uni512x5.onnx" --profile x:1x1x161x200/1x1x161x200/1x1x161x200
  build ds2_bilstm $threads "$work/ds2_bilstm1024x5.onnx" --profile x:1x1x161x200/1x1x161x200/1x1x161x200
  build ds2_gru_fp16 $threads "$work/ds2_gru_uni512x5.onnx" --precision fp16 \
    --profile x:1x1x161x200/1x1x161x200/1x1x161x200
  build ds2_bilstm_fp16 $threads "$work/ds2_bilstm1024x5.onnx" --precision fp16 \
    --profile x:1x1x161x200/1x1x161x200/1x1x161x200
  build silero $threads "$models/silero_vad_v5.onnx" --fixed-input sr=16000 \
    --profile input:1x512/1x512/1x512 --profile state:2x1x128/2x1x128/2x1x128
  build melspec $threads "$models/melspectrogram.onnx" --profile input:1x1280/1x1280/1x1280
done

for threads in 1 2; do
  "$bin/cpu_vs_onnxruntime" --onnx "$work/ds2_gru_uni512x5.onnx" --engine "$work/ds2_gru_t$threads.engine" \
    --shapes x:1x1x161x200 --threads $threads --rounds "$rounds" --iterations "$iterations" --json | tee -a "$results"
  "$bin/cpu_vs_onnxruntime" --onnx "$work/ds2_bilstm1024x5.onnx" --engine "$work/ds2_bilstm_t$threads.engine" \
    --shapes x:1x1x161x200 --threads $threads --rounds "$rounds" --iterations "$iterations" --json | tee -a "$results"
  for model in gru_uni512x5:gru bilstm1024x5:bilstm; do
    "$bin/cpu_vs_onnxruntime" --onnx "$work/ds2_${model%%:*}.onnx" \
      --engine "$work/ds2_${model##*:}_fp16_t$threads.engine" --shapes x:1x1x161x200 \
      --threads $threads --rounds "$rounds" --iterations "$iterations" --json | tee -a "$results"
  done
  "$bin/cpu_vs_onnxruntime" --onnx "$models/silero_vad_v5.onnx" --engine "$work/silero_t$threads.engine" \
    --shapes input:1x512 --shapes state:2x1x128 --ort-input sr=16000 --threads $threads \
    --rounds "$rounds" --iterations $((iterations * 20)) --json | tee -a "$results"
  "$bin/cpu_vs_onnxruntime" --onnx "$models/melspectrogram.onnx" --engine "$work/melspec_t$threads.engine" \
    --shapes input:1x1280 --threads $threads --rounds "$rounds" --iterations $((iterations * 20)) --json | tee -a "$results"
done
echo "results: $results; build times: $build_log"
