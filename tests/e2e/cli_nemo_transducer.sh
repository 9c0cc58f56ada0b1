#!/usr/bin/env bash
# NeMo transducers (random weights, made by tests/models/nemo_transducer.py in sherpa-onnx's NeMo
# transducer layout: an RNN-T and a TDT model) through the CLI: `voxrt build --model-dir` with no
# metadata written by hand, then `voxrt transcribe` on several files at once (batched as streams)
# and `voxrt serve` (an upload) must give, file by file, the text of the Python reference decoder
# (NeMo's front end, the torch modules, NeMo's greedy RNN-T / TDT rules with max_symbols 10; beam
# search, width 8: modified beam search on the RNN-T model, the TDT beam search on the TDT model;
# a hotword in greedy search on both and in the TDT beam search, width 4; the server with the TDT
# beam search, width 8).
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
  # Beam search (width 8) with the LSTM state per hypothesis = the reference's: modified beam
  # search (RNN-T), the TDT beam search (TDT).
  "$py" "$script" reference "$work/$kind" --search beam --beam 8 "${files[@]}" 2>/dev/null \
    > "$work/$kind.beam.reference"
  "$voxrt" transcribe --engine "$work/$kind.bundle" --vad off --decoder beam --beam 8 --json \
    "${files[@]}" 2>/dev/null > "$work/$kind.beam.voxrt"
  for f in "${files[@]}"; do
    got=$(transcribed_text "$work/$kind.beam.voxrt" "$f")
    check "$kind transcribe beam $(basename "$f")" "$(reference_text "$work/$kind.beam.reference" "$f")" "$got"
  done
  # Hotwords in greedy search (`--decoder greedy`: with --hotwords the CLI's default is beam): the
  # reference's greedy text with the same phrase, which changes the first file's text.
  echo "B E" > "$work/greedy_hotwords.txt"
  "$py" "$script" reference "$work/$kind" --hotwords "$work/greedy_hotwords.txt" "${files[@]}" \
    2>/dev/null > "$work/$kind.greedy_hotwords.reference"
  [ "$(reference_text "$work/$kind.reference" "${files[0]}")" != \
    "$(reference_text "$work/$kind.greedy_hotwords.reference" "${files[0]}")" ] ||
    { echo "FAIL: the hotword does not change the reference's greedy text: the check would not tell"; exit 1; }
  "$voxrt" transcribe --engine "$work/$kind.bundle" --vad off --decoder greedy \
    --hotwords "$work/greedy_hotwords.txt" --json "${files[@]}" 2>/dev/null > "$work/$kind.greedy_hotwords.voxrt"
  for f in "${files[@]}"; do
    check "$kind transcribe greedy hotwords $(basename "$f")" \
      "$(reference_text "$work/$kind.greedy_hotwords.reference" "$f")" \
      "$(transcribed_text "$work/$kind.greedy_hotwords.voxrt" "$f")"
  done
  if [ "$kind" = tdt ]; then
    # Hotwords in the TDT beam search (width 4): the reference's text with the same phrase, which
    # changes the first file's text from the one without it.
    echo "HE" > "$work/hotwords.txt"
    "$py" "$script" reference "$work/$kind" --search beam --beam 4 "${files[@]}" 2>/dev/null \
      > "$work/plain4.reference"
    "$py" "$script" reference "$work/$kind" --search beam --beam 4 --hotwords "$work/hotwords.txt" \
      "${files[@]}" 2>/dev/null > "$work/hotwords.reference"
    [ "$(reference_text "$work/plain4.reference" "${files[0]}")" != \
      "$(reference_text "$work/hotwords.reference" "${files[0]}")" ] ||
      { echo "FAIL: the hotword does not change the reference's text: the check would not tell"; exit 1; }
    "$voxrt" transcribe --engine "$work/$kind.bundle" --vad off --decoder beam --beam 4 \
      --hotwords "$work/hotwords.txt" --json "${files[@]}" 2>/dev/null > "$work/hotwords.voxrt"
    for f in "${files[@]}"; do
      check "$kind transcribe beam hotwords $(basename "$f")" \
        "$(reference_text "$work/hotwords.reference" "$f")" "$(transcribed_text "$work/hotwords.voxrt" "$f")"
    done
  fi
  # The server (OpenAI-style upload) gives the same text as the reference.
  start_server "$voxrt" "$work/serve-$kind.log" --engine "$work/$kind.bundle" --vad off --max-batch 4
  for f in "${files[@]}"; do
    check "$kind serve upload $(basename "$f")" "$(reference_text "$work/$kind.reference" "$f")" \
      "$(upload_text "$f")"
  done
  stop_server
  if [ "$kind" = tdt ]; then
    # The server with the TDT beam search (width 8) gives the reference's beam text.
    start_server "$voxrt" "$work/serve-$kind-beam.log" --engine "$work/$kind.bundle" --vad off \
      --max-batch 4 --decoder beam --beam 8
    for f in "${files[@]}"; do
      check "$kind serve upload beam $(basename "$f")" \
        "$(reference_text "$work/$kind.beam.reference" "$f")" "$(upload_text "$f")"
    done
    stop_server
  fi
done
