#!/usr/bin/env bash
# models/default is what recipes/bundle_default.sh makes from the checkpoint its source.txt
# names: the script is run into a scratch folder and every file it writes must equal the
# committed one byte for byte (the export is deterministic), the model under 40 MB (issue 28).
# A bundle that was edited by hand, or a checkpoint that changed without a new bundle, fails.
# Its usage errors are checked too. Skips (77) without Debian's torch and onnx.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PY:-/usr/bin/python3}
"$py" -c "import torch, onnx" 2>/dev/null || { echo "SKIP: $py has no torch or onnx"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
checkpoint=$(sed -n 's/^checkpoint=//p' "$root/models/default/source.txt")
[ -n "$checkpoint" ] || fail "models/default/source.txt names no checkpoint="
bash "$root/recipes/bundle_default.sh" "$root/$checkpoint" "$work/bundle" > "$work/log" 2>&1 ||
  { cat "$work/log"; fail "bundle_default.sh exited non-zero"; }
for f in model.onnx vocabulary.txt reference_chunks.npz; do
  cmp -s "$work/bundle/$f" "$root/models/default/$f" ||
    fail "models/default/$f differs from what bundle_default.sh makes from $checkpoint"
  echo "same: $f"
done
# source.txt: the same, but its checkpoint_commit only where git knows the checkpoint's history
# (a source tarball has none).
skip='^$'
git -C "$root" log -1 --format=%h -- "$checkpoint" > /dev/null 2>&1 || skip='^checkpoint_commit='
diff <(grep -v "$skip" "$work/bundle/source.txt") <(grep -v "$skip" "$root/models/default/source.txt") ||
  fail "models/default/source.txt differs from what bundle_default.sh writes for $checkpoint"
echo "same: source.txt"
bytes=$(stat -c %s "$root/models/default/model.onnx")
[ "$bytes" -lt 40000000 ] || fail "expected model.onnx under 40,000,000 bytes, found $bytes"
# Usage errors say what was expected and what was found.
if bash "$root/recipes/bundle_default.sh" "$work/none" "$work/x" > "$work/err" 2>&1; then
  fail "a folder without checkpoint.json was accepted"
fi
grep -q "expected a checkpoint folder with checkpoint.json, found none in '$work/none'" "$work/err" ||
  { cat "$work/err"; fail "no useful message for a missing checkpoint"; }
if bash "$root/recipes/bundle_default.sh" > "$work/err" 2>&1; then fail "no arguments accepted"; fi
grep -q "^usage: bash recipes/bundle_default.sh CHECKPOINT_DIR" "$work/err" || fail "no usage line"
echo "PASS: models/default == bundle_default.sh $checkpoint ($bytes bytes)"
