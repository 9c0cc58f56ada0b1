#!/usr/bin/env bash
# bench/transformer/run.sh: voxrt's CPU engines against onnxruntime on the Transformer cases of
# issue 26 (same ONNX files, inputs and threads; runs interleaved; medians and their ratio), for
# docs/perf/transformer_cpu.md. Not a test. Needs a release build (build/bin, or VOXRT_BIN_DIR)
# and scripts/fetch-third-party.sh. Each engine is built (tactics timed) with the thread count it
# is then run with.
#   - streaming Conformer chunk: 12 x 256, 4 heads, FFN 1024, conv kernel 31, 16 frames against
#     64 cached frames (processed_lens 64: every cache entry valid), batch 1;
#   - Whisper-base encoder (6 x 512, 8 heads), 30 s (3000 mel frames), batch 1;
#   - Whisper-base decoder step with past (optimum's decoder_with_past_model): 1 token against
#     64 past tokens and 1500 encoder frames, batch 1.
#   bash bench/transformer/run.sh [ROUNDS] [ITERATIONS] [THREADS...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${VOXRT_BIN_DIR:-$root/build/bin}"
work="${VOXRT_BENCH_DIR:-$(dirname "$bin")/bench-transformer}"
rounds=${1:-5}
iterations=${2:-10}
shift $(($# > 2 ? 2 : $#))
thread_counts=("${@:-1 2}")
thread_counts=(${thread_counts[@]})
mkdir -p "$work"
[ -f "$work/conformer_chunk.onnx" ] ||
  /usr/bin/python3 "$root/tests/models/export_transformer_models.py" "$work" --bench
results="$work/results.jsonl"
: > "$results"
build_log="$work/build_times.txt"
: > "$build_log"
rm -f "$work/cpu.cache"

past_shapes() {  # the decoder's past inputs at 64 past tokens and 1500 encoder frames
  local layer side kv length
  for layer in 0 1 2 3 4 5; do
    for side in decoder encoder; do
      for kv in key value; do
        length=$([ $side = decoder ] && echo 64 || echo 1500)
        echo "past_key_values.$layer.$side.$kv:1x8x${length}x64"
      done
    done
  done
}

build() {  # name threads onnx extra-args... -> $work/name_tTHREADS.engine
  local name=$1 threads=$2 onnx=$3
  shift 3
  local start end engine="${name}_t${threads}"
  start=$(date +%s.%N)
  "$bin/voxrt" build --onnx "$onnx" --engine "$work/$engine.engine" --threads "$threads" \
    --timing-cache "$work/cpu.cache" "$@" > "$work/$engine.build.log"
  end=$(date +%s.%N)
  echo "$engine $(echo "$end - $start" | bc) s" | tee -a "$build_log"
}

decoder_profiles=()
decoder_shapes=()
for s in $(past_shapes); do
  decoder_profiles+=(--profile "${s%%:*}:${s##*:}/${s##*:}/${s##*:}")
  decoder_shapes+=(--shapes "$s")
done

for threads in "${thread_counts[@]}"; do
  build conformer_chunk "$threads" "$work/conformer_chunk.onnx"
  build whisper_encoder "$threads" "$work/whisper_base_encoder_model.onnx"
  build whisper_decoder_step "$threads" "$work/whisper_base_decoder_with_past_model.onnx" \
    "${decoder_profiles[@]}"
done

for threads in "${thread_counts[@]}"; do
  "$bin/cpu_vs_onnxruntime" --onnx "$work/conformer_chunk.onnx" \
    --engine "$work/conformer_chunk_t$threads.engine" --shapes x:1x16x80 --fill processed_lens=64 \
    --threads "$threads" --rounds "$rounds" --iterations "$iterations" --json | tee -a "$results"
  "$bin/cpu_vs_onnxruntime" --onnx "$work/whisper_base_encoder_model.onnx" \
    --engine "$work/whisper_encoder_t$threads.engine" --shapes input_features:1x80x3000 \
    --threads "$threads" --rounds "$rounds" --iterations "$(((iterations + 4) / 5))" --json |
    tee -a "$results"
  "$bin/cpu_vs_onnxruntime" --onnx "$work/whisper_base_decoder_with_past_model.onnx" \
    --engine "$work/whisper_decoder_step_t$threads.engine" --shapes input_ids:1x1 \
    "${decoder_shapes[@]}" --fill input_ids=50257 --threads "$threads" --rounds "$rounds" \
    --iterations "$iterations" --json | tee -a "$results"
done
echo "results: $results; build times: $build_log"
