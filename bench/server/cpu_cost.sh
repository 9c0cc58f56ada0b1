#!/usr/bin/env bash
# bench/server/cpu_cost.sh [STREAMS...]: the server's own CPU cost per stream, on this machine.
# Serves bench/server/make_null_model.py's model (the default model's interface and features,
# almost no compute) with the CPU backend, so what limits the stream count is the server
# (network threads, the worker's queues and rounds, features, decoding, replies), not the
# engine. Runs bench/server/gpu_streams.sh with a local binary; the same summary (summary.txt:
# client latencies, server reply latency, cores per thread kind).
# Settings (environment): VOXRT_VOXRT build/bin/voxrt, VOXRT_WORK_DIR /tmp/voxrt_cpu_cost, OUT
# $VOXRT_WORK_DIR/out, VOXRT_IO_THREADS 1, VOXRT_FRONT_END_THREADS 1, VOXRT_LOADGEN_THREADS 1,
# VOXRT_MAX_BATCH 256, VOXRT_DURATION_S 20; the rest as in gpu_streams.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${VOXRT_WORK_DIR:-/tmp/voxrt_cpu_cost}
mkdir -p "$work"
/usr/bin/python3 bench/server/make_null_model.py "$work/null.onnx"
[ -d "$work/wavs" ] || bash bench/server/make_wavs.sh "$work/wavs"
OUT=${OUT:-$work/out} VOXRT_VOXRT=${VOXRT_VOXRT:-build/bin/voxrt} VOXRT_WORK_DIR=$work \
  VOXRT_MODEL=$work/null.onnx VOXRT_WAVS=$work/wavs VOXRT_DEVICE=cpu VOXRT_PRECISION=fp32 \
  VOXRT_MAX_BATCH=${VOXRT_MAX_BATCH:-256} VOXRT_IO_THREADS=${VOXRT_IO_THREADS:-1} \
  VOXRT_FRONT_END_THREADS=${VOXRT_FRONT_END_THREADS:-1} \
  VOXRT_LOADGEN_THREADS=${VOXRT_LOADGEN_THREADS:-1} bash bench/server/gpu_streams.sh "$@"
