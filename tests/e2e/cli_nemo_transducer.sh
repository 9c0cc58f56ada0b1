#!/usr/bin/env bash
# NeMo transducers (random weights, made by tests/models/nemo_transducer.py in sherpa-onnx's NeMo
# transducer layout: an RNN-T and a TDT model) through the CLI: `voxrt build --model-dir` with no
# metadata written by hand, then `voxrt transcribe` on several files at once (batched as streams)
# and `voxrt serve` (an upload) must give, file by file, the text of the Python reference decoder
# (NeMo's front end, the torch modules, NeMo's greedy RNN-T / TDT rules with max_symbols 10; and
# modified beam search, width 8, on the RNN-T model).
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
source "$(dirname "$0")/serve_for_test.sh"
trap 'stop_server; rm -rf "$work"' EXIT
py=/usr/bin/python3
script="$src/tests/models/nemo_transducer.py"
wav="$src/samples/play_music.wav"
# A second clip: the sample reversed, after 0.3 s of silence, its length not a whole number of hops.
"$py" - "$wav" "$work/reversed.wav" <<'PY'
import sys, wave
import numpy as np
with wave.open(sys.argv[1], "rb") as w:
    x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
y = np.concatenate([np.zeros(4800, dtype=np.int16), x[::-1][:-77]])
with wave.open(sys.argv[2], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(y.tobytes())
PY
files=("$wav" "$work/reversed.wav")

check() {  # name expected got
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: expected '$2', got '$3'"
    exit 1
  fi
  echo "ok: $1: $3"
}
reference_text() {  # reference-file wav
  "$py" -c 'import json,sys; print([j for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2]][0]["text"])' "$1" "$2"
}

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
    got=$("$py" -c 'import json,sys; print(" ".join(j["text"] for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2] and j["is_final"] and j["text"]))' "$work/$kind.voxrt" "$f")
    check "$kind transcribe $(basename "$f")" "$want" "$got"
  done
  if [ "$kind" = rnnt ]; then
    # Modified beam search (width 8) with the LSTM state per hypothesis = the reference's.
    "$py" "$script" reference "$work/$kind" --search beam --beam 8 "${files[@]}" 2>/dev/null \
      > "$work/beam.reference"
    "$voxrt" transcribe --engine "$work/$kind.bundle" --vad off --decoder beam --beam 8 --json \
      "${files[@]}" 2>/dev/null > "$work/beam.voxrt"
    for f in "${files[@]}"; do
      got=$("$py" -c 'import json,sys; print(" ".join(j["text"] for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2] and j["is_final"] and j["text"]))' "$work/beam.voxrt" "$f")
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
