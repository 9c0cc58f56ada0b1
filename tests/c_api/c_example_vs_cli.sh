#!/usr/bin/env bash
# The C example's finals equal `voxrt transcribe`'s on the same engine and clip.
set -euo pipefail
example=$1
engine=$2
voxrt=$3
src=${VOXRT_SOURCE_DIR:?}
clip=$src/samples/play_music.wav
from_c=$("$example" "$engine" "$clip" 2>/dev/null)
from_cli=$("$voxrt" transcribe --engine "$engine" "$clip" 2>/dev/null)
echo "C:   $from_c"
echo "CLI: $from_cli"
[ "$from_c" = "$from_cli" ] || { echo "FAIL: the C API and the CLI differ"; exit 1; }
echo PASS
