# Sourced by the NeMo CLI tests (cli_nemo_ctc.sh, cli_nemo_transducer.sh) after `set -euo
# pipefail` and `voxrt=$1`: a work folder removed at exit, the test server's helpers, the two
# clips every NeMo test decodes, and the comparisons with the Python reference's JSON lines.
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
source "$(dirname "${BASH_SOURCE[0]}")/serve_for_test.sh"
trap 'stop_server; rm -rf "$work"' EXIT
py=/usr/bin/python3
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

reference_text() {  # reference-json-lines wav: the reference decoder's text of that file
  "$py" -c 'import json,sys; print([j for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2]][0]["text"])' "$1" "$2"
}

transcribed_text() {  # `voxrt transcribe --json` output, wav: that file's final texts, joined
  "$py" -c 'import json,sys; print(" ".join(j["text"] for j in map(json.loads, open(sys.argv[1])) if j["file"] == sys.argv[2] and j["is_final"] and j["text"]))' "$1" "$2"
}
