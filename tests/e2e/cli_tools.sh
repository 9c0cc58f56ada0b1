#!/usr/bin/env bash
# The engine tools as issue 31 found them: bench without --shapes, a plain build of a streaming
# model, warnings not counted as rewrites, the thread-count warning of run and bench, and inspect
# with long layer names.
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'echo "FAIL: the command on line $LINENO failed"' ERR
fail() { echo "FAIL: $*"; exit 1; }
model=$src/models/default/model.onnx

# A plain build of a model whose metadata names its chunk: tuned at [1, 32, 80].
"$voxrt" build --onnx "$model" --engine "$work/plain.engine" --no-autotune --json > "$work/plain.json" 2> /dev/null
/usr/bin/python3 - "$work/plain.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
notes = [n for n in report["notes"] if n.startswith("no --profile: tuned at the model's chunk, features 1x32x80")]
assert notes, report["notes"]
print("plain build:", notes[0])
PY
"$voxrt" inspect "$work/plain.engine" > "$work/plain.txt"
grep -q "profile     chunk features 1x1x80 / 1x32x80 / 256x65536x80" "$work/plain.txt" ||
  fail "the plain build's profile"

# bench with no --shapes: every input from the first profile (the states' batch from the features').
"$voxrt" bench "$work/plain.engine" --iterations 3 --warmup 0 > "$work/bench.out" 2>&1 ||
  { cat "$work/bench.out"; fail "bench without --shapes"; }
echo "bench without --shapes: $(grep -m1 latency "$work/bench.out")"

# A warning (a profile the first one covers) is a warning, not a rewrite.
"$voxrt" build --onnx "$model" --engine "$work/two.engine" --no-autotune --json \
  --profile features:1x4x80/8x32x80/64x32x80 --profile features:1x4x80/1x32x80/1x32x80 > "$work/two.json" 2> /dev/null
summary=$(/usr/bin/python3 - "$work/two.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert any("is never used" in w for w in report["warnings"]), report["warnings"]
assert not any(r.startswith("warning:") for r in report["rewrites"]), report["rewrites"]
assert len(report["warnings"]) == 1, report["warnings"]
print(f"{len(report['rewrites'])} rewrites, {len(report['warnings'])} warning(s)")
PY
)
echo "build --json: $summary"
# The text summary counts the same rewrites as the JSON report and the warning apart from them.
"$voxrt" build --onnx "$model" --engine "$work/two.engine" --no-autotune \
  --profile features:1x4x80/8x32x80/64x32x80 --profile features:1x4x80/1x32x80/1x32x80 > "$work/two.out" 2>&1
grep -q "$summary" "$work/two.out" || { cat "$work/two.out"; fail "the build summary counts (expected '$summary')"; }

# Tactics timed at 1 thread, run and bench at 2: both say so; at 1 neither does.
T=/usr/share/libonnx-testdata/data/node/test_gru_defaults
"$voxrt" build --onnx "$T/model.onnx" --engine "$work/gru.engine" --threads 1 > /dev/null 2>&1
"$voxrt" bench "$work/gru.engine" --threads 2 --iterations 3 --warmup 0 > /dev/null 2> "$work/bench2.err"
grep -q "timed with 1 thread(s), this run uses 2" "$work/bench2.err" || { cat "$work/bench2.err"; fail "bench: no thread warning"; }
"$voxrt" run "$work/gru.engine" --threads 2 --inputs "$T/test_data_set_0" --outputs "$work/out" 2> "$work/run2.err" > /dev/null
grep -q "timed with 1 thread(s), this run uses 2" "$work/run2.err" || fail "run: no thread warning"
"$voxrt" bench "$work/gru.engine" --threads 1 --iterations 3 --warmup 0 > /dev/null 2> "$work/bench1.err"
! grep -q "timed with" "$work/bench1.err" || fail "a thread warning at the tuned count"
echo "thread warning: $(cat "$work/bench2.err")"

# inspect: a layer name longer than the column goes on in the next rows; --wide keeps it whole.
vad=$src/.third_party/models/silero_vad_v5.onnx
if [ -f "$vad" ]; then
  "$voxrt" build --onnx "$vad" --engine "$work/vad.engine" --fixed-input sr=16000 --no-autotune \
    --profile input:1x576/8x576/32x576 --profile state:2x1x128/2x8x128/2x32x128 > /dev/null 2>&1
  longest=$("$voxrt" inspect "$work/vad.engine" --json | /usr/bin/python3 -c \
    "import json,sys; print(max((l['name'] for l in json.load(sys.stdin)['layers']), key=len))")
  "$voxrt" inspect "$work/vad.engine" --wide > "$work/wide.txt"
  grep -qF "$longest" "$work/wide.txt" || fail "--wide: '$longest' is not whole"
  "$voxrt" inspect "$work/vad.engine" > "$work/inspect.txt"
  ! grep -qF "$longest" "$work/inspect.txt" || fail "a ${#longest}-character name was not wrapped"
  [ "$(grep -c '^    ' "$work/inspect.txt")" -gt 0 ] || fail "no continuation rows"
  grep -q '^#  *layer  *op  *tactic  *prec  *time_us  from$' "$work/inspect.txt" || fail "inspect header"
  echo "inspect: names up to ${#longest} characters wrapped at 40, whole with --wide"
else
  echo "SKIP inspect of long names: $vad is missing (scripts/fetch-third-party.sh)"
fi
echo PASS
