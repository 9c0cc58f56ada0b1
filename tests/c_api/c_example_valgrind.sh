#!/usr/bin/env bash
# The C example under valgrind's memcheck (Debian's valgrind): any invalid read or write, use of
# uninitialized memory in a branch, or definitely lost block fails the test.
set -euo pipefail
example=$1
engine=$2
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command -v valgrind >/dev/null || { echo "FAIL: valgrind is missing (scripts/install-deps.sh)"; exit 1; }
# valgrind's CPU has no AVX-512: an engine whose tactics need it (the default model version 2's
# attention takes avx512_strips where the CPU has it) cannot load there. The fixture's engine
# ($engine) is built for this CPU, so build one without AVX-512 tactics first (natively, fast).
VOXRT_CPU_AVX512=0 "$example" --build "$src/models/default/model.onnx" --no-autotune \
  "$work/no_avx512.engine" "$src/samples/play_music.wav" >"$work/build.txt" 2>&1 ||
  { cat "$work/build.txt"; echo "FAIL: building the engine without AVX-512 (from $engine's model)"; exit 1; }
# valgrind runs one thread at a time: a pool worker spinning for work would only burn time.
VOXRT_CPU_AVX512=0 VOXRT_POOL_SPIN_US=0 valgrind --error-exitcode=99 --leak-check=full \
  --errors-for-leak-kinds=definite --show-leak-kinds=definite --track-origins=no --quiet \
  "$example" "$work/no_avx512.engine" "$src/samples/play_music.wav" >"$work/out.txt" 2>"$work/valgrind.txt" || {
  rc=$?; cat "$work/valgrind.txt"; echo "FAIL: exit status $rc under valgrind"; exit 1; }
cat "$work/out.txt"
grep -q "play some music" "$work/out.txt" || { echo "FAIL: wrong transcript under valgrind"; exit 1; }
echo PASS
