#!/usr/bin/env bash
# A tiny Whisper-architecture model in Hugging Face optimum's layout (made from code by
# tests/models/optimum_whisper.py), through the CLI and the server: `voxrt build --model-dir`
# with no metadata written by hand, then `voxrt transcribe` and `voxrt serve` (an OpenAI-style
# upload) must give the text of the Python reference greedy decoder over the same torch modules,
# for a 2.1 s clip and a 40 s one (two 30 s windows), greedy and beam, the language detected or
# built in, and the segments of verbose_json (timestamp tokens); and a 128-mel-bin export
# (Whisper v3's).
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
source "$(dirname "$0")/serve_for_test.sh"
trap 'stop_server; rm -rf "$work"' EXIT
py=/usr/bin/python3
script="$src/tests/models/optimum_whisper.py"
short="$src/samples/play_music.wav"
long="$work/long.wav"
"$py" "$script" export "$work/model" > "$work/export.log" 2>&1 || { cat "$work/export.log"; exit 1; }
"$voxrt" build --model-dir "$work/model" --engine "$work/bundle" --no-autotune --max-batch 4
test -f "$work/bundle/bundle.json"
# 40 s: the sample, then a quieter copy, then silence, repeated.
"$py" - "$short" "$long" <<'PY'
import sys, wave
import numpy as np
with wave.open(sys.argv[1]) as w:
    x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)
out = []
while sum(len(p) for p in out) < 40 * 16000:
    out += [x, 0.4 * x[::-1], np.zeros(4000)]
y = np.concatenate(out)[: 40 * 16000].astype(np.int16)
with wave.open(sys.argv[2], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(y.tobytes())
PY

reference() {  # wav: the reference's text
  "$py" "$script" reference "$work/model" "$1" 2>/dev/null |
    "$py" -c 'import json,sys; print(json.loads(sys.stdin.readline())["text"])'
}
final_text() {  # the last final of voxrt transcribe --json
  "$py" -c 'import json,sys; print([j for j in map(json.loads, sys.stdin) if j["is_final"]][-1]["text"])'
}
check() {  # name expected got
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: expected '$2', got '$3'"
    exit 1
  fi
  echo "ok: $1: $3"
}

short_text=$(reference "$short")
long_text=$(reference "$long")
[ -n "$short_text" ] && [ -n "$long_text" ] || { echo "FAIL: the reference decoded nothing"; exit 1; }
check "transcribe short" "$short_text" \
  "$("$voxrt" transcribe --engine "$work/bundle" --vad off --json "$short" 2>/dev/null | final_text)"
check "transcribe long" "$long_text" \
  "$("$voxrt" transcribe --engine "$work/bundle" --vad off --json "$long" 2>/dev/null | final_text)"
start_server "$voxrt" "$work/serve.log" --engine "$work/bundle" --vad off --max-batch 4
check "serve upload short" "$short_text" "$(upload_text "$short")"
check "serve upload long" "$long_text" "$(upload_text "$long")"
# verbose_json asks for times: the stream decodes with timestamp tokens, and the segments and the
# language are the reference's (--timestamps).
segments() {  # JSON lines of {text, start, end} from a JSON document with "segments" on stdin
  "$py" -c 'import json,sys; d=json.load(sys.stdin); print(d.get("language","")); [print("%.3f %.3f %s" % (s["start"], s["end"], s["text"])) for s in d["segments"]]'
}
ts_ref=$("$py" "$script" reference "$work/model" --timestamps "$long" 2>/dev/null | segments)
[ "$(echo "$ts_ref" | wc -l)" -ge 3 ] || { echo "FAIL: the reference gave no segments: $ts_ref"; exit 1; }
check "serve upload long, verbose_json segments" "$ts_ref" \
  "$(curl -sf -F "file=@$long" -F response_format=verbose_json \
       "http://127.0.0.1:$server_port/v1/audio/transcriptions" | segments)"
# A live WebSocket stream gets growing-window partials (--whisper-partial-ms, default 2000): the
# filling window is decoded again every 2 s of audio, so partials come while each 30 s window
# fills; the final is still the offline decode of the same audio (the reference's text).
ws_out=$("$py" "$src/tests/e2e/ws_stream.py" "$server_port" "$long" '{}' --frame-ms 200)
growing=$(echo "$ws_out" | "$py" -c 'import json,sys; p=[j["partial"] for j in map(json.loads, sys.stdin) if j.get("partial")]; print(len(set(p)))')
[ "$growing" -ge 5 ] || { echo "FAIL: $growing distinct partials over 40 s, expected >= 5"; echo "$ws_out" | head; exit 1; }
echo "ok: serve websocket long: $growing distinct partials"
check "serve websocket long, final = offline decode" "$long_text" \
  "$(echo "$ws_out" | "$py" -c 'import json,sys; print([j for j in map(json.loads, sys.stdin) if "text" in j][-1]["text"])')"
stop_server
# Beam search through the server (--decoder beam --beam 3): the reference's beam-search text.
beam_text=$("$py" "$script" reference "$work/model" --beam 3 "$long" 2>/dev/null |
  "$py" -c 'import json,sys; print(json.loads(sys.stdin.readline())["text"])')
start_server "$voxrt" "$work/serve_beam.log" --engine "$work/bundle" --vad off --max-batch 4 \
  --decoder beam --beam 3
check "serve upload long, beam 3" "$beam_text" "$(upload_text "$long")"
stop_server

# Per-request Whisper options (docs/server.md): OpenAI's `prompt` and `temperature` form fields,
# voxrt's `temperature_fallback`, and the same keys in the WebSocket config. Each request's text is
# the reference's with those options (the server's threshold and seed are the reference's), and
# differs from the text without them; values out of range are refused with what was expected.
ref_text() {  # wav [reference options...]: the reference's text
  local wav=$1
  shift
  "$py" "$script" reference "$work/model" --logprob-threshold -5.15 --seed 7 "$@" "$wav" \
    2>/dev/null | "$py" -c 'import json,sys; print(json.loads(sys.stdin.readline())["text"])'
}
upload_with() {  # wav [curl -F fields...]: the text of an upload with those form fields
  local wav=$1
  shift
  local fields=()
  for f in "$@"; do fields+=(-F "$f"); done
  curl -sf -F "file=@$wav" "${fields[@]}" "http://127.0.0.1:$server_port/v1/audio/transcriptions" |
    "$py" -c 'import json,sys; print(json.load(sys.stdin)["text"])'
}
ws_final() {  # wav config-json: the last final's text of a WebSocket stream
  "$py" "$src/tests/e2e/ws_stream.py" "$server_port" "$1" "$2" --frame-ms 200 |
    "$py" -c 'import json,sys; print([j for j in map(json.loads, sys.stdin) if "text" in j][-1]["text"])'
}
start_server "$voxrt" "$work/serve_options.log" --engine "$work/bundle" --vad off --max-batch 4 \
  --logprob-threshold -5.15 --seed 7
plain_text=$(ref_text "$long")
check "serve upload, no options" "$plain_text" "$(upload_with "$long")"
prompted_text=$(ref_text "$long" --initial-prompt "hello world")
[ "$prompted_text" != "$plain_text" ] || { echo "FAIL: the prompt changed nothing in the reference"; exit 1; }
check "serve upload, prompt" "$prompted_text" "$(upload_with "$long" "prompt=hello world")"
fallback_text=$(ref_text "$long" --temperatures 0,0.2,0.4,0.6,0.8,1.0)
[ "$fallback_text" != "$plain_text" ] || { echo "FAIL: no window fell back in the reference"; exit 1; }
check "serve upload, temperature_fallback" "$fallback_text" \
  "$(upload_with "$long" temperature_fallback=true)"
sampled_text=$(ref_text "$long" --temperatures 0.6)
[ "$sampled_text" != "$plain_text" ] || { echo "FAIL: sampling at 0.6 gave the greedy text"; exit 1; }
check "serve upload, temperature 0.6" "$sampled_text" "$(upload_with "$long" temperature=0.6)"
ws_text=$(ref_text "$long" --initial-prompt "hello world" --temperatures 0.2,0.4,0.6,0.8,1.0)
check "serve websocket, prompt + temperature 0.2 + fallback" "$ws_text" \
  "$(ws_final "$long" '{"prompt": "hello world", "temperature": 0.2, "temperature_fallback": true}')"
refused() {  # name expected-substring got
  case "$3" in
    *"$2"*) echo "ok: $1 refused: $3" ;;
    *) echo "FAIL: $1: expected '$2' in '$3'"; exit 1 ;;
  esac
}
refused "upload temperature=2" '400 {"error":"temperature must be a number from 0 to 1, found 2"' \
  "$(curl -s -w '%{http_code} ' -o "$work/body" -F "file=@$short" -F temperature=2 \
       "http://127.0.0.1:$server_port/v1/audio/transcriptions"; cat "$work/body")"
refused "upload temperature=warm" "temperature must be a number from 0 to 1, found 'warm'" \
  "$(curl -s -F "file=@$short" -F temperature=warm "http://127.0.0.1:$server_port/v1/audio/transcriptions")"
refused "upload temperature_fallback=maybe" "temperature_fallback must be true, false, 1 or 0, found 'maybe'" \
  "$(curl -s -F "file=@$short" -F temperature_fallback=maybe "http://127.0.0.1:$server_port/v1/audio/transcriptions")"
refused "websocket temperature \"x\"" 'config.temperature must be a number, found \"x\"' \
  "$("$py" "$src/tests/e2e/ws_stream.py" "$server_port" "$short" '{"temperature": "x"}' | head -2)"
refused "websocket prompt 5" '"kind":"bad_config"' \
  "$("$py" "$src/tests/e2e/ws_stream.py" "$server_port" "$short" '{"prompt": 5}' | head -2)"
stop_server

# Without --language each stream's language is detected from its first window (the reference
# does the same); --language picks the prompt's language token (the export's lang_to_id has <|en|>
# and <|de|>).
ref_language=$("$py" "$script" reference "$work/model" "$short" 2>/dev/null |
  "$py" -c 'import json,sys; print(json.loads(sys.stdin.readline())["language"])')
check "detected language short" "$ref_language" \
  "$("$voxrt" transcribe --engine "$work/bundle" --vad off --json "$short" 2>/dev/null |
     "$py" -c 'import json,sys; print([j for j in map(json.loads, sys.stdin) if j["is_final"]][-1]["language"])')"
"$voxrt" build --model-dir "$work/model" --engine "$work/bundle_de" --no-autotune --max-batch 1 --language de
de=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["lang_to_id"]["<|de|>"])' "$work/model/generation_config.json")
language_id() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"].get("voxrt.encoder_decoder.language_id", "detected"))' "$1/bundle.json"; }
check "prompt language (none given)" "detected" "$(language_id "$work/bundle")"
check "prompt language de" "$de" "$(language_id "$work/bundle_de")"
de_text=$("$py" "$script" reference "$work/model" --language de "$long" 2>/dev/null |
  "$py" -c 'import json,sys; print(json.loads(sys.stdin.readline())["text"])')
check "transcribe long, --language de" "$de_text" \
  "$("$voxrt" transcribe --engine "$work/bundle_de" --vad off --json "$long" 2>/dev/null | final_text)"
if "$voxrt" build --model-dir "$work/model" --engine "$work/bundle_fr" --no-autotune --language fr 2> "$work/fr.log"; then
  echo "FAIL: --language fr (not in lang_to_id) was accepted"
  exit 1
fi
grep -q "generation_config.json: lang_to_id has no '<|fr|>'" "$work/fr.log" || { cat "$work/fr.log"; echo "FAIL: the error does not name lang_to_id"; exit 1; }
echo "ok: --language fr refused: $(cat "$work/fr.log")"

# Whisper v3's 128 mel bins (config.json num_mel_bins): the front end and the import follow it.
"$py" "$script" export "$work/model128" --mels 128 > "$work/export128.log" 2>&1 || { cat "$work/export128.log"; exit 1; }
"$voxrt" build --model-dir "$work/model128" --engine "$work/bundle128" --no-autotune --max-batch 2
grep -q '"voxrt.feature.num_bins": "128"' "$work/bundle128/bundle.json" || { echo "FAIL: 128 bins not in the bundle"; exit 1; }
text128=$("$py" "$script" reference "$work/model128" "$short" 2>/dev/null |
  "$py" -c 'import json,sys; print(json.loads(sys.stdin.readline())["text"])')
check "transcribe short, 128 mel bins" "$text128" \
  "$("$voxrt" transcribe --engine "$work/bundle128" --vad off --json "$short" 2>/dev/null | final_text)"
echo PASS
