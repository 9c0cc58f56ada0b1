#!/usr/bin/env bash
# NeMo's cache-aware streaming FastConformer-CTC (random weights, made by
# tests/models/nemo_cache_aware.py and exported as sherpa-onnx's script exports it) through the
# CLI: `voxrt build --model-dir` with no metadata written by hand; `voxrt transcribe` of two files
# at once (streams of different lengths batched together) and `voxrt serve` (an upload) must give,
# file by file, the text of the Python reference (NeMo's cache-aware streaming loop, greedy CTC).
set -euo pipefail
voxrt=$1
source "$(dirname "$0")/nemo_cli_common.sh"
script="$src/tests/models/nemo_cache_aware.py"

"$py" "$script" export "$work/model" > "$work/export.log" 2>&1 || { cat "$work/export.log"; exit 1; }
"$voxrt" build --model-dir "$work/model" --engine "$work/model.bundle" --no-autotune --max-batch 4
test -f "$work/model.bundle/bundle.json"
"$py" "$script" reference "$work/model" "${files[@]}" 2>/dev/null > "$work/reference"
"$voxrt" transcribe --engine "$work/model.bundle" --vad off --json "${files[@]}" 2>/dev/null \
  > "$work/voxrt"
for f in "${files[@]}"; do
  want=$(reference_text "$work/reference" "$f")
  [ -n "$want" ] || { echo "FAIL: the reference decoded nothing for $f"; exit 1; }
  got=$(transcribed_text "$work/voxrt" "$f")
  check "transcribe $(basename "$f")" "$want" "$got"
done

start_server "$voxrt" "$work/serve.log" --engine "$work/model.bundle" --vad off --max-batch 4
for f in "${files[@]}"; do
  want=$(reference_text "$work/reference" "$f")
  check "serve upload $(basename "$f")" "$want" "$(upload_text "$f")"
done
stop_server
