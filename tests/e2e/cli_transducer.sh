#!/usr/bin/env bash
# A streaming transducer as icefall exports it for sherpa-onnx (random weights, made by
# tests/models/icefall_transducer.py), through the CLI and the server: `voxrt build --model-dir`
# with no metadata written by hand, then `voxrt transcribe` (greedy, beam, hotwords) and
# `voxrt serve` (an OpenAI-style upload, greedy and beam) must give the text of the Python
# reference decoder over the same torch modules.
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
source "$(dirname "$0")/serve_for_test.sh"
trap 'stop_server; rm -rf "$work"' EXIT
py=/usr/bin/python3
script="$src/tests/models/icefall_transducer.py"
wav="$src/samples/play_music.wav"
"$py" "$script" export "$work/model" --type lstm > "$work/export.log" 2>&1 || { cat "$work/export.log"; exit 1; }
"$voxrt" build --model-dir "$work/model" --engine "$work/bundle" --no-autotune --max-batch 4
test -f "$work/bundle/bundle.json"

reference() {  # search [extra args]: the reference's text for the sample
  local search=$1
  shift
  "$py" "$script" reference "$work/model" --search "$search" --beam 8 "$@" "$wav" 2>/dev/null |
    "$py" -c 'import json,sys; j=json.loads(sys.stdin.readline()); assert j["endpoint_free"], j; print(j["text"])'
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

greedy=$(reference greedy)
beam=$(reference beam)
[ -n "$greedy" ] || { echo "FAIL: the reference decoded nothing"; exit 1; }
check "transcribe greedy" "$greedy" \
  "$("$voxrt" transcribe --engine "$work/bundle" --vad off --json "$wav" 2>/dev/null | final_text)"
check "transcribe beam" "$beam" \
  "$("$voxrt" transcribe --engine "$work/bundle" --vad off --decoder beam --beam 8 --json "$wav" 2>/dev/null | final_text)"
echo "hij" > "$work/hotwords.txt"
boosted=$(reference beam --hotwords "$work/hotwords.txt" --hotword-bonus 4)
[ "$boosted" != "$beam" ] || { echo "FAIL: the hotword does not change the reference's text"; exit 1; }
check "transcribe beam + hotwords" "$boosted" \
  "$("$voxrt" transcribe --engine "$work/bundle" --vad off --beam 8 --hotwords "$work/hotwords.txt" \
     --hotword-bonus 4 --json "$wav" 2>/dev/null | final_text)"

serve_and_upload() {  # decoder expected
  start_server "$voxrt" "$work/serve.log" --engine "$work/bundle" --vad off --decoder "$1" --beam 8 \
    --max-batch 4
  local text
  text=$(upload_text "$wav")
  stop_server
  check "serve $1 upload" "$2" "$text"
}
serve_and_upload greedy "$greedy"
serve_and_upload beam "$beam"
echo PASS
