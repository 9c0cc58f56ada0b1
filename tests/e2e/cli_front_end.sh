#!/usr/bin/env bash
# voxrt transcribe with the front-end models: --vad silero (built once into the engine cache,
# then reused), silence costs no model work, --wake-word gates recognition. Needs the models of
# scripts/fetch-third-party.sh: without them it prints SKIP and exits 77 (ctest: skipped).
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
models="$src/.third_party/models"
for m in silero_vad_v5 melspectrogram embedding_model hey_jarvis_v0.1; do
  [ -f "$models/$m.onnx" ] || { echo "SKIP: $models/$m.onnx is missing (scripts/fetch-third-party.sh)"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export VOXRT_CACHE_DIR="$work/cache"
"$voxrt" build --onnx "$src/models/default/model.onnx" --engine "$work/default.engine" \
  --profile features:1x4x80/8x32x80/64x32x80 --no-autotune 2>/dev/null
fail() { echo "FAIL: $*"; exit 1; }

# Silero: the bundled sample is recognised; the first run builds the VAD engine, the second reuses it.
text=$("$voxrt" transcribe --engine "$work/default.engine" --vad silero \
  --vad-model "$models/silero_vad_v5.onnx" "$src/samples/play_music.wav" 2>"$work/err1")
cat "$work/err1"
grep -q "play some music" <<<"$text" || fail "expected 'play some music', got '$text'"
grep -q "building .*silero_vad_v5.onnx" "$work/err1" || fail "the first run did not build the VAD engine"
grep -Eq "VAD engine calls [1-9]" "$work/err1" || fail "no VAD engine calls reported"
"$voxrt" transcribe --engine "$work/default.engine" --vad silero \
  --vad-model "$models/silero_vad_v5.onnx" "$src/samples/play_music.wav" >/dev/null 2>"$work/err2"
if grep -q "building" "$work/err2"; then fail "the second run rebuilt the VAD engine"; fi
[ "$(ls "$work/cache" | wc -l)" = 1 ] || fail "expected one cached engine: $(ls "$work/cache")"

# Silence alone: no text and no acoustic-model chunks; the cached engine can be given directly.
sox -R -n -r 16000 -c 1 -b 16 "$work/silence.wav" trim 0 3.0
text=$("$voxrt" transcribe --engine "$work/default.engine" --vad silero \
  --vad-model "$work/cache/"*.engine "$work/silence.wav" 2>"$work/err3")
cat "$work/err3"
[ "$text" = "$work/silence.wav: " ] || fail "silence gave '$text'"
grep -q "model chunks run 0," "$work/err3" || fail "silence ran the acoustic model"

# Wake word: "hey jarvis" then the sample is recognised after it fires; the sample alone is not.
espeak-ng -v en -s 130 -w "$work/hj_raw.wav" 'hey jarvis'
sox -R "$work/hj_raw.wav" "$work/hj.wav" rate 16k channels 1
sox -R -n -r 16000 -c 1 -b 16 "$work/s1.wav" trim 0 1.0
sox -R "$work/s1.wav" "$work/hj.wav" "$work/s1.wav" "$src/samples/play_music.wav" "$work/s1.wav" \
  -b 16 "$work/wake.wav"
text=$("$voxrt" transcribe --engine "$work/default.engine" --wake-word "$models" "$work/wake.wav" \
  2>"$work/err4")
cat "$work/err4"
grep -q "wake word fired 1 time(s)" "$work/err4" || fail "the wake word did not fire"
grep -q "music" <<<"$text" || fail "nothing recognised after the wake word: '$text'"
text=$("$voxrt" transcribe --engine "$work/default.engine" \
  --wake-word "$models/hey_jarvis_v0.1.onnx" "$src/samples/play_music.wav" 2>"$work/err5")
cat "$work/err5"
grep -q "wake word did not fire" "$work/err5" || fail "fired without the phrase"
grep -q "model chunks run 0," "$work/err5" || fail "the model ran before the wake word"

# voxrt serve --vad silero: concurrent WebSocket streams through the Silero-gated recognizer.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$voxrt" serve --engine "$work/default.engine" --vad silero --vad-model "$work/cache/"silero_vad_v5-*.engine \
  --port "$port" 2>"$work/serve.err" &
server=$!
for _ in $(seq 50); do grep -q "serving on" "$work/serve.err" && break; sleep 0.1; done
grep -q "vad=silero" "$work/serve.err" || { kill "$server"; fail "serve did not start with Silero: $(cat "$work/serve.err")"; }
"$voxrt" loadgen --url "ws://127.0.0.1:$port" --streams 3 --wav-dir "$src/samples" >"$work/loadgen.out" 2>&1 || true
kill "$server"; wait "$server" || true
cat "$work/loadgen.out"
grep -q "completed 3, refused 0, errors 0" "$work/loadgen.out" || fail "loadgen through serve --vad silero failed"

# Errors: a missing VAD model, and --vad silero without one.
if "$voxrt" transcribe --engine "$work/default.engine" --vad silero --vad-model "$work/none.onnx" \
  "$src/samples/play_music.wav" 2>"$work/err6"; then fail "a missing VAD model was accepted"; fi
grep -q "error" "$work/err6"
if env -u VOXRT_VAD_MODEL "$voxrt" transcribe --engine "$work/default.engine" --vad silero \
  "$src/samples/play_music.wav" 2>"$work/err7"; then fail "--vad silero without a model ran"; fi
grep -q "needs --vad-model" "$work/err7"
echo PASS
