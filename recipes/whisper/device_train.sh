#!/usr/bin/env bash
# One time-boxed training run of the small Whisper-architecture model (GPU machine, or anywhere):
# generates text, synthesises a small held-out dev set (held-out voices, test sentences) and, in
# the background while train_whisper.py trains on whatever shards exist, training shards of
# Whisper's log-mel; then the dev set's WER (PyTorch greedy) and the export of optimum's layout to
# $OUT/model. Everything that must come back goes to $OUT (model.pt < 16 MB, optimizer parts,
# logs, the exported model).
#
#   OUT=/tmp/out TRAIN_SECONDS=300 [RESUME=DIR|model.pt] [SEED=1] [PACK=1] recipes/whisper/device_train.sh
# PACK=1 (a device call of its own, which brings back at most 8 files): $OUT ends with only
# whisper_model.tgz (the export and the logs) and whisper_model.pt (the weights).
# RESUME: a checkpoint folder (weights and optimizer) or a model.pt alone (weights, a new
# optimizer with its warmup). Then here: cp -r $OUT/model models/whisper_small
# (tests/e2e/trained_whisper.sh uses it).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-/tmp/voxrt-whisper-out}"
TRAIN_SECONDS="${TRAIN_SECONDS:-300}"
SEED="${SEED:-1}"
SENTENCES="${SENTENCES:-60000}"
COPIES="${COPIES:-2}"
DEV="${DEV:-100}"
JOBS="${JOBS:-$(nproc)}"
PY="${PY:-python3}"
WORK="${WORK:-/tmp/voxrt-whisper-work}"
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1
source recipes/data/tts_env.sh
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
# The held-out test sentences (seed 1001 against the seed-1 text) never reach training; the dev
# set is the first $DEV of them, spoken by the held-out voices.
PY="$PY" bash recipes/data/split_text.sh "$WORK" "$SENTENCES" "$SEED"
dev_args=()
if [ "$DEV" -gt 0 ]; then
  head -n "$DEV" "$WORK/test.txt" > "$WORK/dev.txt"
  "$PY" recipes/data/synth.py --text "$WORK/dev.txt" --out "$WORK/dev" --mode test --snr-db "" \
    --jobs "$JOBS" --seed 1001 > "$OUT/dev_synth.log" 2>&1 && dev_args=(--dev "$WORK/dev/clean/manifest.tsv")
fi
"$PY" recipes/data/synth.py --text "$WORK/train.txt" --out "$WORK/train" --mode train --features whisper \
  --jobs "$((JOBS > 2 ? JOBS - 2 : 1))" --copies "$COPIES" --seed "$SEED" \
  --shard-size "${SHARD_SIZE:-1000}" > "$OUT/synth.log" 2>&1 &
synth_pid=$!
resume_args=()
if [ -n "${RESUME:-}" ]; then resume_args=(--resume "$RESUME"); fi
"$PY" recipes/whisper/train_whisper.py --data "$WORK/train" --text "$WORK/train.txt" --out "$OUT/ckpt" \
  --train-seconds "$TRAIN_SECONDS" --log "$OUT/train.log" --seed "$SEED" --export "$OUT/model" \
  "${dev_args[@]}" "${resume_args[@]}" ${TRAIN_ARGS:-}
train_rc=$?
kill "$synth_pid" 2>/dev/null; wait "$synth_pid" 2>/dev/null
tail -3 "$OUT/synth.log"
tail -12 "$OUT/train.log"
ls -la "$OUT/ckpt" "$OUT/model"
if [ "${PACK:-0}" = 1 ]; then
  # A device call brings back at most 8 files: the export and the logs in one archive, the
  # weights (what a resume needs; a new optimizer) in one file, nothing else left in $OUT.
  tar czf "$OUT/whisper_model.tgz" -C "$OUT" model train.log synth.log dev_synth.log &&
    mv "$OUT/ckpt/model.pt" "$OUT/whisper_model.pt" &&
    rm -rf "$OUT/model" "$OUT/ckpt" "$OUT/train.log" "$OUT/synth.log" "$OUT/dev_synth.log"
  ls -la "$OUT"
fi
exit $train_rc
