#!/usr/bin/env bash
# The C example as a user runs it: build the default model's engine through the C API (no
# autotuning, to stay fast), then transcribe the bundled sample. Leaves the engine for the
# tests that need the c_api_engine fixture.
set -euo pipefail
example=$1
engine=$2
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$("$example" --build "$src/models/default/model.onnx" --no-autotune "$engine" \
  "$src/samples/play_music.wav")
echo "$out"
grep -q "play_music.wav: .*play some music" <<<"$out" || {
  echo "FAIL: expected 'play some music' in the C example's output"; exit 1; }
# Errors come back as messages and exit status 1, never a crash.
if "$example" "$engine" /nonexistent.wav 2>"$work/err.txt"; then echo "FAIL: a missing file succeeded"; exit 1; fi
grep -q "/nonexistent.wav" "$work/err.txt" || { echo "FAIL: the error does not name the file"; cat "$work/err.txt"; exit 1; }
echo PASS
