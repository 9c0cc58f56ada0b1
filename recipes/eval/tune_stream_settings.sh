#!/usr/bin/env bash
# Measures the default model's streaming settings of model.metadata.txt (docs/model_contract.md,
# "Model bundle") through the real CLI, and prints them with the measurements behind them:
#   voxrt.word_start_delay_ms / word_end_delay_ms: the median (first word start - measured
#     speech onset) and (last word end - measured speech offset) of an engine built with both
#     delays 0, over 60 held-out synthetic clips (tests/e2e/long_stream_set.py --count 60
#     --seed 2024; tests/e2e/word_times.py). The tests (word_times.sh) use other clips (seed 31).
#   voxrt.endpoint_tail_ms: the end delay's 90th percentile rounded up to 100 ms, so the VAD's
#     endpoint waits until nine clips in ten have emitted their last units. Measured with a 1 s
#     tail so that the tail does not cut what it measures.
#   voxrt.state_at_endpoint: greedy and LM WER of the continuous streams (and of the same
#     utterances cut apart) with the CLI's default energy VAD, once with `reset` and once with
#     `carry`.
#   bash recipes/eval/tune_stream_settings.sh          (DATA=/tmp/v2: recipes/eval/model_card_eval.sh
#                                                       makes it when missing; WORK=/tmp/voxrt_tune)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
py=${PY:-/usr/bin/python3}
voxrt=${VOXRT:-build/bin/voxrt}
data=${DATA:-/tmp/v2}
work=${WORK:-/tmp/voxrt_tune}
model=models/default/model.onnx
profile=features:1x4x80/8x32x80/64x32x80
for needed in "$voxrt" "$model" "$data/test/clean/manifest.tsv" "$data/streams/manifest.tsv" "$data/lm.arpa"; do
  [ -e "$needed" ] || { echo "tune_stream_settings: expected $needed, found nothing" >&2; exit 1; }
done
mkdir -p "$work"

"$voxrt" build --onnx "$model" --engine "$work/raw.engine" --profile "$profile" --no-autotune \
  --metadata voxrt.word_start_delay_ms=0 --metadata voxrt.word_end_delay_ms=0 \
  --metadata voxrt.endpoint_tail_ms=1000 >"$work/build_raw.log" 2>&1
[ -f "$work/set/clips.tsv" ] || "$py" tests/e2e/long_stream_set.py --out "$work/set" --count 60 --seed 2024
"$py" tests/e2e/word_times.py --voxrt "$voxrt" --engine "$work/raw.engine" --set "$work/set" --json \
  >"$work/word_times.json"
"$py" - "$work/word_times.json" <<'PY'
import json, math, sys
report = json.load(open(sys.argv[1]))
start, end = report["start"], report["end"]
print(f"word times, delays 0 (60 clips, {report['with_words']} with words): start - onset median "
      f"{start['median_ms']:+.0f} ms (p10 {start['p10_ms']:+.0f}, p90 {start['p90_ms']:+.0f}); "
      f"end - offset median {end['median_ms']:+.0f} ms (p10 {end['p10_ms']:+.0f}, p90 {end['p90_ms']:+.0f})")
print(f"voxrt.word_start_delay_ms={round(start['median_ms'] / 10) * 10}")
print(f"voxrt.word_end_delay_ms={round(end['median_ms'] / 10) * 10}")
print(f"voxrt.endpoint_tail_ms={max(100, math.ceil(end['p90_ms'] / 100) * 100)}")
PY

for state in reset carry; do
  "$voxrt" build --onnx "$model" --engine "$work/$state.engine" --profile "$profile" --no-autotune \
    --metadata "voxrt.state_at_endpoint=$state" >"$work/build_$state.log" 2>&1
  nice -n 5 "$py" recipes/eval/compare.py --voxrt "$voxrt" --engine "$work/$state.engine" \
    --lm "$data/lm.arpa" --beam-args "" --no-pocketsphinx \
    --manifest "clean=$data/test/clean/manifest.tsv" --manifest "streams=$data/streams/manifest.tsv" \
    --cut-apart streams=clean --json "$work/state_$state.json" --markdown "$work/state_$state.md" \
    >"$work/state_$state.log" 2>&1
  echo "voxrt.state_at_endpoint=$state (energy VAD, the CLI's default; LM beam with the bundle's settings):"
  cat "$work/state_$state.md"
done
