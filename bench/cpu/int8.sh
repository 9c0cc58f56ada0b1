#!/usr/bin/env bash
# bench/cpu/int8.sh: calibrated INT8 CPU engines against FP32 engines of the same model, against
# onnxruntime FP32 and against onnxruntime INT8 (same file, inputs and threads, interleaved
# rounds), for docs/perf/int8_cpu.md. Not a test. Needs a release build (build/bin, or
# VOXRT_BIN_DIR) and scripts/fetch-third-party.sh.
#   bash bench/cpu/int8.sh CALIBRATION_AUDIO_DIR [ROUNDS] [ITERATIONS] [MODELS]
# MODELS: any of default,gru,bilstm,conformer (default: all four).
#  - default: models/default/model.onnx, one streaming chunk (batch 1, 32 frames, states in),
#    calibrated on CALIBRATION_AUDIO_DIR (audio through its own front end);
#  - gru / bilstm: the DS2 exports of bench/cpu/export_models.py (uni-GRU 512x5, BiLSTM
#    1024x5; 2 s of spectrogram), calibrated on 4 tensor sets of the benchmark's own input
#    distribution (normal, sigma 0.5: random weights, so only the timing means anything);
#  - conformer: the streaming Conformer chunk of bench/transformer (12 x 256, 16 frames against
#    64 cached ones; tests/models/export_transformer_models.py --bench), its caches declared as
#    streaming states (so the final-projection rule sees the encoder output alone), calibrated
#    on 4 tensor sets of what the benchmark feeds it (normal, sigma 0.5; processed_lens 64);
#    its pointwise convolutions kept FP32 unless VOXRT_CONFORMER_INT8_POINTWISE=1 (see below).
# "onnxruntime INT8" is onnxruntime executing a model quantized by our re-implementation of its
# dynamic quantization format (bench/cpu/ort_dynamic_quantize.py: MatMulInteger / ConvInteger /
# DynamicQuantizeLSTM; GRU and Gemm stay FP32 as in its tool), not its own tool: Python
# onnxruntime, which holds the tool, is not installable here and onnxruntime-node has none. It
# runs in the same rounds as the INT8 engine, and its outputs are compared with onnxruntime FP32's.
# Each engine is built with autotuning at the thread count it runs with.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${VOXRT_BIN_DIR:-$root/build/bin}"
work="${VOXRT_BENCH_DIR:-$(dirname "$bin")/bench-int8}"
calibration=${1:?usage: int8.sh CALIBRATION_AUDIO_DIR [ROUNDS] [ITERATIONS] [MODELS]}
rounds=${2:-5}
iterations=${3:-20}
models=${4:-default,gru,bilstm,conformer}
mkdir -p "$work"
results="$work/results.jsonl"
: > "$results"

build() {  # engine-name threads onnx extra-args...
  local engine=$1 threads=$2 onnx=$3
  shift 3
  local start end
  start=$(date +%s.%N)
  "$bin/voxrt" build --onnx "$onnx" --engine "$work/$engine.engine" --threads "$threads" "$@" \
    > "$work/$engine.log" 2>&1 || { cat "$work/$engine.log"; exit 1; }
  end=$(date +%s.%N)
  echo "built $engine in $(echo "$end - $start" | bc) s"
}

ort_int8() {  # onnx -> its onnxruntime-INT8 form in $work (made once)
  local quantized
  quantized="$work/$(basename "${1%.onnx}")_ort_int8.onnx"
  [ -f "$quantized" ] || /usr/bin/python3 "$root/bench/cpu/ort_dynamic_quantize.py" "$1" "$quantized" >&2
  echo "$quantized"
}

tensor_sets() {  # onnx folder: 4 sets of every input, floats normal(0, 0.5), integers 64
  [ -d "$2" ] && return
  /usr/bin/python3 - "$1" "$2" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import numpy_helper
model = onnx.load(sys.argv[1])
rng = np.random.default_rng(1)
for s in range(4):
    folder = os.path.join(sys.argv[2], f"test_data_set_{s}")
    os.makedirs(folder)
    for k, value in enumerate(model.graph.input):
        dims = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            x = rng.normal(0.0, 0.5, dims).astype(np.float32)
        else:
            x = np.full(dims, 64, dtype=np.int64)
        with open(os.path.join(folder, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, value.name).SerializeToString())
PY
}

compare() {  # label onnx engine shapes... (one JSON line, labelled)
  local label=$1 onnx=$2 engine=$3 threads=$4
  shift 4
  "$bin/cpu_vs_onnxruntime" --onnx "$onnx" --engine "$work/$engine.engine" "$@" \
    --threads "$threads" --rounds "$rounds" --iterations "$iterations" --json |
    /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); j['label']='$label'; j['threads']=$threads; print(json.dumps(j))" |
    tee -a "$results"
}

if [[ $models == *default* ]]; then
  onnx="$root/models/default/model.onnx"
  chunk=(--profile features:1x32x80/1x32x80/1x32x80)
  shapes=(--shapes features:1x32x80 --shapes conv1_state:1x4x80 --shapes conv2_state:1x32x4x40
    --shapes gru_state:1x5x512)
  for threads in 1 2; do
    build default_fp32_t$threads $threads "$onnx" "${chunk[@]}"
    build default_int8_t$threads $threads "$onnx" "${chunk[@]}" --precision int8 \
      --calibration-data "$calibration" --calibration-cache "$work/default.calib"
    compare default_fp32 "$onnx" default_fp32_t$threads $threads "${shapes[@]}"
    compare default_int8 "$onnx" default_int8_t$threads $threads "${shapes[@]}" \
      --ort-quantized "$(ort_int8 "$onnx")"
  done
fi

for model in gru:ds2_gru_uni512x5 bilstm:ds2_bilstm1024x5; do
  name=${model%%:*}
  [[ $models == *$name* ]] || continue
  onnx="$work/${model##*:}.onnx"
  [ -f "$onnx" ] || /usr/bin/python3 "$root/bench/cpu/export_models.py" "$work"
  sets="$work/${name}_tensor_sets"
  if [ ! -d "$sets" ]; then
    /usr/bin/python3 - "$sets" <<'PY'
import os, sys
import numpy as np
from onnx import numpy_helper
rng = np.random.default_rng(1)
for s in range(4):
    folder = os.path.join(sys.argv[1], f"test_data_set_{s}")
    os.makedirs(folder)
    x = rng.normal(0.0, 0.5, (1, 1, 161, 200)).astype(np.float32)
    with open(os.path.join(folder, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
PY
  fi
  profile=(--profile x:1x1x161x200/1x1x161x200/1x1x161x200)
  for threads in 1 2; do
    build ${name}_fp32_t$threads $threads "$onnx" "${profile[@]}"
    build ${name}_int8_t$threads $threads "$onnx" "${profile[@]}" --precision int8 \
      --calibration-data "$sets" --calibration-cache "$work/$name.calib"
    compare ${name}_fp32 "$onnx" ${name}_fp32_t$threads $threads --shapes x:1x1x161x200
    compare ${name}_int8 "$onnx" ${name}_int8_t$threads $threads --shapes x:1x1x161x200 \
      --ort-quantized "$(ort_int8 "$onnx")"
  done
done

if [[ $models == *conformer* ]]; then
  onnx="$work/conformer/conformer_chunk.onnx"
  [ -f "$onnx" ] ||
    /usr/bin/python3 "$root/tests/models/export_transformer_models.py" "$work/conformer" --bench
  tensor_sets "$onnx" "$work/conformer_tensor_sets"
  states=(--state processed_lens:new_processed_lens)
  for layer in $(seq 0 11); do
    for cache in key val conv; do
      states+=(--state "cached_${cache}_$layer:new_cached_${cache}_$layer")
    done
  done
  profile=(--profile x:1x16x80/1x16x80/1x16x80 "${states[@]}")
  # The 24 pointwise convolutions stay FP32 unless VOXRT_CONFORMER_INT8_POINTWISE=1: in INT8
  # (amx_int8 makes them time faster than FP32, so the autotuner takes them) they moved the
  # outputs further from FP32 than all the other INT8 layers together (docs/perf/int8_cpu.md).
  keep_fp32=()
  if [ "${VOXRT_CONFORMER_INT8_POINTWISE:-0}" != 1 ]; then
    for layer in $(seq 0 11); do
      for conv in 1 2; do
        keep_fp32+=(--layer-precision "/layers.$layer/pointwise_conv$conv/Conv:fp32")
      done
    done
  fi
  for threads in 1 2; do
    build conformer_fp32_t$threads $threads "$onnx" "${profile[@]}"
    build conformer_int8_t$threads $threads "$onnx" "${profile[@]}" "${keep_fp32[@]}" --precision int8 \
      --calibration-data "$work/conformer_tensor_sets" --calibration-cache "$work/conformer.calib"
    compare conformer_fp32 "$onnx" conformer_fp32_t$threads $threads --shapes x:1x16x80 \
      --fill processed_lens=64
    compare conformer_int8 "$onnx" conformer_int8_t$threads $threads --shapes x:1x16x80 \
      --fill processed_lens=64 --ort-quantized "$(ort_int8 "$onnx")"
  done
fi

# INT8 against FP32 of voxrt: each ran interleaved with the same onnxruntime session setup, so
# both ratios are also given against onnxruntime.
/usr/bin/python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {(r["label"], r["threads"]): r for r in rows}
print(f"{'model':9} {'thr':>3} {'fp32 ms':>9} {'int8 ms':>9} {'int8/fp32':>9} "
      f"{'ort fp32 ms':>11} {'fp32 vs ort':>11} {'int8 vs ort':>11} {'ort int8 ms':>11} "
      f"{'int8 vs ort int8':>16} {'int8 cpu-time speedup':>22}")
for (label, threads), r in sorted(by.items()):
    if not label.endswith("_int8"):
        continue
    model = label[:-5]
    f = by.get((model + "_fp32", threads))
    if not f:
        continue
    ort_int8 = r.get("onnxruntime_quantized_median_ms", float("nan"))
    print(f"{model:9} {threads:>3} {f['voxrt_median_ms']:9.3f} {r['voxrt_median_ms']:9.3f} "
          f"{f['voxrt_median_ms'] / r['voxrt_median_ms']:9.2f} {r['onnxruntime_median_ms']:11.3f} "
          f"{f['onnxruntime_median_ms'] / f['voxrt_median_ms']:11.2f} "
          f"{r['onnxruntime_median_ms'] / r['voxrt_median_ms']:11.2f} {ort_int8:11.3f} "
          f"{ort_int8 / r['voxrt_median_ms']:16.2f} "
          f"{f['voxrt_cpu_median_ms'] / r['voxrt_cpu_median_ms']:22.2f}")
    print(f"{'':13} max |diff| from onnxruntime fp32: voxrt int8 {r['max_abs_diff_vs_onnxruntime']:.3g}"
          f", onnxruntime int8 {r.get('onnxruntime_quantized_max_abs_diff_vs_fp32', float('nan')):.3g}"
          f", voxrt fp32 {f['max_abs_diff_vs_onnxruntime']:.3g}")
PY
echo "results: $results"
