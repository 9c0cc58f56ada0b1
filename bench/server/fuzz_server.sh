#!/usr/bin/env bash
# bench/server/fuzz_server.sh [HOURS] [JOBS]: the server fuzzer (fuzz/server_connection_fuzz.cpp)
# for hours on the development machine, once per change of the server (docs/security.md). New
# inputs that reach new code are merged into the corpus kept in the repository
# (fuzz/seeds/server_connection); a crash leaves its input in build-fuzz/fuzz/long-run and fails.
#   bash bench/server/fuzz_server.sh 4      # four hours, one job
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
hours=${1:-1}
jobs=${2:-1}
seconds=$(/usr/bin/python3 -c "print(int(float('$hours') * 3600))")
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)" --target server_connection_fuzz
work=build-fuzz/fuzz/long-run
mkdir -p "$work/new"
fuzzer=build-fuzz/fuzz/server_connection_fuzz
"$fuzzer" -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" -max_len=262144 \
  -rss_limit_mb=4096 -timeout=30 -artifact_prefix="$work/" -print_final_stats=1 \
  "$work/new" fuzz/seeds/server_connection
# Keep the inputs that add edge coverage in the repository's corpus. Edges only
# (-use_counters=0): merging by all of libFuzzer's features kept three times the inputs for
# about the same edges (docs/testing.md), and every kept input is a connection the smoke run
# replays.
"$fuzzer" -merge=1 -use_counters=0 fuzz/seeds/server_connection "$work/new"
echo "fuzz_server: no crash in $hours h; corpus: $(ls fuzz/seeds/server_connection | wc -l) inputs"
