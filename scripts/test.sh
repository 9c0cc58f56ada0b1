#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what it needs, builds voxrt
# (warnings are errors), runs every ctest label, then the unit tests again under ASan+UBSan,
# and checks formatting. GPU tests are built but skipped without a GPU (with a message).
#   scripts/test.sh            everything
#   VOXRT_SKIP_SANITIZE=1      skip the sanitizer pass (local iteration)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc)

bash scripts/install-deps.sh
bash scripts/fetch-third-party.sh

echo "== format check (clang-format)"
bash scripts/check-format.sh

echo "== release build"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
echo "== tests (unit, conformance, models, e2e, gpu)"
ctest --preset release -j "$jobs"

if [ "${VOXRT_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== ASan+UBSan unit tests"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs" --target voxrt_unit_tests
  # Advisory until a clean run has been recorded (docs/testing.md): a failure is printed loudly
  # but does not fail the suite yet.
  if ! ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --preset asan -j "$jobs"; then
    echo "WARNING: ASan/UBSan unit tests FAILED (advisory; see the log above)" >&2
  fi
fi
