#!/usr/bin/env bash
# bench/server/hostile_soak.sh [DURATION_S] [STREAMS]: a soak of `voxrt serve` with real-time
# canary streams under periodic attacks (docs/security.md). Default: 3600 s, 32 streams, on the
# CPU engine of the default model (what this 2-core machine carries in real time).
#   1. the server starts (--max-streams STREAMS + room for the attackers), the clips of bench/server/make_wavs.sh are
#      streamed once with no attack: each file's text is the reference;
#   2. `voxrt loadgen --realtime --streams STREAMS --duration DURATION_S` runs the canaries (each
#      stream starts the next clip when one ends: thousands of reconnects);
#   3. meanwhile bench/server/attacker.py runs every attack in turn, then waits ATTACK_PERIOD_S
#      (60), over and over: deep JSON, an empty-frame flood from a client that never reads, 200
#      silent connections, malformed HTTP, invalid UTF-8, a 200-client disconnect storm, and an
#      upload of an hour of silence;
#   4. RSS, descriptors, connections, slots, threads, engine calls of more than 16 streams and
#      malloc's bytes in use and free (voxrt_malloc_*) are sampled every second into soak.csv.
# Pass: every canary text equals its reference, no canary error or refusal, descriptors at the
# end within 16 of their level after warm-up (60 s), and memory by these rules (summary.txt says
# which failed):
#   - plateau: over the second half of the run (warm-up long over, every attack run several
#     times), RSS max - min <= 64 MiB and its least-squares line rises by <= 32 MiB across the
#     half (64 MiB/h in an hour's run);
#   - leak: over the same half, the least-squares line of malloc's bytes in use
#     (voxrt_malloc_in_use_bytes: what a leak grows, unlike RSS, which also holds free memory)
#     rises by <= 16 MiB;
#   - ceiling: RSS never more than RSS_STEP_MIB (128) above its level after warm-up.
# Why not "RSS at the end within 64 MiB of warm-up" (the rule before 2026-12-07): one sample
# against one sample says nothing about a slope, and it failed on a bounded step. With glibc's
# dynamic mmap threshold (voxrt serve --malloc-mmap-threshold-kib 0) RSS stepped up once by
# 64-92 MiB, when the loaded machine first let frames queue, then stayed flat: the compute
# worker's arena kept 44-52 MB of freed buffers (docs/perf/server.md, "The RSS step, measured").
# A leak grows malloc's bytes in use and keeps rising: the leak and plateau rules catch it.
# Environment: VOXRT_VOXRT (binary, default build/bin/voxrt), VOXRT_ENGINE (default
# build/default.engine, from scripts/run-default.sh), OUT (default /tmp/voxrt_soak), ATTACK_PERIOD_S,
# VOXRT_SERVE_ARGS (more `voxrt serve` flags: a GPU engine wants e.g. "--max-batch 1024
# --front-end-threads 8 --threads 8"), VOXRT_LOADGEN_THREADS (2), VOXRT_STORM (200: clients of
# the disconnect storm; 2000 on the GPU machine), RSS_STEP_MIB (128). With nvidia-smi present,
# soak.csv also has the GPU's memory in use, and the pass condition includes it. memory.csv
# (bench/server/rss_breakdown.py, every 5 s) says where the RSS is: glibc's main heap, its other
# arenas, other anonymous mappings, files.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
duration=${1:-3600}
streams=${2:-32}
voxrt=${VOXRT_VOXRT:-build/bin/voxrt}
engine=${VOXRT_ENGINE:-build/default.engine}
OUT=${OUT:-/tmp/voxrt_soak}
period=${ATTACK_PERIOD_S:-60}
mkdir -p "$OUT"
[ -x "$voxrt" ] || { echo "no $voxrt: build first (scripts/run-default.sh)" >&2; exit 1; }
[ -f "$engine" ] || { echo "no $engine: scripts/run-default.sh builds it" >&2; exit 1; }
wavs=$OUT/wavs
[ -f "$wavs/clip7.wav" ] || [ -n "${VOXRT_WAVS:-}" ] || bash bench/server/make_wavs.sh "$wavs" >/dev/null
wavs=${VOXRT_WAVS:-$wavs}
flac=$OUT/silence_1h.flac
# The upload bomb needs sox to make its FLAC; without sox that attack is skipped.
[ -f "$flac" ] || sox -n -D -r 16000 -c 1 -b 16 "$flac" trim 0 3600 2>/dev/null || flac=""

port=$(${PY:-python3} -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086  # VOXRT_SERVE_ARGS is a list of flags
# Every client comes from 127.0.0.1: the per-address connection limit (64 by default) must
# admit all canaries plus the disconnect storm and the silent connections, or the canaries are
# refused instead of tested. The attackers' connections hold streams too (the GPU soak of
# 2026-12-07 had 90 of 46083 canary sessions refused with all STREAMS + 8 in use), so the
# server has room for them beside the canaries.
attack_room=$((${VOXRT_STORM:-200} + 400))
"$voxrt" serve --engine "$engine" --port "$port" --max-streams $((streams + attack_room)) \
  --max-connections-per-ip $((streams + attack_room)) \
  --max-upload-audio-s 7200 ${VOXRT_SERVE_ARGS:-} > "$OUT/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; kill $sampler 2>/dev/null; kill $attacks 2>/dev/null; kill ${breakdown:-} 2>/dev/null' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  ${PY:-python3} -c 'import time; time.sleep(0.1)'
done

# 1. references, attack-free.
"$voxrt" loadgen --url "ws://127.0.0.1:$port/" --streams 8 --wav-dir "$wavs" --json \
  > "$OUT/reference.json"

# 4. samples.
(
  gpu=$(command -v nvidia-smi >/dev/null && echo 1 || echo 0)
  echo "t_s,rss_mib,descriptors,tcp_connections,active_streams,slots_in_use,gpu_mib,threads,batches_over_16,malloc_in_use_mib,malloc_free_mib,malloc_arenas"
  start=$SECONDS
  while kill -0 $server 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print int($2/1024)}' /proc/$server/status 2>/dev/null)
    fds=$(ls /proc/$server/fd 2>/dev/null | wc -l)
    m=$(curl -s "http://127.0.0.1:$port/metrics")
    get() { echo "$m" | awk -v k="$1" '$1 == k {print $2}'; }
    gpu_mib=""
    [ "$gpu" = 1 ] && gpu_mib=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
    threads=$(awk '/^Threads/ {print $2}' /proc/$server/status 2>/dev/null)
    # Engine calls of more than 16 streams so far: on the CPU engine they form only when frames
    # queue (a loaded machine), when the worker's buffers are largest.
    over16=$(echo "$m" | awk '$1 == "voxrt_batch_size_count" {n = $2} $1 == "voxrt_batch_size_bucket{le=\"16\"}" {s = $2} END {if (n != "") print n - s}')
    mib() { echo "$m" | awk -v k="$1" '$1 == k {print int($2 / 1048576)}'; }
    heap="$(mib voxrt_malloc_in_use_bytes),$(mib voxrt_malloc_free_bytes),$(get voxrt_malloc_arenas)"
    echo "$((SECONDS - start)),$rss,$fds,$(get voxrt_tcp_connections),$(get voxrt_active_streams),$(get voxrt_state_slots_in_use),$gpu_mib,$threads,$over16,$heap"
    sleep 1
  done
) > "$OUT/soak.csv" &
sampler=$!
# Where the resident memory is (glibc's main heap, its other arenas, other anonymous mappings,
# files), every 5 s: bench/server/rss_breakdown.py.
${PY:-python3} bench/server/rss_breakdown.py $server --period 5 > "$OUT/memory.csv" 2>&1 &
breakdown=$!

# 3. attacks, periodically, until the canaries are done.
(
  end=$((SECONDS + duration - 30))
  while [ $SECONDS -lt $end ]; do
    ${PY:-python3} bench/server/attacker.py --port "$port" --flac "$flac" --storm "${VOXRT_STORM:-200}"
    sleep "$period"
  done
) > "$OUT/attacks.jsonl" 2>&1 &
attacks=$!

# 2. canaries.
"$voxrt" loadgen --url "ws://127.0.0.1:$port/" --streams "$streams" --wav-dir "$wavs" \
  --realtime --duration "$duration" --threads "${VOXRT_LOADGEN_THREADS:-2}" --json \
  > "$OUT/canaries.json"
wait $attacks 2>/dev/null
curl -s "http://127.0.0.1:$port/metrics" > "$OUT/metrics_end.txt"
kill -TERM $server
wait $server
server_rc=$?
sleep 1
kill $sampler 2>/dev/null

${PY:-python3} - "$OUT" "$server_rc" "${RSS_STEP_MIB:-128}" <<'EOF' | tee "$OUT/summary.txt"
import csv, json, sys
out, server_rc, step_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
reference = {o["file"]: o["text"] for o in json.load(open(f"{out}/reference.json"))["results"]}
canaries = json.load(open(f"{out}/canaries.json"))
wrong = [o for o in canaries["results"] if not o["error"] and not o["refused"] and o["whole"]
         and o["text"] != reference.get(o["file"])]
rows = [r for r in csv.DictReader(open(f"{out}/soak.csv")) if r["rss_mib"]]
rss = [int(r["rss_mib"]) for r in rows]
fds = [int(r["descriptors"]) for r in rows]
warm = min(60, len(rows) // 10)
attacks = [json.loads(l) for l in open(f"{out}/attacks.jsonl") if l.startswith("{")]
print(f"duration {len(rows)} s, canary sessions {canaries['sessions']}, completed "
      f"{canaries['completed']}, errors {canaries['errors']}, refused {canaries['refused']}, "
      f"texts differing from the attack-free run {len(wrong)}")
print(f"chunk latency p50 {canaries['chunk_latency']['p50_ms']:.1f} ms, p99 "
      f"{canaries['chunk_latency']['p99_ms']:.1f} ms, max {canaries['chunk_latency']['max_ms']:.1f} ms")
print(f"RSS MiB: after warm-up {rss[warm]}, max {max(rss)}, end {rss[-1]}; "
      f"descriptors: after warm-up {fds[warm]}, max {max(fds)}, end {fds[-1]}")


def rise(points):
    """How much the least-squares line through (t, value) rises from the first t to the last."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    slope = sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else 0.0
    return slope * (points[-1][0] - points[0][0])


half = [r for r in rows if int(r["t_s"]) >= int(rows[-1]["t_s"]) / 2]
half_rss = [(int(r["t_s"]), int(r["rss_mib"])) for r in half]
plateau_range = max(v for _, v in half_rss) - min(v for _, v in half_rss)
plateau_rise = rise(half_rss)
in_use = [(int(r["t_s"]), int(r["malloc_in_use_mib"])) for r in half if r.get("malloc_in_use_mib")]
in_use_rise = rise(in_use) if len(in_use) > 1 else 0.0
print(f"second half (from {half_rss[0][0]} s): RSS max - min {plateau_range} MiB (<= 64), "
      f"least-squares rise {plateau_rise:+.1f} MiB (<= 32); malloc in use "
      + (f"{in_use[0][1]}..{in_use[-1][1]} MiB, least-squares rise {in_use_rise:+.1f} MiB (<= 16)"
         if in_use else "not reported")
      + f"; RSS ceiling {rss[warm] + step_mib} MiB")
memory_ok = (plateau_range <= 64 and plateau_rise <= 32 and in_use_rise <= 16 and
             max(rss) <= rss[warm] + step_mib)
gpu = [int(r["gpu_mib"]) for r in rows if r.get("gpu_mib")]
if gpu:
    print(f"GPU memory MiB: after warm-up {gpu[warm]}, max {max(gpu)}, end {gpu[-1]}")
print(f"attack rounds {sum(1 for a in attacks if a['attack'] == 'deep_json')}, attacks that "
      f"failed to run {sum(1 for a in attacks if 'failed' in a['outcome'])}")
# A refused canary was never tested: the server has room for every canary and attacker.
ok = (not wrong and canaries["errors"] == 0 and canaries["refused"] == 0 and memory_ok and
      fds[-1] <= fds[warm] + 16 and server_rc == 0 and (not gpu or gpu[-1] <= gpu[warm] + 256))
print("PASS" if ok else "FAIL", f"(server exit {server_rc})")
for o in wrong[:5]:
    print(f"  {o['file']}: '{o['text']}' vs '{reference.get(o['file'])}'")
EOF
