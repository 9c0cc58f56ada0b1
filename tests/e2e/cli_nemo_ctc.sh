#!/usr/bin/env bash
# NeMo Conformer-CTC exports (random weights, made by tests/models/nemo_ctc.py) through the CLI:
# `voxrt build --model-dir` on sherpa-onnx's layout and on NeMo's own export with the .nemo
# archive's files (a BPE and a character model), with no metadata written by hand; then
# `voxrt transcribe` on several files at once (batched as streams) and `voxrt serve` (an upload)
# must give, file by file, the text of the Python reference decoder (NeMo's front end, the torch
# forward of the same module, greedy CTC with the blank last).
set -euo pipefail
voxrt=$1
source "$(dirname "$0")/nemo_cli_common.sh"
script="$src/tests/models/nemo_ctc.py"

for layout in sherpa nemo nemo-char; do
  "$py" "$script" export "$work/$layout" --layout "$layout" > "$work/$layout.log" 2>&1 ||
    { cat "$work/$layout.log"; exit 1; }
  "$voxrt" build --model-dir "$work/$layout" --engine "$work/$layout.bundle" --no-autotune --max-batch 4
  test -f "$work/$layout.bundle/bundle.json"
  "$py" "$script" reference "$work/$layout" "${files[@]}" 2>/dev/null > "$work/$layout.reference"
  "$voxrt" transcribe --engine "$work/$layout.bundle" --vad off --json "${files[@]}" 2>/dev/null \
    > "$work/$layout.voxrt"
  for f in "${files[@]}"; do
    want=$(reference_text "$work/$layout.reference" "$f")
    [ -n "$want" ] || { echo "FAIL: the reference decoded nothing for $f"; exit 1; }
    got=$(transcribed_text "$work/$layout.voxrt" "$f")
    check "$layout transcribe $(basename "$f")" "$want" "$got"
  done
done

# Beam search (width 8, no LM) with the blank last = the reference's prefix beam search.
"$py" "$script" reference "$work/nemo" --search beam --beam 8 "${files[@]}" 2>/dev/null > "$work/beam.reference"
"$voxrt" transcribe --engine "$work/nemo.bundle" --vad off --decoder beam --beam 8 --json "${files[@]}" \
  2>/dev/null > "$work/beam.voxrt"
for f in "${files[@]}"; do
  want=$(reference_text "$work/beam.reference" "$f")
  got=$(transcribed_text "$work/beam.voxrt" "$f")
  check "nemo transcribe beam $(basename "$f")" "$want" "$got"
done

# The server (OpenAI-style upload) gives the same text as the reference, on the NeMo BPE bundle.
start_server "$voxrt" "$work/serve.log" --engine "$work/nemo.bundle" --vad off --max-batch 4
for f in "${files[@]}"; do
  want=$(reference_text "$work/nemo.reference" "$f")
  check "nemo serve upload $(basename "$f")" "$want" "$(upload_text "$f")"
done
stop_server
