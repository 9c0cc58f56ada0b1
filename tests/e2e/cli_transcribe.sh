#!/usr/bin/env bash
# The README's main job through the CLI: build the default model's engine, transcribe the
# bundled sample (text and --json), and check the words and the JSON shape.
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$voxrt" build --onnx "$src/models/default/model.onnx" --engine "$work/default.engine" \
  --profile features:1x4x80/8x32x80/64x32x80 --no-autotune
text=$("$voxrt" transcribe --engine "$work/default.engine" "$src/samples/play_music.wav" 2>"$work/stderr")
echo "text: $text"
cat "$work/stderr"
# The default model's measured text for the sample (flite slt: "play some music in the kitchen").
expected="$src/samples/play_music.wav: play some music in the kitchen"
[ "$text" = "$expected" ] || { echo "FAIL: expected '$expected', got '$text'"; exit 1; }
grep -q "RTF" "$work/stderr" || { echo "FAIL: no real-time factor on stderr"; exit 1; }
"$voxrt" transcribe --engine "$work/default.engine" --json "$src/samples/play_music.wav" 2>/dev/null > "$work/out.jsonl"
/usr/bin/python3 - "$work/out.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
finals = [l for l in lines if l["is_final"]]
assert finals, "no final result"
for l in lines:
    assert set(l) == {"file", "text", "is_final", "words"}, l.keys()
    for w in l["words"]:
        assert set(w) == {"word", "start", "end", "conf"} and 0 <= w["start"] <= w["end"] <= 2.2 and 0 < w["conf"] <= 1, w
assert finals[-1]["text"] == "play some music in the kitchen", finals[-1]["text"]
print("json ok:", len(lines), "lines, final:", finals[-1]["text"])
PY
# Bad input never crashes: a missing file and a non-audio file give errors, exit 1.
if "$voxrt" transcribe --engine "$work/default.engine" "$src/README.md" 2>"$work/err"; then
  echo "FAIL: transcribing a text file succeeded"; exit 1
fi
grep -q "error" "$work/err"
echo PASS
