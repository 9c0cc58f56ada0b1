#!/usr/bin/env bash
# A torchaudio Emformer RNN-T exported as a user of torchaudio's streaming tutorial would (random
# weights, made by tests/models/torchaudio_emformer.py), through the CLI and the server:
# - `voxrt check`: each exported graph (the transcriber's streaming infer with its states, the
#   predictor step, the joiner) on voxrt's CPU engine against torch's eager outputs, and the
#   predictor and joiner against onnxruntime;
# - `voxrt build --model-dir` with no metadata written by hand, and its errors for a missing
#   global_stats.json and SentencePiece model;
# - `voxrt transcribe` of several files as concurrent streams must give the Python reference
#   decoder's text for each, batched (a bundle built for 4 streams per encoder call) and alone
#   (built for 1), whatever the audio chunk size; and modified beam search (beam 4) the reference's
#   beam text, with a hotword too (it must change some of the reference's texts);
# - `voxrt serve`: an OpenAI-style upload gives the same text, greedy and beam.
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
source "$(dirname "$0")/serve_for_test.sh"
trap 'stop_server; rm -rf "$work"' EXIT
py=/usr/bin/python3
script="$src/tests/models/torchaudio_emformer.py"
"$py" "$script" export "$work/model" > "$work/export.log" 2>&1 || { cat "$work/export.log"; exit 1; }

# ---- the exported graphs on voxrt's engine vs torch ----
"$py" "$script" check-data "$work/model" "$work/data"
for graph in transcriber predictor joiner; do
  "$voxrt" check "$work/model/$graph.onnx" --data "$work/data/$graph" > "$work/check_$graph.log" 2>&1 ||
    { cat "$work/check_$graph.log"; echo "FAIL: $graph.onnx differs from torch"; exit 1; }
  echo "ok: $graph.onnx matches torch ($(tail -1 "$work/check_$graph.log"))"
done

# The predictor and joiner against onnxruntime as well (it refuses the transcriber's traced infer:
# Slice nodes with mixed int32/int64 indices, from the int32 past_length state).
for graph in predictor joiner; do
  mkdir -p "$work/ort/$graph" && cp "$work/data/$graph"/input_*.pb "$work/ort/$graph/"
  if "$voxrt" check "$work/model/$graph.onnx" --data "$work/ort/$graph" > "$work/ort_$graph.log" 2>&1; then
    echo "ok: $graph.onnx matches onnxruntime"
  elif grep -q "^FAIL" "$work/ort_$graph.log"; then
    cat "$work/ort_$graph.log"; echo "FAIL: $graph.onnx differs from onnxruntime"; exit 1
  else
    echo "skipped: $graph.onnx vs onnxruntime: $(tail -1 "$work/ort_$graph.log")"
  fi
done

# ---- import, and its errors ----
"$voxrt" build --model-dir "$work/model" --engine "$work/bundle" --no-autotune --max-batch 4
test -f "$work/bundle/bundle.json"
# One stream per encoder call: each stream alone.
"$voxrt" build --model-dir "$work/model" --engine "$work/bundle_alone" --no-autotune --max-batch 1 \
  > /dev/null
grep -q '"transducer_stateful"' "$work/bundle/bundle.json"
expect_import_error() {  # name folder pattern
  local out
  if out=$("$voxrt" build --model-dir "$2" --engine "$work/bad_bundle" --no-autotune 2>&1); then
    echo "FAIL: $1: the import succeeded"
    exit 1
  fi
  echo "$out" | grep -q "$3" || { echo "FAIL: $1: expected '$3' in: $out"; exit 1; }
  echo "ok: $1"
}
cp -r "$work/model" "$work/no_stats" && rm "$work/no_stats/global_stats.json"
expect_import_error "missing global stats" "$work/no_stats" "global_stats.json: missing"
cp -r "$work/model" "$work/no_spm" && rm "$work/no_spm/spm_bpe.model"
expect_import_error "missing SentencePiece model" "$work/no_spm" "expected one SentencePiece model"
"$py" "$script" export "$work/no_memory" --memory 0 > "$work/export_no_memory.log" 2>&1
expect_import_error "memory-less Emformer refused" "$work/no_memory" "max_memory_size 0"

# ---- several streams: pieces of the sample of different lengths and starts ----
"$py" - "$src/samples/play_music.wav" "$work" <<'PY'
import sys, wave
src, out = sys.argv[1], sys.argv[2]
with wave.open(src, "rb") as w:
    rate, data = w.getframerate(), w.readframes(w.getnframes())
# (start, length) in seconds: ends inside a segment, on a segment boundary, a short file.
for i, (start, length) in enumerate([(0.0, 2.1), (0.3, 1.28), (0.9, 0.55), (0.1, 1.77)]):
    a, b = int(start * rate) * 2, int((start + length) * rate) * 2
    with wave.open(f"{out}/stream{i}.wav", "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
        w.writeframes(data[a:b])
PY
wavs=("$work"/stream0.wav "$work"/stream1.wav "$work"/stream2.wav "$work"/stream3.wav)
"$py" "$script" reference "$work/model" "${wavs[@]}" 2>/dev/null |
  "$py" -c 'import json,sys; [print(json.loads(l)["text"]) for l in sys.stdin]' > "$work/reference.txt"
[ "$(wc -l < "$work/reference.txt")" = 4 ] || { echo "FAIL: the reference gave no 4 texts"; exit 1; }
[ "$(sort -u "$work/reference.txt" | wc -l)" -gt 1 ] || { echo "FAIL: the 4 reference texts are equal"; exit 1; }
final_texts() {  # the final texts of voxrt transcribe --json, one per file in order
  "$py" -c 'import json,sys; [print(j["text"]) for j in map(json.loads, sys.stdin) if j["is_final"]]'
}
for run in "bundle 20" "bundle_alone 20" "bundle 170" "bundle_alone 37"; do
  read -r bundle chunk_ms <<< "$run"
  "$voxrt" transcribe --engine "$work/$bundle" --vad off --chunk-ms "$chunk_ms" --json "${wavs[@]}" \
    2>/dev/null | final_texts > "$work/voxrt.txt"
  if ! diff "$work/reference.txt" "$work/voxrt.txt" > "$work/diff.txt"; then
    cat "$work/diff.txt"
    echo "FAIL: transcribe $run differs from the reference"
    exit 1
  fi
  echo "ok: transcribe ($bundle, $chunk_ms ms chunks): the reference's 4 texts"
done
"$py" "$script" reference "$work/model" --search beam --beam 4 "${wavs[@]}" 2>/dev/null |
  "$py" -c 'import json,sys; [print(json.loads(l)["text"]) for l in sys.stdin]' > "$work/reference_beam.txt"
cmp -s "$work/reference.txt" "$work/reference_beam.txt" &&
  { echo "FAIL: beam and greedy references agree everywhere: the beam comparison would show nothing"; exit 1; }
for bundle in bundle bundle_alone; do
  "$voxrt" transcribe --engine "$work/$bundle" --vad off --decoder beam --beam 4 --json "${wavs[@]}" \
    2>/dev/null | final_texts > "$work/voxrt_beam.txt"
  if ! diff "$work/reference_beam.txt" "$work/voxrt_beam.txt" > "$work/diff.txt"; then
    cat "$work/diff.txt"
    echo "FAIL: transcribe beam 4 ($bundle) differs from the reference"
    exit 1
  fi
  echo "ok: transcribe beam 4 ($bundle): the reference's 4 texts"
done

# Hotwords (beam): where the reference's text changes, and only there.
echo "left" > "$work/hotwords.txt"
"$py" "$script" reference "$work/model" --search beam --beam 4 --hotwords "$work/hotwords.txt" \
  --hotword-bonus 6 "${wavs[@]}" 2>/dev/null |
  "$py" -c 'import json,sys; [print(json.loads(l)["text"]) for l in sys.stdin]' > "$work/reference_hot.txt"
cmp -s "$work/reference_beam.txt" "$work/reference_hot.txt" &&
  { echo "FAIL: the hotword changes none of the reference's texts"; exit 1; }
"$voxrt" transcribe --engine "$work/bundle" --vad off --decoder beam --beam 4 \
  --hotwords "$work/hotwords.txt" --hotword-bonus 6 --json "${wavs[@]}" 2>/dev/null |
  final_texts > "$work/voxrt_hot.txt"
if ! diff "$work/reference_hot.txt" "$work/voxrt_hot.txt" > "$work/diff.txt"; then
  cat "$work/diff.txt"
  echo "FAIL: transcribe beam 4 + hotwords differs from the reference"
  exit 1
fi
echo "ok: transcribe beam 4 + hotwords: the reference's 4 texts" \
  "($(diff "$work/reference_beam.txt" "$work/reference_hot.txt" | grep -c '^>') changed by the hotword)"

# ---- the server ----
for decoder in greedy beam; do
  start_server "$voxrt" "$work/serve.log" --engine "$work/bundle" --vad off --decoder "$decoder" \
    --beam 4 --max-batch 4
  got=$(upload_text "${wavs[1]}")
  stop_server
  reference_file="$work/reference.txt"
  [ "$decoder" = beam ] && reference_file="$work/reference_beam.txt"
  want=$(sed -n 2p "$reference_file")
  [ "$got" = "$want" ] || { echo "FAIL: serve $decoder upload: expected '$want', got '$got'"; exit 1; }
  echo "ok: serve $decoder upload: the reference's text"
done
echo PASS
