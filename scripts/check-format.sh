#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format (the repo's .clang-format) would write.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
bad=()
for f in $files; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "clang-format: ${#bad[@]} file(s) need formatting (run: clang-format -i FILE):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "clang-format: $(echo "$files" | wc -w) files clean"
