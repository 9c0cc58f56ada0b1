#!/usr/bin/env bash
# One time-boxed training run on the GPU machine (or anywhere), for one 10-minute device call:
#   1. text: smart-speaker commands (text_gen.py, seed SEED) + WordNet's training sentences;
#      the dev/test text is fixed (commands of seed 1001 + WordNet's test split), so every run
#      is scored on the same held-out sentences, spoken by the held-out voices;
#   2. the dev set (held-out voices: clean and 10 dB) and two continuous streams of its commands;
#   3. training synthesis on JOBS-2 CPU processes in the background, writing feature shards
#      (the first CLEAN_FIRST utterances without augmentation: the easy start);
#   4. train.py (the Conformer, its default recipe: character units, pre-norm blocks, Noam
#      schedule, short utterances first, SpecAugment and back-to-back samples only once the
#      model has left the CTC blank plateau; see recipes/README.md; TRAIN_ARGS="--units
#      bpe:bpe500" for run 1's units) on whatever shards exist, for
#      TRAIN_SECONDS, saving the checkpoint into $OUT/ckpt every 90 s (float16 weights, parts
#      under 15 MB);
#   5. a quick dev evaluation on the GPU (clean, 10 dB, streams vs the same utterances cut
#      apart).
# Fail soft: whatever fails or is killed, the EXIT trap leaves the last complete checkpoint in
# $OUT/ckpt (saves are atomic folder swaps), removes half-written folders and writes
# $OUT/run.log and $OUT/summary.json. A watchdog ends training at DEADLINE_S (default 550 s after
# the start) so the call's 600 s limit is never what stops it. $OUT gets at most 8 files:
# ckpt/model_part*.npz (3 for the 15.6 M parameter model), ckpt/checkpoint.json, run.log,
# summary.json.
#
#   OUT=$OUT TRAIN_SECONDS=400 [RESUME=out/ckpt] [SEED=2] [NGPUS=1] recipes/device_train.sh
# Evaluation only (no synthesis of training data, no training), the whole held-out set on the
# GPU: TRAIN=0 RESUME=out/ckpt DEV_COMMANDS=400 DEV_GENERAL=200 DEV_SNR=20,10,5 STREAMS=4
set -uo pipefail
cd "$(dirname "$0")/.."
start_s=$SECONDS
OUT="${OUT:-/tmp/voxrt-out}"
TRAIN_SECONDS="${TRAIN_SECONDS:-400}"
DEADLINE_S="${DEADLINE_S:-550}"
SEED="${SEED:-1}"
SENTENCES="${SENTENCES:-60000}"
COPIES="${COPIES:-3}"
DEV_COMMANDS="${DEV_COMMANDS:-300}"
DEV_GENERAL="${DEV_GENERAL:-100}"
STREAMS="${STREAMS:-2}"
JOBS="${JOBS:-$(nproc)}"
NGPUS="${NGPUS:-1}"
PY="${PY:-python3}"
WORK="${WORK:-/tmp/voxrt-work}"
SHARD_SIZE="${SHARD_SIZE:-1000}"
CLEAN_FIRST="${CLEAN_FIRST:-20000}"
EVAL="${EVAL:-1}"
TRAIN="${TRAIN:-1}"
DEV_SNR="${DEV_SNR:-10}"
mkdir -p "$OUT" "$WORK"
# A machine kept warm between calls still has the last run's work: shards of another seed, a
# DONE mark, hypotheses. Start clean (only what this script writes).
rm -rf "$WORK/train" "$WORK/dev" "$WORK/hyp" "$WORK"/*.json "$WORK"/*.log "$WORK"/*.out
log="$OUT/run.log"
: > "$log"
export PYTHONUNBUFFERED=1
say() { echo "[$((SECONDS - start_s))s] $*" | tee -a "$log"; }
synth_pid=""
train_pid=""
watchdog_pid=""

finish() {
  local rc=$?
  trap - EXIT
  [ -n "$watchdog_pid" ] && kill "$watchdog_pid" 2>/dev/null
  [ -n "$train_pid" ] && kill "$train_pid" 2>/dev/null
  [ -n "$synth_pid" ] && kill "$synth_pid" 2>/dev/null
  wait 2>/dev/null
  # A save interrupted between its renames leaves ckpt.tmp / ckpt.old: keep the complete one.
  if [ ! -f "$OUT/ckpt/checkpoint.json" ] && [ -f "$OUT/ckpt.old/checkpoint.json" ]; then
    rm -rf "$OUT/ckpt"
    mv "$OUT/ckpt.old" "$OUT/ckpt"
  fi
  rm -rf "$OUT/ckpt.tmp" "$OUT/ckpt.old"
  {
    echo "== train.log"; cat "$WORK/train.log" 2>/dev/null
    echo "== synth.log (last 20 lines)"; tail -20 "$WORK/synth.log" 2>/dev/null
    echo "== eval.log"; cat "$WORK/eval.log" 2>/dev/null
  } >> "$log"
  "$PY" - "$WORK" "$OUT" "$rc" "$((SECONDS - start_s))" <<'EOF' 2>>"$log"
import json, os, sys
work, out, rc, wall = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def read(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
summary = {"exit_status": rc, "wall_s": wall, "train": read(os.path.join(work, "train_summary.json")),
           "synthesis": read(os.path.join(work, "train", "synth_stats.json")),
           "dev": read(os.path.join(work, "dev_eval.json")),
           "checkpoint": (read(os.path.join(out, "ckpt", "checkpoint.json")) or {}).get("progress")}
samples = []
for name in ("clean", "snr10", "streams"):
    path = os.path.join(work, "hyp", f"{name}.hyp.tsv")
    if os.path.exists(path):
        with open(path) as f:
            samples += [name + "\t" + line.rstrip("\n")[:600] for line in list(f)[:12]]
summary["sample_hypotheses"] = samples
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
EOF
  say "done (exit $rc); \$OUT: $(cd "$OUT" && find . -type f | sort | tr '\n' ' ')"
  exit "$rc"
}
trap finish EXIT

source recipes/data/tts_env.sh
# Without the speech tools nothing can be synthesised and the whole call would be spent training
# on no data (it happened: 2026-12-07, a fresh machine without .debs/). Stop at once and say why.
for tool in espeak-ng sox; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    say "expected $tool (system package or .debs/ from scripts/fetch-tts-debs.sh, carried to the" \
      "GPU machine as carry [\".debs\"]); found none: stopping before any training"
    exit 3
  fi
done
"$PY" -c "import torch, torchaudio; print('torch', torch.__version__, 'torchaudio', torchaudio.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.device_count())" 2>&1 | tee -a "$log"
say "espeak-ng $(espeak-ng $ESPEAK_PATH_ARG --version | head -1 | cut -c1-40); $(sox --version); cpus $(nproc)"

# 1. Text. The command test sentences come from seed 1001 against the seed-1 training text;
# training text of any seed is filtered against them; WordNet's split is fixed by hash.
"$PY" recipes/data/text_gen.py --count 80000 --seed 1 > "$WORK/commands_seed1.txt"
"$PY" recipes/data/text_gen.py --count "$DEV_COMMANDS" --seed 1001 \
  --exclude "$WORK/commands_seed1.txt" > "$WORK/dev_commands.txt"
"$PY" recipes/data/debian_text.py --split test > "$WORK/wordnet_test.txt"
"$PY" recipes/data/debian_text.py --split train > "$WORK/wordnet_train.txt"
head -n "$DEV_GENERAL" "$WORK/wordnet_test.txt" | cat "$WORK/dev_commands.txt" - > "$WORK/dev.txt"
"$PY" recipes/data/text_gen.py --count "$SENTENCES" --seed "$SEED" > "$WORK/commands_raw.txt"
grep -vxF -f "$WORK/dev_commands.txt" "$WORK/commands_raw.txt" | cat - "$WORK/wordnet_train.txt" \
  > "$WORK/train.txt"
say "text: $(wc -l < "$WORK/train.txt") training sentences, $(wc -l < "$WORK/dev.txt") dev"

# 2.-3. Training synthesis starts first (it is the long job); the small dev set beside it.
if [ "$TRAIN" != 0 ]; then
  "$PY" recipes/data/synth.py --text "$WORK/train.txt" --out "$WORK/train" --mode train \
    --jobs "$((JOBS > 3 ? JOBS - 2 : 1))" --copies "$COPIES" --seed "$SEED" \
    --shard-size "$SHARD_SIZE" --clean-first "$CLEAN_FIRST" > "$WORK/synth.log" 2>&1 &
  synth_pid=$!
fi
if [ "$EVAL" != 0 ]; then
  "$PY" recipes/data/synth.py --text "$WORK/dev.txt" --out "$WORK/dev" --mode test \
    --jobs "$([ "$TRAIN" != 0 ] && echo 2 || echo "$JOBS")" --seed 1001 --snr-db "$DEV_SNR" \
    >> "$log" 2>&1
  "$PY" recipes/data/synth.py --text "$WORK/dev_commands.txt" --out "$WORK/dev/streams" \
    --mode streams --manifest "$WORK/dev/clean/manifest.tsv" --streams "$STREAMS" \
    --seed 1001 >> "$log" 2>&1
  say "dev set: $(wc -l < "$WORK/dev/clean/manifest.tsv" 2>/dev/null) utterances, streams $(wc -l < "$WORK/dev/streams/manifest.tsv" 2>/dev/null)"
fi

# 4. Training, ended by train.py's own clock or by the watchdog before the deadline.
run_training() {
  resume_args=()
  if [ -n "${RESUME:-}" ]; then resume_args=(--resume "$RESUME"); fi
  launcher=("$PY")
  if [ "$NGPUS" -gt 1 ]; then launcher=("$PY" -m torch.distributed.run --standalone --nproc_per_node "$NGPUS"); fi
  left_s=$((DEADLINE_S - (SECONDS - start_s) - (EVAL != 0 ? 60 : 10)))
  if [ "$TRAIN_SECONDS" -gt "$left_s" ]; then TRAIN_SECONDS=$left_s; fi
  say "training for $TRAIN_SECONDS s on $NGPUS GPU(s)${RESUME:+, resuming from $RESUME}"
  "${launcher[@]}" recipes/train/train.py --data "$WORK/train" --out "$OUT/ckpt" \
    --train-seconds "$TRAIN_SECONDS" --min-shards 1 --log "$WORK/train.log" --seed "$SEED" \
    --summary "$WORK/train_summary.json" "${resume_args[@]}" ${TRAIN_ARGS:-} > "$WORK/train.out" 2>&1 &
  train_pid=$!
  ( sleep $((DEADLINE_S - (SECONDS - start_s) - (EVAL != 0 ? 45 : 5))); kill "$train_pid" 2>/dev/null ) &
  watchdog_pid=$!
  wait "$train_pid"
  train_rc=$?
  train_pid=""
  kill "$watchdog_pid" 2>/dev/null
  watchdog_pid=""
  kill "$synth_pid" 2>/dev/null
  wait "$synth_pid" 2>/dev/null
  synth_pid=""
  tail -5 "$WORK/train.out" >> "$log"
  say "training exit $train_rc"
}

train_rc=""
checkpoint="$OUT/ckpt"
if [ "$TRAIN" = 0 ]; then checkpoint="$RESUME"; else run_training; fi
[ "$EVAL" = 0 ] && exit "${train_rc:-0}"

# 5. Quick dev evaluation (PyTorch on the GPU).
device=cpu; "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" && device=cuda
manifests=(--manifest clean="$WORK/dev/clean/manifest.tsv")
for snr in ${DEV_SNR//,/ }; do manifests+=(--manifest "snr$snr=$WORK/dev/snr$snr/manifest.tsv"); done
timeout $((DEADLINE_S + 30 - (SECONDS - start_s))) "$PY" recipes/eval/evaluate.py \
  --checkpoint "$checkpoint" --device "$device" "${manifests[@]}" \
  --manifest streams="$WORK/dev/streams/manifest.tsv" --cut-apart streams=clean \
  --json "$WORK/dev_eval.json" --hyp-dir "$WORK/hyp" > "$WORK/eval.log" 2>&1
eval_rc=$?
say "dev evaluation exit $eval_rc: $(grep -h 'WER' "$WORK/eval.log" | tr '\n' ';')"
exit "${train_rc:-$eval_rc}"
