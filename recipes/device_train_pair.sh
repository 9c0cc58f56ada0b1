#!/usr/bin/env bash
# Two trainings in one 10-minute device call, sharing the GPU and the CPUs: the default model
# (recipes/device_train.sh, the main job) and the small streaming transducer of issue 27
# (recipes/transducer/device_train.sh, a few minutes is what that issue asks). A device call
# costs a machine start (minutes of the session's device time) and brings back at most 8 files,
# so the transducer's results are packed to fit beside the default model's six:
#   $OUT/ckpt/model_part{0,1,2}.npz, ckpt/checkpoint.json, run.log, summary.json (device_train.sh)
#   $OUT/transducer_model.tgz  the icefall layout (encoder/decoder/joiner .onnx, tokens.txt) + logs
#   $OUT/transducer_model.pt   its weights, to resume from (RESUME_TRANSDUCER=DIR holding model.pt)
#
#   OUT=$OUT RESUME=recipes/checkpoints/v2_runN SEED=N TRAIN_SECONDS=455 DEADLINE_S=555 \
#     TRANSDUCER_SECONDS=380 bash recipes/device_train_pair.sh
# The CPUs are split: the default model's synthesis gets JOBS (default: all but 5), the
# transducer's TRANSDUCER_JOBS (6).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/voxrt-out}"
cpus=$(nproc)
TRANSDUCER_JOBS="${TRANSDUCER_JOBS:-6}"
TRANSDUCER_SECONDS="${TRANSDUCER_SECONDS:-380}"
DEADLINE_S="${DEADLINE_S:-550}"
mkdir -p "$OUT"
transducer_out=/tmp/voxrt-transducer-out
rm -rf "$transducer_out"
(
  # The transducer script has no watchdog of its own: its training is time-boxed, the text, the
  # export and a slow start are not, so the whole of it is cut before the call's deadline.
  # RESUME, TRAIN_ARGS, WORK and SHARD_SIZE are the default model's: not passed on.
  timeout "$((DEADLINE_S - 5))" env -u RESUME -u TRAIN_ARGS -u WORK -u SHARD_SIZE OUT="$transducer_out" TRAIN_SECONDS="$TRANSDUCER_SECONDS" \
    JOBS="$TRANSDUCER_JOBS" SENTENCES="${TRANSDUCER_SENTENCES:-30000}" \
    ${RESUME_TRANSDUCER:+RESUME=$RESUME_TRANSDUCER} ${TRANSDUCER_ARGS:+TRAIN_ARGS="$TRANSDUCER_ARGS"} \
    bash recipes/transducer/device_train.sh > "$transducer_out.log" 2>&1
  echo "transducer exit $?" >> "$transducer_out.log"
  cp "$transducer_out.log" "$transducer_out/run.log" 2>/dev/null
  tar czf "$OUT/transducer_model.tgz" -C "$transducer_out" model run.log train.log synth.log 2>/dev/null
  cp "$transducer_out/ckpt/model.pt" "$OUT/transducer_model.pt" 2>/dev/null
) &
transducer_pid=$!
JOBS="${JOBS:-$((cpus > 8 ? cpus - 5 : 2))}" bash recipes/device_train.sh
rc=$?
wait "$transducer_pid"
echo "== transducer (last 15 lines)"
tail -15 "$transducer_out.log"
exit "$rc"
