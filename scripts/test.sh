#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what it needs, builds voxrt
# (warnings are errors), runs every ctest label (unit, conformance, models, e2e, gpu), then the
# unit tests again under ASan+UBSan, a short libFuzzer smoke run of every fuzzer (the same clang
# ASan+UBSan build folder), the server tests under ThreadSanitizer, and checks formatting. GPU
# tests are built but skipped without a GPU (with a message). Any failure fails the suite
# (docs/testing.md). Each stage prints how long it took.
#   scripts/test.sh            everything
#   VOXRT_SKIP_SANITIZE=1      skip the ASan+UBSan stage (local iteration)
#   VOXRT_SKIP_TSAN=1          skip the ThreadSanitizer server-test stage (local iteration)
#   VOXRT_SKIP_FUZZ=1          skip the fuzz smoke stage (local iteration)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc)

stage_name=""
stage_start=$SECONDS
stage() {
  if [ -n "$stage_name" ]; then
    echo "== done: $stage_name ($((SECONDS - stage_start)) s)"
  fi
  stage_name="$1"
  stage_start=$SECONDS
  [ -n "$stage_name" ] && echo "== $stage_name"
  return 0
}

stage "install dependencies and third-party models"
bash scripts/install-deps.sh
bash scripts/fetch-third-party.sh

stage "format check (clang-format)"
bash scripts/check-format.sh

stage "release build"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"

stage "tests (unit, conformance, models, e2e, gpu)"
ctest --preset release -j "$jobs"

stage "model pipeline (scripts/model-ci.sh: deploy every example model version, with its gates)"
bash scripts/model-ci.sh --all

# The ASan+UBSan unit tests and the fuzzers share one clang build folder (preset asan, which
# sets VOXRT_FUZZ=ON): the libraries are compiled once, with ASan+UBSan and libFuzzer's coverage
# instrumentation, instead of once per stage (docs/testing.md, "CI time"). The ctest preset
# leaves out the fuzz_smoke test, which the fuzz stage below runs longer.
if [ "${VOXRT_SKIP_SANITIZE:-0}" != 1 ]; then
  stage "ASan+UBSan unit tests"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs" --target voxrt_unit_tests
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --preset asan -j "$jobs"
fi

if [ "${VOXRT_SKIP_FUZZ:-0}" != 1 ]; then
  # Each fuzzer (fuzz/) runs 25 s from its seed corpus; a crash fails the suite and leaves the
  # input under build-asan/fuzz/smoke.
  stage "fuzz smoke (libFuzzer + ASan + UBSan, clang)"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs" --target fuzz_smoke
fi

if [ "${VOXRT_SKIP_TSAN:-0}" != 1 ]; then
  # The server's tests again under ThreadSanitizer (docs/security.md). They run the release
  # build's voxrt binary and engine, so this stage builds only the libraries and the two tests.
  stage "ThreadSanitizer server tests (clang)"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$jobs" --target e2e_server server_hostile_clients
  VOXRT_TEST_VOXRT="$root/build/bin/voxrt" \
    VOXRT_TEST_ENGINE="$root/build/tests/server_work/default.engine" \
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/server/tsan.supp" \
    ctest --preset tsan -j 1
fi

stage ""
echo "== all stages passed (${SECONDS} s)"
