#!/usr/bin/env bash
# bench/server/gpu_streams.sh: how many real-time streams one `voxrt serve` carries on the GPU
# machine (issue 6). The default model is built for the CUDA backend there; the server and
# `voxrt loadgen` run on the same host over loopback, one server per stream count.
# Run from the repo root on the GPU machine with .device carried, made here by
#   scripts/pack-for-device.sh build && bash bench/server/make_wavs.sh   (pack first: it empties .device)
# then (the `run` tool, carry [".device"]):
#   bash bench/server/gpu_streams.sh [STREAMS...]          (default: 500 1000 2000)
# Settings (environment): VOXRT_PRECISION fp16, VOXRT_DURATION_S 20, VOXRT_IO_THREADS 4,
# VOXRT_FRONT_END_THREADS 8, VOXRT_LOADGEN_THREADS 4, VOXRT_MAX_BATCH 1024,
# VOXRT_QUEUE_DELAY_US 5000, VOXRT_DEVICES auto (0,0: two workers on GPU 0), VOXRT_DEVICE cuda (cpu: a dry run of the script without a GPU),
# VOXRT_MODEL models/default/model.onnx, VOXRT_WAVS .device/wavs, VOXRT_VOXRT (a voxrt binary to
# use instead of the packed bundle, with VOXRT_WORK_DIR for its engines).
# Writes into $OUT: build.log, check*.txt (CUDA vs CPU engine text on every wav), per count N
# loadgen_N.json, metrics_N.txt (the server's /metrics at the end), gpu_N.csv (nvidia-smi
# samples), cpu_N.txt (CPU seconds of server and loadgen), threads_{before,after}_N.txt (CPU
# seconds per server thread), serve_N.log; summary.json and
# summary.txt (bench/server/summarize_streams.py).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/voxrt_streams_out}
mkdir -p "$OUT"
T0=$SECONDS
if [ -n "${VOXRT_VOXRT:-}" ]; then
  # A local binary instead of the packed bundle (the CPU-only cost runs, bench/server/cpu_cost.sh).
  voxrt=$(realpath "$VOXRT_VOXRT")
  dev=${VOXRT_WORK_DIR:-/tmp/voxrt_streams_work}
  mkdir -p "$dev"
else
  source bench/gpu/device_env.sh
  voxrt=$dev/bin/voxrt
fi
wavs=${VOXRT_WAVS:-.device/wavs}
model=${VOXRT_MODEL:-models/default/model.onnx}
precision=${VOXRT_PRECISION:-fp16}
device=${VOXRT_DEVICE:-cuda}
duration=${VOXRT_DURATION_S:-20}
io_threads=${VOXRT_IO_THREADS:-4}
front_end_threads=${VOXRT_FRONT_END_THREADS:-8}
loadgen_threads=${VOXRT_LOADGEN_THREADS:-4}
max_batch=${VOXRT_MAX_BATCH:-1024}
devices=${VOXRT_DEVICES:-auto}  # 0,0: two compute workers (engine instances) on GPU 0
queue_delay_us=${VOXRT_QUEUE_DELAY_US:-5000}
opt_batch=$((max_batch < 512 ? max_batch : 512))  # kernels are timed at the opt batch
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(500 1000 2000)
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ -d "$wavs" ] || { echo "no $wavs: run bench/server/make_wavs.sh before packing" >&2; exit 1; }

engine=$dev/default_${device}_$precision.engine
cpu_engine=$dev/default_cpu.engine
{
  echo "== $(date -u) $(nproc) CPUs"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 180 "$voxrt" build --onnx "$model" --engine "$engine" --device "$device" \
    --precision "$precision" --profile "features:1x32x80/${opt_batch}x32x80/${max_batch}x32x80" \
    --timing-iterations 3
  echo "$device build rc=$? after $((SECONDS - T0)) s"
  timeout 120 "$voxrt" build --onnx "$model" --engine "$cpu_engine" \
    --profile features:1x4x80/8x32x80/64x32x80
  echo "cpu build rc=$? after $((SECONDS - T0)) s"
} > "$OUT/build.log" 2>&1
tail -3 "$OUT/build.log"

# The same text from both engines on every clip, before any timing.
clips=("$wavs"/*.wav samples/play_music.wav)
timeout 120 "$voxrt" transcribe --engine "$engine" "${clips[@]}" > "$OUT/check_$device.txt" 2>&1
timeout 120 "$voxrt" transcribe --engine "$cpu_engine" "${clips[@]}" > "$OUT/check_cpu.txt" 2>/dev/null
if diff "$OUT/check_cpu.txt" <(grep -v '^\[voxrt\]' "$OUT/check_$device.txt") > "$OUT/check.txt"; then
  echo "check: the $device engine gives the CPU engine's text on all ${#clips[@]} clips" | tee -a "$OUT/check.txt"
else
  echo "check: the $device engine's text DIFFERS from the CPU engine's (diff above)" | tee -a "$OUT/check.txt"
fi
cat "$OUT/check.txt"

cpu_seconds() {  # utime + stime of a live process, seconds
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}
thread_seconds() {  # "name seconds" per thread of a live process (names: voxrt-io, -worker, -pool)
  for t in /proc/"$1"/task/*/stat; do
    sed -E 's/^[0-9]+ \(([^)]*)\) /\1 /' "$t" 2>/dev/null |
      awk -v hz="$(getconf CLK_TCK)" '{print $1, ($13 + $14) / hz}'
  done
}

port=18090
for n in "${counts[@]}"; do
  port=$((port + 1))
  echo "== $n streams (port $port, $((SECONDS - T0)) s in)"
  "$voxrt" serve --engine "$engine" --port "$port" --max-streams $((n + 64)) \
    --max-batch "$max_batch" --max-queue-delay-us "$queue_delay_us" --threads "$io_threads" \
    --front-end-threads "$front_end_threads" --max-connections-per-ip $((n + 64)) \
    --devices "$devices" \
    --idle-timeout-s 120 > "$OUT/serve_$n.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do  # up to 60 s: a CUDA server warms every batch bucket up first
    python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/readyz', timeout=1)" \
      2>/dev/null && break
    sleep 0.2
  done
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 250 \
    > "$OUT/gpu_$n.csv" 2>/dev/null &
  smi=$!
  server_cpu0=$(cpu_seconds "$server")
  thread_seconds "$server" > "$OUT/threads_before_$n.txt"
  start=$SECONDS
  # bash's `times` would mix runs; the loadgen's own CPU time comes from python's rusage.
  python3 - "$voxrt" "$port" "$n" "$wavs" "$duration" "$loadgen_threads" "$OUT/loadgen_$n.json" \
    > "$OUT/cpu_$n.txt" <<'PY'
import resource, subprocess, sys, time
voxrt, port, n, wavs, duration, threads, out = sys.argv[1:]
t0 = time.time()
with open(out, "w") as f:
    rc = subprocess.call([voxrt, "loadgen", "--url", f"ws://127.0.0.1:{port}", "--streams", n,
                          "--wav-dir", wavs, "--realtime", "--duration", duration, "--threads",
                          threads, "--json"], stdout=f, timeout=float(duration) + 90)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"loadgen_rc {rc}\nloadgen_wall_s {time.time() - t0:.2f}\nloadgen_cpu_s {u.ru_utime + u.ru_stime:.2f}")
PY
  wall=$((SECONDS - start))
  thread_seconds "$server" > "$OUT/threads_after_$n.txt"
  echo "server_cpu_s $(awk -v a="$(cpu_seconds "$server")" -v b="$server_cpu0" 'BEGIN{print a - b}')" >> "$OUT/cpu_$n.txt"
  echo "server_wall_s $wall" >> "$OUT/cpu_$n.txt"
  python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=5).read().decode())" \
    > "$OUT/metrics_$n.txt" 2>&1
  kill "$smi" 2>/dev/null
  kill -TERM "$server" 2>/dev/null
  timeout 30 tail --pid="$server" -f /dev/null || kill -KILL "$server"
  cat "$OUT/cpu_$n.txt"
done
python3 bench/server/summarize_streams.py "$OUT" "${counts[@]}" | tee "$OUT/summary.txt"
echo "total $((SECONDS - T0)) s"
