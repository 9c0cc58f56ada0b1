#!/usr/bin/env bash
# voxrt transcribe with the inputs a user has (issue 31): bad flag values, broken and odd files,
# stdin in every shape, several files with a bad one among them, results in input order, and
# every output format, to stdout and to --output-dir.
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
trap 'echo "FAIL: the command on line $LINENO failed"' ERR
sample=$src/samples/play_music.wav
"$voxrt" build --onnx "$src/models/default/model.onnx" --engine "$work/e.engine" \
  --profile features:1x4x80/8x32x80/64x32x80 --no-autotune > "$work/build.log" 2>&1 ||
  { cat "$work/build.log"; exit 1; }
t() { "$voxrt" transcribe --engine "$work/e.engine" "$@"; }
# expect_error "what" "message fragment" command...: non-zero exit and the fragment on stderr.
expect_error() {
  local what=$1 fragment=$2
  shift 2
  if "$@" > "$work/out" 2> "$work/err"; then fail "$what: exit 0"; fi
  grep -qF -- "$fragment" "$work/err" || { cat "$work/err"; fail "$what: no '$fragment' on stderr"; }
  echo "ok: $what: $(grep -F -- "$fragment" "$work/err" | head -1)"
}

# Numeric flags: a value out of range names the flag and its range (--chunk-ms 0 used to grow
# memory until std::bad_alloc).
expect_error "--chunk-ms 0" "--chunk-ms" t --chunk-ms 0 "$sample"
grep -q "1 to 60000" "$work/err" || fail "--chunk-ms: the range is not in the message"
expect_error "--chunk-ms -5" "--chunk-ms" t --chunk-ms -5 "$sample"
expect_error "--threads 0" "--threads" t --threads 0 "$sample"
expect_error "--beam 0" "--beam" t --beam 0 "$sample"
expect_error "--lm-weight -1" "--lm-weight" t --lm-weight -1 "$sample"
expect_error "--stdin-rate 5" "--stdin-rate" t --stdin-rate 5 -
expect_error "--stdin-channels 0" "--stdin-channels" t --stdin-channels 0 -
expect_error "--stdin-format s32" "--stdin-format" t --stdin-format s32 - < /dev/null
expect_error "--output-format docx" "--output-format 'docx'" t --output-format docx "$sample"

# Files that are not what they should be: each says what it is.
head -c 20000 "$sample" > "$work/truncated.wav"
: > "$work/empty.wav"
mkdir "$work/folder"
sox -n -r 16000 -c 1 -b 16 "$work/zero.wav" trim 0 0
expect_error "truncated WAV" "truncated WAV: its data chunk declares" t "$work/truncated.wav"
expect_error "missing file" "no such file" t "$work/nothing.wav"
expect_error "a directory" "is a directory" t "$work/folder"
expect_error "an empty file" "is empty (0 bytes)" t "$work/empty.wav"
expect_error "an ONNX model as engine" "is an ONNX model, not a voxrt engine: compile it first" \
  "$voxrt" transcribe --engine "$src/models/default/model.onnx" "$sample"
t "$work/zero.wav" > "$work/out" 2> "$work/err" || fail "a 0-sample WAV is not an error"
grep -q "no audio (0 samples)" "$work/err" || fail "a 0-sample WAV is not reported"
grep -q "^$work/zero.wav: $" "$work/out" || { cat "$work/out"; fail "a 0-sample WAV gives no (empty) result"; }

# One bad file among several: the good ones are transcribed, in order, and the exit is 1.
reference=$(t "$sample" 2>/dev/null | sed 's/^[^:]*: //')
[ -n "$reference" ] || fail "no text for the sample"
echo "sample: $reference"
if t "$sample" "$work/nothing.wav" "$sample" > "$work/out" 2> "$work/err"; then fail "exit 0 with a missing file"; fi
[ "$(grep -c "^$sample: " "$work/out")" -ge 2 ] || { cat "$work/out"; fail "the good files were not transcribed"; }
grep -q "1 of 3 input(s) failed" "$work/err" || fail "no summary of the failed input"

# Input order: a long file first, the short one second; the short one finishes first.
sox "$sample" "$sample" "$sample" "$work/long.wav"
t "$work/long.wav" "$sample" > "$work/out" 2>/dev/null
[ "$(cut -d: -f1 "$work/out" | uniq)" = "$(printf '%s\n%s' "$work/long.wav" "$sample")" ] ||
  { cat "$work/out"; fail "results are not in input order"; }

# stdin: a WAV piped in (header detected), raw s16, s24 and f32, and stereo raw with
# --stdin-channels 2: all give the file's text.
same() {  # same WHAT < input
  local what=$1
  shift
  local text
  text=$(t "$@" 2>"$work/err" | sed 's/^[^:]*: //')
  [ "$text" = "$reference" ] || { cat "$work/err"; fail "$what gave '$text', the file '$reference'"; }
  echo "ok: $what"
}
same "WAV piped to -" - < "$sample"
grep -q "stdin: an audio file" "$work/err" || fail "the piped WAV was not recognised"
sox "$sample" -t raw -e signed -b 16 "$work/s16.raw"
sox "$sample" -t raw -e signed -b 24 "$work/s24.raw"
sox "$sample" -t raw -e floating-point -b 32 "$work/f32.raw"
sox "$sample" -t raw -e signed -b 16 -c 2 "$work/stereo.raw" remix 1 1
same "raw s16 on stdin" - < "$work/s16.raw"
same "raw s24 on stdin" --stdin-format s24 - < "$work/s24.raw"
same "raw f32 on stdin" --stdin-format f32 - < "$work/f32.raw"
same "raw stereo s16 on stdin" --stdin-channels 2 - < "$work/stereo.raw"

# Output formats on stdout.
t --output-format srt "$sample" 2>/dev/null > "$work/out.srt"
head -2 "$work/out.srt" | tail -1 | grep -Eq '^[0-9]{2}:[0-9]{2}:[0-9]{2},[0-9]{3} --> [0-9]{2}:[0-9]{2}:[0-9]{2},[0-9]{3}$' ||
  { cat "$work/out.srt"; fail "srt cue timing"; }
t --output-format vtt "$sample" 2>/dev/null > "$work/out.vtt"
[ "$(head -1 "$work/out.vtt")" = "WEBVTT" ] || fail "vtt header"
t --output-format tsv "$sample" 2>/dev/null > "$work/out.tsv"
[ "$(head -1 "$work/out.tsv")" = "$(printf 'start\tend\ttext')" ] || fail "tsv header"
t --timestamps "$sample" 2>/dev/null > "$work/timestamps.txt"
grep -Eq '^[^:]+: \[00:00:0[0-9]\.[0-9]{3} --> 00:00:0[0-9]\.[0-9]{3}\] ' "$work/timestamps.txt" ||
  fail "txt --timestamps"
# And to files: one per input, named after it.
for format in txt json srt vtt tsv; do
  t --output-format "$format" --output-dir "$work/written" "$sample" - < "$work/s16.raw" 2>/dev/null > "$work/stdout"
  [ -s "$work/written/play_music.$format" ] || fail "--output-dir: no play_music.$format"
  [ -s "$work/written/stdin.$format" ] || fail "--output-dir: no stdin.$format"
  [ ! -s "$work/stdout" ] || fail "--output-dir: results went to stdout too"
done
/usr/bin/python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$work/written/play_music.json"
grep -qF "$reference" "$work/written/play_music.txt" || fail "txt file text"

# voxrt --version.
"$voxrt" --version | grep -Eq '^voxrt [0-9]+\.[0-9]+' || fail "--version"
echo PASS
