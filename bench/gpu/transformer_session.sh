#!/usr/bin/env bash
# bench/gpu/transformer_session.sh: issue 26's whole GPU check in one device call (< 10 min):
# the CUDA gpu tests of the Transformer-era ops, attention kernels, exported models and the slot
# pool (and the older tests of code this work touched), then bench/gpu/bench_transformer.py
# (voxrt vs PyTorch eager and CUDA graph, FP16).
# Made here by
#   cmake --build build --target voxrt gpu_cuda_backend node_conformance && scripts/pack-for-device.sh build
# and run on the GPU machine from the repo root with .device carried:
#   bash bench/gpu/transformer_session.sh
# Writes into $OUT: env.txt, gpu_tests.log (the failures and the summary), gpu_tests.xml,
# bench.log, bench.json, transformer_summary.txt, inspect.txt, tactic_timings.txt.
# VOXRT_TRANSFORMER_TESTS=0 skips the tests (all the time to the benchmark); VOXRT_BENCH_CASES
# picks cases (default conformer,encoder,decoder); VOXRT_BENCH_ITERS the timed runs per round.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/voxrt_transformer_out}
mkdir -p "$OUT"
T0=$SECONDS
source bench/gpu/device_env.sh
{
  echo "== $(date -u)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  ldd "$dev/bin/voxrt" | grep "not found"
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  ls .device/shared/bench 2>&1
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [ "${VOXRT_TRANSFORMER_TESTS:-1}" != 0 ]; then
  tests_limit=${VOXRT_TRANSFORMER_TESTS_S:-210}
  echo "== gpu tests (limit $tests_limit s)"
  VOXRT_GPU_MODEL_DIR="$dev/data/models" timeout -k 5 "$tests_limit" "$dev/bin/gpu_cuda_backend" \
    --gtest_filter='CudaTransformerOps.*:CudaAttention.*:CudaTransformerModels.*:CudaSlots.*:CudaBackendNoDevice.*:CudaOps.Elementwise:CudaOps.DataMovement:CudaOps.ContiguousSlices*:CudaOps.ConcatParts*:CudaOps.ConvEveryPrecision:CudaOps.PoolingReductionsAndRuntimeClip:CudaOps.SoftmaxAndLayerNorm:CudaModels.Ds2StreamingGruChunksMatchCpu:CudaEngine.UnsupportedNodesAreListedAtBuild' \
    --gtest_output=xml:"$OUT/gpu_tests.xml" > "$OUT/gpu_tests.full.log" 2>&1
  echo "gpu tests rc=$? after $((SECONDS - T0)) s"
  # The failures with their context and the per-test verdicts; the full log stays on the device.
  grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED|note) +\]|Failure|Expected|Which is|Actual|error|tactics|trace|differ" \
    "$OUT/gpu_tests.full.log" | head -400 > "$OUT/gpu_tests.log"
  rm -f "$OUT/gpu_tests.full.log"
  grep -E "^\[ +(FAILED|PASSED) +\]" "$OUT/gpu_tests.log" | tail -30
fi

# VOXRT_SESSION_BUDGET_S: the seconds this script may take in all (when it shares a call).
left=$((${VOXRT_SESSION_BUDGET_S:-570} - (SECONDS - T0)))
echo "== benchmark (limit $left s)"
timeout -k 5 "$left" python3 bench/gpu/bench_transformer.py --voxrt "$dev/bin/voxrt" --out "$OUT" \
  --iters "${VOXRT_BENCH_ITERS:-50}" --rounds 2 --budget-s $((left - 15)) \
  --cases "${VOXRT_BENCH_CASES:-conformer,encoder,decoder}" > "$OUT/bench.log" 2>&1
echo "bench rc=$?; total $((SECONDS - T0)) s"
tail -12 "$OUT/bench.log"
