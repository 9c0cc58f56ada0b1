#!/usr/bin/env bash
# One time-boxed training run of the small streaming Conformer transducer (GPU machine, or anywhere):
# generates text, synthesises training shards with sherpa-onnx's fbank in the background while
# train_transducer.py trains on whatever shards exist, then exports the icefall layout to
# $OUT/model (encoder/decoder/joiner .onnx + tokens.txt). Everything that must come back goes to
# $OUT (model.pt and optimizer.pt < 16 MB each, logs, the exported model).
#
#   OUT=/tmp/out TRAIN_SECONDS=300 [RESUME=out/transducer_ckpt] [SEED=1] recipes/transducer/device_train.sh
# Then here: cp -r $OUT/model models/transducer_small (tests/e2e/trained_transducer.sh uses it).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/voxrt-transducer-out}"
TRAIN_SECONDS="${TRAIN_SECONDS:-300}"
SEED="${SEED:-1}"
SENTENCES="${SENTENCES:-60000}"
COPIES="${COPIES:-2}"
JOBS="${JOBS:-$(nproc)}"
PY="${PY:-python3}"
WORK="${WORK:-/tmp/voxrt-transducer-work}"
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1
source recipes/data/tts_env.sh
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
# The held-out test sentences (seed 1001 against the seed-1 text) never reach training.
PY="$PY" bash recipes/data/split_text.sh "$WORK" "$SENTENCES" "$SEED"
"$PY" recipes/data/synth.py --text "$WORK/train.txt" --out "$WORK/train" --mode train --features sherpa \
  --jobs "$((JOBS > 2 ? JOBS - 2 : 1))" --copies "$COPIES" --seed "$SEED" \
  --shard-size "${SHARD_SIZE:-2000}" > "$OUT/synth.log" 2>&1 &
synth_pid=$!
resume_args=()
if [ -n "${RESUME:-}" ]; then resume_args=(--resume "$RESUME"); fi
"$PY" recipes/transducer/train_transducer.py --data "$WORK/train" --out "$OUT/ckpt" \
  --train-seconds "$TRAIN_SECONDS" --log "$OUT/train.log" --seed "$SEED" --export "$OUT/model" \
  "${resume_args[@]}" ${TRAIN_ARGS:-}
train_rc=$?
kill "$synth_pid" 2>/dev/null; wait "$synth_pid" 2>/dev/null
tail -3 "$OUT/synth.log"
tail -5 "$OUT/train.log"
ls -la "$OUT/ckpt" "$OUT/model"
exit $train_rc
