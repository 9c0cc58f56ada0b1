#!/usr/bin/env bash
# `pip install` from the source tree, as docs/python.md says, into a throwaway folder: setup.py
# drives the project's CMake (reusing the build folder: VOXRT_BUILD_DIR) and the wheel holds the
# extension, the pure-Python part and the type hints; the installed copy imports and runs.
set -euo pipefail
python=$1
build_dir=$2
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# pip builds in the source folder; its build/ and *.egg-info there are ignored by git.
VOXRT_BUILD_DIR=$build_dir "$python" -m pip install --no-build-isolation --no-deps --no-index \
  --target "$work/site" "$src/python" >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; exit 1; }
ls "$work/site/voxrt"
for f in __init__.py _voxrt.pyi py.typed; do
  [ -f "$work/site/voxrt/$f" ] || { echo "FAIL: $f is not installed"; exit 1; }
done
cd "$work"
PYTHONPATH="$work/site" "$python" - "$work/site" <<'PY'
import sys
import voxrt
assert voxrt.__file__.startswith(sys.argv[1]), voxrt.__file__
assert voxrt.Recognizer.__doc__ and voxrt.Stream.accept.__doc__
try:
    voxrt.Engine.load("/nonexistent.engine")
except voxrt.Error as e:
    print("installed voxrt raises:", e)
PY
echo PASS
