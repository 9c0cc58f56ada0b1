#!/usr/bin/env bash
# The transducer's encoder and search per chunk (docs/perf/transducer.md): a 12 x 256 streaming
# Conformer transducer in icefall's layout (random weights, 500 tokens, 160 ms chunks, made by
# tests/models/icefall_transducer.py), imported with `voxrt build --model-dir` (autotuned at the
# thread count it runs with), then transducer_bench at 1, 16 and 256 streams, greedy and modified
# beam search (beam 4).
#   bench/transducer/run.sh [BUILD_DIR] [THREADS] [DEVICE]     DEVICE: cpu (default) or cuda
# PY: the Python with torch and onnx that exports the model (default /usr/bin/python3, Debian's).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
threads=${2:-1}
device=${3:-cpu}
work=${VOXRT_BENCH_DIR:-$(mktemp -d)}
precision=fp32
[ "$device" = cuda ] && precision=fp16
if [ ! -f "$work/model/encoder-epoch-99-avg-1.onnx" ]; then
  "${PY:-/usr/bin/python3}" "$root/tests/models/icefall_transducer.py" export "$work/model" --type conformer \
    --layers 12 --dim 256 --vocab 500 > "$work/export.log" 2>&1
fi
"$build/bin/voxrt" build --model-dir "$work/model" --engine "$work/bundle_$device" --device "$device" \
  --precision "$precision" --max-batch 256 --max-beam 4 --threads "$threads" \
  --timing-cache "$work/timing_$device.cache"
echo "machine: $(lscpu | grep 'Model name' | sed 's/.*: *//'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bin/transducer_bench" "$work/bundle_$device" --streams 1,16,256 --chunks 10 --threads "$threads"
"$build/bin/transducer_bench" "$work/bundle_$device" --streams 1,16,256 --chunks 5 --search beam \
  --beam 4 --threads "$threads"
