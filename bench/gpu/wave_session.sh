#!/usr/bin/env bash
# bench/gpu/wave_session.sh: one device call for this wave's GPU checks (< 10 min):
#   1. bench/gpu/transformer_session.sh (issue 26): the CUDA tests of the Transformer-era ops,
#      attention kernels, exported models and slot pool, then voxrt vs PyTorch (eager and CUDA
#      graph) on the streaming Conformer chunk, Whisper-small encoder and decoder step;
#   2. bench/server/hostile_soak.sh on the GPU (issue 33): the default model's FP16 CUDA engine,
#      VOXRT_SOAK_STREAMS (2000) real-time streams for VOXRT_SOAK_S (100 s) with every attack
#      (a 2000-client disconnect storm among them), RSS, descriptors and GPU memory sampled.
# Made here by: cmake --build build --target voxrt gpu_cuda_backend node_conformance &&
#   scripts/pack-for-device.sh build && bash bench/server/make_wavs.sh   (pack first: it empties .device)
#   [/usr/bin/python3 bench/gpu/model_transport.py pack models/default/model.onnx .device/default_model.npz
#    and move models/default/model.onnx out of the tree for the call, when it would be over 64 MiB]
# Run on the GPU machine from the repo root with .device carried. Writes $OUT/transformer/*,
# $OUT/soak/{summary.txt,soak.csv}, $OUT/session.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/voxrt_wave_out}
mkdir -p "$OUT/transformer" "$OUT/soak"
T0=$SECONDS
# The default model travels as .device/default_model.npz (bench/gpu/model_transport.py: weights
# rounded to float16, half the bytes) when the working tree would be over the call's 64 MiB.
if [ ! -f models/default/model.onnx ] && [ -f .device/default_model.npz ]; then
  python3 bench/gpu/model_transport.py unpack .device/default_model.npz models/default/model.onnx
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
OUT=$OUT/transformer VOXRT_TRANSFORMER_TESTS_S=${VOXRT_TRANSFORMER_TESTS_S:-120} \
  VOXRT_SESSION_BUDGET_S=${VOXRT_TRANSFORMER_BUDGET_S:-330} bash bench/gpu/transformer_session.sh \
  > "$OUT/transformer/session.txt" 2>&1
echo "transformer session rc=$? after $((SECONDS - T0)) s"
source bench/gpu/device_env.sh
engine=/tmp/voxrt_wave_gpu.engine
timeout 150 "$dev/bin/voxrt" build --onnx models/default/model.onnx --engine "$engine" --device cuda \
  --precision fp16 --profile features:1x32x80/512x32x80/1024x32x80 --no-autotune \
  > "$OUT/soak/build.log" 2>&1
echo "gpu engine build rc=$? after $((SECONDS - T0)) s"
left=$((560 - (SECONDS - T0) - 40))
soak_s=${VOXRT_SOAK_S:-100}
[ "$left" -lt "$soak_s" ] && soak_s=$left
if [ "$soak_s" -gt 30 ]; then
  OUT=$OUT/soak VOXRT_VOXRT=$dev/bin/voxrt VOXRT_ENGINE=$engine VOXRT_WAVS=.device/wavs PY=python3 \
    ATTACK_PERIOD_S=25 VOXRT_STORM=2000 VOXRT_LOADGEN_THREADS=4 \
    VOXRT_SERVE_ARGS="--max-batch 1024 --front-end-threads 8 --threads 8 --max-queue-delay-us 5000" \
    timeout $((soak_s + 60)) bash bench/server/hostile_soak.sh "$soak_s" "${VOXRT_SOAK_STREAMS:-2000}" \
    > "$OUT/soak/console.txt" 2>&1
  echo "soak rc=$? after $((SECONDS - T0)) s"
  rm -rf "$OUT/soak/silence_1h.flac" "$OUT/soak/wavs"
fi
# At most 8 files come back: two summaries and two archives.
cp "$OUT/transformer/transformer_summary.txt" "$OUT/transformer_summary.txt" 2>/dev/null
cp "$OUT/soak/summary.txt" "$OUT/soak_summary.txt" 2>/dev/null
tar -czf "$OUT/transformer.tgz" -C "$OUT" transformer && rm -rf "$OUT/transformer"
tar -czf "$OUT/soak.tgz" -C "$OUT" soak && rm -rf "$OUT/soak"
tail -14 "$OUT/transformer_summary.txt" 2>/dev/null
cat "$OUT/soak_summary.txt" 2>/dev/null
echo "total $((SECONDS - T0)) s"
