#!/usr/bin/env bash
# One time-boxed training run on the GPU machine (or anywhere): generates text, synthesises the
# held-out test set, then synthesises training shards in the background while train.py trains on
# whatever shards exist, then evaluates on the test set. Everything that must come back goes to
# $OUT (checkpoint parts < 16 MB each, logs, eval.json).
#
#   OUT=/tmp/out TRAIN_SECONDS=450 [RESUME=out/model_ckpt] [SEED=1] [EVAL=0] recipes/device_train.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/voxrt-out}"
TRAIN_SECONDS="${TRAIN_SECONDS:-450}"
SEED="${SEED:-1}"
SENTENCES="${SENTENCES:-80000}"
COPIES="${COPIES:-2}"
TEST_SENTENCES="${TEST_SENTENCES:-400}"
JOBS="${JOBS:-$(nproc)}"
PY="${PY:-python3}"
WORK="${WORK:-/tmp/voxrt-work}"
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1
source recipes/data/tts_env.sh
"$PY" -c "import torch, torchaudio; print('torch', torch.__version__, 'torchaudio', torchaudio.__version__, 'cuda', torch.cuda.is_available())"
espeak-ng $ESPEAK_PATH_ARG --version; sox --version
# Test sentences always come from seed 1001 against the seed-1 training text, so every run
# (whatever its SEED) is scored on the same held-out sentences; training text of other seeds is
# filtered against them too.
"$PY" recipes/data/text_gen.py --count "$SENTENCES" --seed 1 > "$WORK/train_seed1.txt"
"$PY" recipes/data/text_gen.py --count "$TEST_SENTENCES" --seed 1001 \
  --exclude "$WORK/train_seed1.txt" > "$WORK/test.txt"
if [ "$SEED" = 1 ]; then
  cp "$WORK/train_seed1.txt" "$WORK/train.txt"
else
  "$PY" recipes/data/text_gen.py --count "$SENTENCES" --seed "$SEED" > "$WORK/train_raw.txt"
  grep -vxF -f "$WORK/test.txt" "$WORK/train_raw.txt" > "$WORK/train.txt"
fi
time "$PY" recipes/data/synth.py --text "$WORK/test.txt" --out "$WORK/test" --mode test \
  --jobs "$JOBS" --seed 1001
"$PY" recipes/data/synth.py --text "$WORK/train.txt" --out "$WORK/train" --mode train \
  --jobs "$((JOBS > 2 ? JOBS - 2 : 1))" --copies "$COPIES" --seed "$SEED" \
  --shard-size "${SHARD_SIZE:-2000}" > "$OUT/synth.log" 2>&1 &
synth_pid=$!
resume_args=()
if [ -n "${RESUME:-}" ]; then resume_args=(--resume "$RESUME"); fi
"$PY" recipes/train/train.py --data "$WORK/train" --out "$OUT/ckpt" --train-seconds "$TRAIN_SECONDS" \
  --min-shards 2 --log "$OUT/train.log" --seed "$SEED" "${resume_args[@]}" ${TRAIN_ARGS:-}
train_rc=$?
kill "$synth_pid" 2>/dev/null; wait "$synth_pid" 2>/dev/null
tail -3 "$OUT/synth.log"
if [ "${EVAL:-1}" = 0 ]; then exit $train_rc; fi
manifests=()
for condition in clean snr20 snr10 snr5; do
  manifests+=(--manifest "$condition=$WORK/test/$condition/manifest.tsv")
done
device=cpu; "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" && device=cuda
"$PY" recipes/eval/evaluate.py --checkpoint "$OUT/ckpt" "${manifests[@]}" --device "$device" \
  --json "$OUT/eval.json" --hyp-dir "$WORK/hyp"
head -c 20000 "$WORK/hyp/clean.hyp.tsv" > "$OUT/clean_hyp_head.tsv"
exit $train_rc
