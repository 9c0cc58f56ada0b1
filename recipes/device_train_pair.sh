#!/usr/bin/env bash
# Two trainings in one 10-minute device call, sharing the GPU and the CPUs: the default model
# (recipes/device_train.sh, the main job) and one small model of issue 27 beside it (a few
# minutes is what that issue asks): SIDE=transducer (default; recipes/transducer/device_train.sh)
# or SIDE=whisper (recipes/whisper/device_train.sh). A device call costs a machine start (minutes
# of the session's device time) and brings back at most 8 files, so the side model's results are
# packed to fit beside the default model's six:
#   $OUT/ckpt/model_part{0,1,2}.npz, ckpt/checkpoint.json, run.log, summary.json (device_train.sh)
#   $OUT/$SIDE_model.tgz  its export (transducer: icefall's layout; whisper: optimum's) + logs
#   $OUT/$SIDE_model.pt   its weights, to resume from (RESUME_TRANSDUCER=DIR holding model.pt;
#                         RESUME_WHISPER=whisper_model.pt or a checkpoint folder)
#
#   OUT=$OUT RESUME=recipes/checkpoints/v2_runN SEED=N TRAIN_SECONDS=455 DEADLINE_S=555 \
#     TRANSDUCER_SECONDS=380 bash recipes/device_train_pair.sh
#   OUT=$OUT RESUME=recipes/checkpoints/v2_runN SEED=N TRAIN_SECONDS=455 DEADLINE_S=555 \
#     SIDE=whisper WHISPER_SECONDS=380 bash recipes/device_train_pair.sh
# The CPUs are split: the default model's synthesis gets JOBS (default: all but 5), the side
# model's TRANSDUCER_JOBS / WHISPER_JOBS (6). Knobs per side: *_SECONDS (380), *_JOBS,
# *_SENTENCES (30000), *_ARGS (the trainer's extra arguments), RESUME_*.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT="${OUT:-/tmp/voxrt-out}"
SIDE="${SIDE:-transducer}"
cpus=$(nproc)
DEADLINE_S="${DEADLINE_S:-550}"
case "$SIDE" in
  transducer)
    side_seconds="${TRANSDUCER_SECONDS:-380}" side_jobs="${TRANSDUCER_JOBS:-6}"
    side_sentences="${TRANSDUCER_SENTENCES:-30000}" side_resume="${RESUME_TRANSDUCER:-}"
    side_args="${TRANSDUCER_ARGS:-}" ;;
  whisper)
    side_seconds="${WHISPER_SECONDS:-380}" side_jobs="${WHISPER_JOBS:-6}"
    side_sentences="${WHISPER_SENTENCES:-30000}" side_resume="${RESUME_WHISPER:-}"
    side_args="${WHISPER_ARGS:-}" ;;
  *) echo "SIDE: expected transducer or whisper, found '$SIDE'" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
side_out="/tmp/voxrt-$SIDE-out"
rm -rf "$side_out"
(
  # The side script has no watchdog of its own: its training is time-boxed, the text, the
  # export and a slow start are not, so the whole of it is cut before the call's deadline.
  # RESUME, TRAIN_ARGS, WORK and SHARD_SIZE are the default model's: not passed on.
  timeout "$((DEADLINE_S - 5))" env -u RESUME -u TRAIN_ARGS -u WORK -u SHARD_SIZE OUT="$side_out" \
    TRAIN_SECONDS="$side_seconds" JOBS="$side_jobs" SENTENCES="$side_sentences" \
    ${side_resume:+RESUME=$side_resume} ${side_args:+TRAIN_ARGS="$side_args"} \
    bash "recipes/$SIDE/device_train.sh" > "$side_out.log" 2>&1
  echo "$SIDE exit $?" >> "$side_out.log"
  cp "$side_out.log" "$side_out/run.log" 2>/dev/null
  tar czf "$OUT/${SIDE}_model.tgz" -C "$side_out" model run.log train.log synth.log 2>/dev/null
  cp "$side_out/ckpt/model.pt" "$OUT/${SIDE}_model.pt" 2>/dev/null
) &
side_pid=$!
JOBS="${JOBS:-$((cpus > 8 ? cpus - 5 : 2))}" bash recipes/device_train.sh
rc=$?
wait "$side_pid"
echo "== $SIDE (last 15 lines)"
tail -15 "$side_out.log"
exit "$rc"
