#!/usr/bin/env bash
# NeMo transducers (random weights, made by tests/models/nemo_transducer.py in sherpa-onnx's NeMo
# transducer layout: an RNN-T and a TDT model) through the CLI: `voxrt build --model-dir` with no
# metadata written by hand, then `voxrt transcribe` on several files at once (batched as streams)
# and `voxrt serve` (an upload) must give, file by file, the text of the Python reference decoder
# (NeMo's front end, the torch modules, NeMo's greedy RNN-T / TDT rules with max_symbols 10; and
# modified beam search, width 8, on the RNN-T model).
set -euo pipefail
voxrt=$1
source "$(dirname "$0")/nemo_cli_common.sh"
script="$src/tests/models/nemo_transducer.py"

for kind in rnnt tdt; do
  flag=""
  [ "$kind" = tdt ] && flag=--tdt
  "$py" "$script" export "$work/$kind" $flag > "$work/$kind.log" 2>&1 || { cat "$work/$kind.log"; exit 1; }
  "$voxrt" build --model-dir "$work/$kind" --engine "$work/$kind.bundle" --no-autotune --max-batch 4
  test -f "$work/$kind.bundle/bundle.json"
  "$py" "$script" reference "$work/$kind" "${files[@]}" 2>/dev/null > "$work/$kind.reference"
  "$voxrt" transcribe --engine "$work/$kind.bundle" --vad off --json "${files[@]}" 2>/dev/null \
    > "$work/$kind.voxrt"
  for f in "${files[@]}"; do
    want=$(reference_text "$work/$kind.reference" "$f")
    [ -n "$want" ] || { echo "FAIL: the reference decoded nothing for $f"; exit 1; }
    got=$(transcribed_text "$work/$kind.voxrt" "$f")
    check "$kind transcribe $(basename "$f")" "$want" "$got"
  done
  if [ "$kind" = rnnt ]; then
    # Modified beam search (width 8) with the LSTM state per hypothesis = the reference's.
    "$py" "$script" reference "$work/$kind" --search beam --beam 8 "${files[@]}" 2>/dev/null \
      > "$work/beam.reference"
    "$voxrt" transcribe --engine "$work/$kind.bundle" --vad off --decoder beam --beam 8 --json \
      "${files[@]}" 2>/dev/null > "$work/beam.voxrt"
    for f in "${files[@]}"; do
      got=$(transcribed_text "$work/beam.voxrt" "$f")
      check "$kind transcribe beam $(basename "$f")" "$(reference_text "$work/beam.reference" "$f")" "$got"
    done
  fi
  # The server (OpenAI-style upload) gives the same text as the reference.
  start_server "$voxrt" "$work/serve-$kind.log" --engine "$work/$kind.bundle" --vad off --max-batch 4
  for f in "${files[@]}"; do
    check "$kind serve upload $(basename "$f")" "$(reference_text "$work/$kind.reference" "$f")" \
      "$(upload_text "$f")"
  done
  stop_server
done
