#!/usr/bin/env bash
# NeMo Conformer-CTC exports (random weights, made by tests/models/nemo_ctc.py) through the CLI:
# `voxrt build --model-dir` on sherpa-onnx's layout and on NeMo's own export with the .nemo
# archive's files (a BPE and a character model), with no metadata written by hand; then
# `voxrt transcribe` on several files at once (batched as streams) and `voxrt serve` (an upload)
# must give, file by file, the text of the Python reference decoder (NeMo's front end, the torch
# forward of the same module, greedy CTC with the blank last).
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
source "$(dirname "$0")/serve_for_test.sh"
trap 'stop_server; rm -rf "$work"' EXIT
py=/usr/bin/python3
script="$src/tests/models/nemo_ctc.py"
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

for layout in sherpa nemo nemo-char; do
  "$py" "$script" export "$work/$layout" --layout "$layout" > "$work/$layout.log" 2>&1 ||
    { cat "$work/$layout.log"; exit 1; }
  "$voxrt" build --model-dir "$work/$layout" --engine "$work/$layout.bundle" --no-autotune --max-batch 4
  test -f "$work/$layout.bundle/bundle.json"
  "$py" "$script" reference "$work/$layout" "${files[@]}" 2>/dev/null > "$work/$layout.reference"
  "$voxrt" transcribe --engine "$work/$layout.bundle" --vad off --json "${files[@]}" 2>/dev/null \
    > "$work/$layout.voxrt"
  for f in "${files[@]}"; do
    want=$("$py" -c 'import json,sys; print([j for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2]][0]["text"])' "$work/$layout.reference" "$f")
    [ -n "$want" ] || { echo "FAIL: the reference decoded nothing for $f"; exit 1; }
    got=$("$py" -c 'import json,sys; print(" ".join(j["text"] for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2] and j["is_final"] and j["text"]))' "$work/$layout.voxrt" "$f")
    check "$layout transcribe $(basename "$f")" "$want" "$got"
  done
done

# Beam search (width 8, no LM) with the blank last = the reference's prefix beam search.
"$py" "$script" reference "$work/nemo" --search beam --beam 8 "${files[@]}" 2>/dev/null > "$work/beam.reference"
"$voxrt" transcribe --engine "$work/nemo.bundle" --vad off --decoder beam --beam 8 --json "${files[@]}" \
  2>/dev/null > "$work/beam.voxrt"
for f in "${files[@]}"; do
  want=$("$py" -c 'import json,sys; print([j for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2]][0]["text"])' "$work/beam.reference" "$f")
  got=$("$py" -c 'import json,sys; print(" ".join(j["text"] for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2] and j["is_final"] and j["text"]))' "$work/beam.voxrt" "$f")
  check "nemo transcribe beam $(basename "$f")" "$want" "$got"
done

# The server (OpenAI-style upload) gives the same text as the reference, on the NeMo BPE bundle.
start_server "$voxrt" "$work/serve.log" --engine "$work/nemo.bundle" --vad off --max-batch 4
for f in "${files[@]}"; do
  want=$("$py" -c 'import json,sys; print([j for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2]][0]["text"])' "$work/nemo.reference" "$f")
  check "nemo serve upload $(basename "$f")" "$want" "$(upload_text "$f")"
done
stop_server
