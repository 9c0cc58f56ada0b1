#!/usr/bin/env bash
# bench/gpu/device_run.sh: the whole GPU validation + benchmark in one device call, < 420 s.
# Run on the H200 from the repo root with .device carried (made by scripts/pack-for-device.sh):
#   bash bench/gpu/device_run.sh
# Writes into $OUT (at most 8 files): env.txt, gpu_tests.log, gpu_tests.xml, conformance_cuda.log,
# conformance_cuda.tsv, bench.log, bench.json, inspect.txt. Every step has its own time limit,
# so a hang costs only that step.
# VOXRT_SKIP_BENCH=1: the environment check and the gpu tests only; VOXRT_SKIP_TESTS=1: no tests.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/voxrt_device_out}
mkdir -p "$OUT"
T0=$SECONDS
source bench/gpu/device_env.sh
{
  echo "== $(date -u)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "== missing libraries (should be none):"
  ldd "$dev/bin/voxrt" | grep "not found"
  ldd "$dev/bin/gpu_cuda_backend" | grep "not found"
  ldd "$dev/bin/voxrt" | grep -E "cublas|cudart"
  echo "== voxrt --version (the CUDA plugin, lib/libvoxrt_cuda.so, opened and the GPU seen):"
  "$dev/bin/voxrt" --version
  echo "cuDNN (dlopened): $(for d in ${LD_LIBRARY_PATH//:/ }; do ls "$d"/libcudnn.so.9* 2>/dev/null; done | head -3)"
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [ "${VOXRT_SKIP_TESTS:-0}" != 1 ]; then
  echo "== gpu tests (limit 180 s)"
  VOXRT_GPU_MODEL_DIR="$dev/data/models" \
    timeout -k 5 180 "$dev/bin/gpu_cuda_backend" --gtest_output=xml:"$OUT/gpu_tests.xml" 2>&1 |
    tee "$OUT/gpu_tests.log" | grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED|note) +\]|Failure|error|Expected|Which is|tactics|trace"
  echo "gpu tests rc=${PIPESTATUS[0]} after $((SECONDS - T0)) s"
  echo "== ONNX node tests on the CUDA backend, fp32 (limit 90 s)"
  timeout -k 5 90 "$dev/bin/node_conformance" --device cuda --data "$dev/data/node" \
    --expected-failures tests/conformance/expected_failures_cuda.txt \
    --report "$OUT/conformance_cuda.tsv" > "$OUT/conformance_cuda.log" 2>&1
  echo "node tests rc=$? after $((SECONDS - T0)) s"
  grep -E "^(FAILED|ONNX node tests|failures:)" "$OUT/conformance_cuda.log" | tail -40
fi

if [ "${VOXRT_SKIP_BENCH:-0}" = 1 ]; then exit 0; fi
left=$((410 - (SECONDS - T0)))
echo "== benchmark (limit $left s)"
timeout -k 5 "$left" python3 bench/gpu/bench_gpu.py --voxrt "$dev/bin/voxrt" --out "$OUT" \
  --iters "${VOXRT_BENCH_ITERS:-30}" --rounds 2 --budget-s $((left - 10)) 2>&1 | tee "$OUT/bench.log" | tail -40
echo "bench rc=${PIPESTATUS[0]}; total $((SECONDS - T0)) s"
