#!/usr/bin/env bash
# bench/gpu/int8_gpu.sh: CUDA INT8 (issue 29) against CUDA FP16 on the default model's streaming
# chunk (32 frames + its three states), batch 1 and 256, in one run on the GPU machine (< 4 min on
# an H100). Engines, all autotuned with one profile (features 1 / 256 / 256 x 32 x 80):
#   fp16       --precision fp16;
#   int8       --precision int8 with the default rules: on CUDA the MatMul/Gemm layers with
#              constant weights and the group-1 convolutions have INT8 kernels; of the default
#              model's, conv1 and conv2 are calibrated and marked int8, the final projection
#              (/fc/MatMul) stays fp16 by default, the five GRUs (no CUDA INT8 kernel) run fp16;
#              the autotuner then times each marked layer's IMMA tactics against its fp16 ones
#              and keeps the faster (a layer kept in fp16 is recorded so: see inspect_int8.txt);
#   int8_strict  the same with --layer-precision /fc/MatMul:int8 and
#              VOXRT_CUDA_INT8_FP16_FALLBACK=0: conv1, conv2 and the projection all run the IMMA
#              path, whatever the timing says (the INT8 kernels' own speed).
# Calibration data (the first int8 build runs it through the model's front end on the CPU; the
# second reads the calibration cache it wrote, whose ranges cover /fc/MatMul's input too): the audio
# of VOXRT_INT8_CALIBRATION (a folder), else .device/wavs (bench/server/make_wavs.sh) plus
# samples/play_music.wav. Each engine's chunk is timed with `voxrt bench --device-time`
# (VOXRT_INT8_ITERS runs, 300 by default) at each batch, fp16 and int8 alternating for
# VOXRT_INT8_ROUNDS rounds (2); medians of the rounds. Writes $OUT/int8_gpu.json (p50 host latency
# and device time per engine and batch, the ratios fp16 / int8) plus the build logs and `voxrt
# inspect` of the int8 engines; prints a summary.
# Run there as: OUT=$OUT bash bench/gpu/int8_gpu.sh (from the repository root with .device/).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/voxrt_int8_gpu_out}
mkdir -p "$OUT"
T0=$SECONDS
if [ ! -f models/default/model.onnx ] && [ -f .device/default_model.npz ]; then
  python3 bench/gpu/model_transport.py unpack .device/default_model.npz models/default/model.onnx
fi
if [ -f .device/bundle.tar.xz ]; then
  source bench/gpu/device_env.sh
  voxrt=$dev/bin/voxrt
else
  voxrt=${VOXRT:-build/bin/voxrt}  # a local build (no bundle)
fi
work=$(mktemp -d /tmp/voxrt_int8_gpu.XXXXXX)
cal=${VOXRT_INT8_CALIBRATION:-}
if [ -z "$cal" ]; then
  cal=$work/calibration
  mkdir -p "$cal"
  cp samples/play_music.wav "$cal/"
  [ -d .device/wavs ] && cp .device/wavs/*.wav "$cal/" 2>/dev/null
fi
cal_files=$(find "$cal" -maxdepth 1 -type f \( -name '*.wav' -o -name '*.flac' \) | wc -l)
echo "calibration: $cal_files audio file(s) in $cal"
onnx=models/default/model.onnx
profile=features:1x32x80/256x32x80/256x32x80
build() {  # name, then extra build flags
  local name=$1
  shift
  local start=$SECONDS
  timeout -k 5 100 "$voxrt" build --onnx "$onnx" --engine "$work/$name.engine" --device cuda \
    --profile "$profile" "$@" > "$OUT/build_$name.log" 2>&1
  local rc=$?
  echo "build $name rc=$rc in $((SECONDS - start)) s (total $((SECONDS - T0)) s)"
  [ $rc -eq 0 ] || tail -5 "$OUT/build_$name.log"
  return $rc
}
build fp16 --precision fp16 || exit 1
build int8 --precision int8 --calibration-data "$cal" --calibration-cache "$work/int8.calib"
int8_rc=$?
export VOXRT_CUDA_INT8_FP16_FALLBACK=0
build int8_strict --precision int8 --calibration-data "$cal" \
  --calibration-cache "$work/int8.calib" --layer-precision /fc/MatMul:int8
int8_strict_rc=$?
unset VOXRT_CUDA_INT8_FP16_FALLBACK
for e in int8 int8_strict; do
  [ -f "$work/$e.engine" ] && "$voxrt" inspect "$work/$e.engine" > "$OUT/inspect_$e.txt" 2>&1
done
engines=(fp16)
[ $int8_rc -eq 0 ] && engines+=(int8)
[ $int8_strict_rc -eq 0 ] && engines+=(int8_strict)
iters=${VOXRT_INT8_ITERS:-300}
rounds=${VOXRT_INT8_ROUNDS:-2}
: > "$work/runs.jsonl"
for round in $(seq 1 "$rounds"); do
  if [ $((SECONDS - T0)) -gt 200 ]; then
    echo "round $round skipped: $((SECONDS - T0)) s gone of the 4-minute budget"
    break
  fi
  for batch in 1 256; do
    shapes="features:${batch}x32x80,conv1_state:${batch}x4x80,conv2_state:${batch}x32x4x40,gru_state:${batch}x5x512"
    for e in "${engines[@]}"; do
      json=$(timeout -k 5 30 "$voxrt" bench "$work/$e.engine" --shapes "$shapes" \
        --iterations "$iters" --warmup 300 --device-time --json 2> "$work/bench_err.txt")
      if [ $? -ne 0 ]; then
        echo "bench $e batch $batch failed: $(tail -2 "$work/bench_err.txt")"
        continue
      fi
      echo "$json" | python3 -c "import json,sys; j=json.load(sys.stdin); print(json.dumps({'engine':'$e','batch':$batch,'round':$round,'p50_ms':j['latency_ms']['median'],'device_p50_ms':j.get('device_ms',{}).get('median')}))" >> "$work/runs.jsonl"
    done
  done
  echo "round $round done after $((SECONDS - T0)) s"
done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
python3 - "$work/runs.jsonl" "$OUT/int8_gpu.json" "$cal_files" "$OUT" "$gpu" "$iters" <<'PY'
import json, statistics, sys, os, re, time
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = {"cases": {}, "calibration_files": int(sys.argv[3]), "gpu": sys.argv[5],
       "iterations": int(sys.argv[6]), "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
for r in runs:
    c = out["cases"].setdefault(f"{r['engine']}_b{r['batch']}", {"p50_ms": [], "device_p50_ms": []})
    c["p50_ms"].append(r["p50_ms"])
    if r["device_p50_ms"] is not None:
        c["device_p50_ms"].append(r["device_p50_ms"])
for c in out["cases"].values():
    c["p50_ms_median"] = statistics.median(c["p50_ms"])
    if c["device_p50_ms"]:
        c["device_p50_ms_median"] = statistics.median(c["device_p50_ms"])
ratios = {}
for e in ("int8", "int8_strict"):
    for b in (1, 256):
        f, i = out["cases"].get(f"fp16_b{b}"), out["cases"].get(f"{e}_b{b}")
        if not f or not i:
            continue
        ratios[f"fp16_over_{e}_b{b}_host"] = round(f["p50_ms_median"] / i["p50_ms_median"], 3)
        if "device_p50_ms_median" in f and "device_p50_ms_median" in i:
            ratios[f"fp16_over_{e}_b{b}_device"] = round(
                f["device_p50_ms_median"] / i["device_p50_ms_median"], 3)
out["ratios_fp16_time_over_int8_time"] = ratios
# Which layers each int8 engine ran in INT8 (from its build log's int8 notes).
for e in ("int8", "int8_strict"):
    log = os.path.join(sys.argv[4], f"build_{e}.log")
    if os.path.exists(log):
        out[f"{e}_build_notes"] = [l.strip() for l in open(log)
                                   if re.search(r"int8|device precision|runs in fp16", l)][:16]
json.dump(out, open(sys.argv[2], "w"), indent=1)
for k, c in sorted(out["cases"].items()):
    print(f"{k:12s} p50 {c['p50_ms_median']:.4f} ms  device {c.get('device_p50_ms_median', float('nan')):.4f} ms")
for k, v in ratios.items():
    print(f"{k}: {v}x")
PY
rm -rf "$work"
echo "total $((SECONDS - T0)) s"
