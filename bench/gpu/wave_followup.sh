#!/usr/bin/env bash
# bench/gpu/wave_followup.sh: the second device call of a wave (< 10 min), after
# bench/gpu/wave_session.sh:
#   1. the gpu tests that failed there, with their whole output (the session's log keeps only
#      matching lines): VOXRT_FOLLOWUP_TESTS, a gtest filter;
#   2. bench/gpu/bench_transformer.py on the Conformer chunk and the Whisper-small encoder
#      (VOXRT_FOLLOWUP_BENCH_S, 170 s), then bench/server/hostile_soak.sh on the GPU (issue 33):
#      VOXRT_SOAK_STREAMS (2000) real-time streams for VOXRT_SOAK_S (80 s), every attack (the first session's soak had every canary
#      beyond 64 refused by the per-address limit: hostile_soak.sh now raises it);
#   3. bench/server/deploy_to_serve.sh cuda (issue 30): from `voxrt deploy` to serving on the GPU.
# Same bundle and carry as wave_session.sh. Writes $OUT/{tests.log,soak_summary.txt,soak.tgz,
# deploy.txt,bench.json,transformer_summary.txt}.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/voxrt_followup_out}
mkdir -p "$OUT/soak"
T0=$SECONDS
if [ ! -f models/default/model.onnx ] && [ -f .device/default_model.npz ]; then
  python3 bench/gpu/model_transport.py unpack .device/default_model.npz models/default/model.onnx
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
source bench/gpu/device_env.sh
VOXRT_GPU_MODEL_DIR="$dev/data/models" timeout -k 5 120 "$dev/bin/gpu_cuda_backend" \
  --gtest_filter="${VOXRT_FOLLOWUP_TESTS:-CudaSlots.*:CudaTransformerModels.*}" > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? after $((SECONDS - T0)) s"
grep -E "^\[ +(FAILED|PASSED) +\]" "$OUT/tests.log" | tail -8
# The Transformer benchmark again (VOXRT_FOLLOWUP_BENCH_S, 0 skips it): a change measured.
bench_s=${VOXRT_FOLLOWUP_BENCH_S:-170}
if [ "$bench_s" -gt 0 ]; then
  mkdir -p "$OUT/bench"
  timeout -k 5 "$bench_s" python3 bench/gpu/bench_transformer.py --voxrt "$dev/bin/voxrt" \
    --out "$OUT/bench" --iters 50 --rounds 2 --budget-s $((bench_s - 15)) \
    --cases "${VOXRT_BENCH_CASES:-conformer,encoder}" > "$OUT/bench/bench.log" 2>&1
  echo "bench rc=$? after $((SECONDS - T0)) s"
  cp "$OUT/bench/bench.json" "$OUT/bench.json" 2>/dev/null
  cp "$OUT/bench/transformer_summary.txt" "$OUT/transformer_summary.txt" 2>/dev/null
  tail -5 "$OUT/bench/bench.log"
  rm -rf "$OUT/bench"
fi
engine=/tmp/voxrt_wave_gpu.engine
timeout 150 "$dev/bin/voxrt" build --onnx models/default/model.onnx --engine "$engine" --device cuda \
  --precision fp16 --profile features:1x32x80/512x32x80/1024x32x80 --no-autotune \
  > "$OUT/soak/build.log" 2>&1
echo "gpu engine build rc=$? after $((SECONDS - T0)) s"
streams=${VOXRT_SOAK_STREAMS:-2000}
soak_s=${VOXRT_SOAK_S:-80}
OUT=$OUT/soak VOXRT_VOXRT=$dev/bin/voxrt VOXRT_ENGINE=$engine VOXRT_WAVS=.device/wavs PY=python3 \
  ATTACK_PERIOD_S=25 VOXRT_STORM=2000 VOXRT_LOADGEN_THREADS=4 \
  VOXRT_SERVE_ARGS="--max-batch 1024 --front-end-threads 8 --threads 8 --max-queue-delay-us 5000" \
  timeout $((soak_s + 60)) bash bench/server/hostile_soak.sh "$soak_s" "$streams" \
  > "$OUT/soak/console.txt" 2>&1
echo "soak rc=$? after $((SECONDS - T0)) s"
rm -rf "$OUT/soak/silence_1h.flac" "$OUT/soak/wavs"
cp "$OUT/soak/summary.txt" "$OUT/soak_summary.txt" 2>/dev/null
tar -czf "$OUT/soak.tgz" -C "$OUT" soak && rm -rf "$OUT/soak"
cat "$OUT/soak_summary.txt" 2>/dev/null
VOXRT=$dev/bin/voxrt timeout 120 bash bench/server/deploy_to_serve.sh cuda > "$OUT/deploy.txt" 2>&1
echo "deploy_to_serve rc=$? after $((SECONDS - T0)) s"
tail -8 "$OUT/deploy.txt"
echo "total $((SECONDS - T0)) s"
