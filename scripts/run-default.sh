#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is needed, build voxrt, compile the
# default model into an engine for this machine (CPU, the embedded default) and transcribe the
# bundled sample.
#   bash scripts/run-default.sh [AUDIO...]      (default: samples/play_music.wav)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target voxrt
engine=build/default.engine
model=models/default/model.onnx
if [ ! -f "$model" ]; then
  echo "run-default: $model is missing (recipes/README.md makes it)" >&2
  exit 1
fi
if [ ! -f "$engine" ] || [ "$model" -nt "$engine" ] || [ build/bin/voxrt -nt "$engine" ]; then
  # The streaming states come from the model's metadata (voxrt.state_pairs), the tuned decoding
  # settings from model.metadata.txt beside it. Two profiles, each with the kernels timed at its
  # own opt shape: one stream alone (its 32-frame chunks, 4 frames at least: the model subsamples
  # by 4) and batches of concurrent streams.
  build/bin/voxrt build --onnx "$model" --engine "$engine" --timing-cache build/cpu.cache \
    --profile features:1x4x80/1x32x80/1x32x80 --profile features:2x4x80/8x32x80/64x32x80
fi
if [ $# -eq 0 ]; then set -- samples/play_music.wav; fi
build/bin/voxrt transcribe --engine "$engine" "$@"
