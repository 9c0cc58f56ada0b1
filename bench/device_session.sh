#!/usr/bin/env bash
# bench/device_session.sh: one device call that runs the GPU tests and benchmark
# (bench/gpu/device_run.sh) and the server stream sweep (bench/server/gpu_streams.sh), then packs
# every result into $OUT/results.tgz (the device tool brings back only a few files).
# Run from the repo root on the GPU machine with .device carried, made here by
#   scripts/pack-for-device.sh build && bash bench/server/make_wavs.sh
# Settings: VOXRT_SERVER_RUNS (default "auto:8:8:6:2000 2500 3000;0,0,0:2:8:6:2000 3000"): runs
# separated by ';', each DEVICES:FRONT_END_THREADS:IO_THREADS:LOADGEN_THREADS:COUNTS;
# VOXRT_SKIP_GPU_RUN=1 skips device_run.sh, VOXRT_SKIP_SERVER=1 the server runs.
set -uo pipefail
cd "$(dirname "$0")/.."
results=${OUT:-/tmp/voxrt_session_out}
work=/tmp/voxrt_session
rm -rf "$work" && mkdir -p "$work"
if [ "${VOXRT_SKIP_GPU_RUN:-0}" != 1 ]; then
  OUT=$work/gpu bash bench/gpu/device_run.sh > "$work/device_run.out" 2>&1
fi
IFS=';' read -ra runs <<< "${VOXRT_SERVER_RUNS:-auto:8:8:6:2000 2500 3000;0,0,0:2:8:6:2000 3000}"
[ "${VOXRT_SKIP_SERVER:-0}" = 1 ] && runs=()
i=0
for run in "${runs[@]}"; do
  IFS=':' read -r devices front io loadgen counts <<< "$run"
  i=$((i + 1))
  echo "server run $i: devices $devices, front-end threads $front, io threads $io, loadgen threads $loadgen, streams $counts" > "$work/server$i.settings"
  # shellcheck disable=SC2086  # counts is a list
  OUT=$work/server$i VOXRT_DEVICES=$devices VOXRT_FRONT_END_THREADS=$front VOXRT_IO_THREADS=$io \
    VOXRT_LOADGEN_THREADS=$loadgen bash bench/server/gpu_streams.sh $counts > "$work/server$i.out" 2>&1
done
tar -czf "$results/results.tgz" -C /tmp voxrt_session
tail -60 "$work/device_run.out" 2>/dev/null
for f in "$work"/server*/summary.txt; do cat "${f%/summary.txt}.settings"; cat "$f"; done
