#!/usr/bin/env bash
# The small Whisper-architecture model trained by recipes/whisper on our synthetic speech
# (exported in Hugging Face optimum's layout to models/whisper_small), on held-out commands:
# imported with `voxrt build --model-dir --language en`, then `voxrt transcribe` on 20 held-out
# sentences spoken by held-out voices (recipes/data: seed 1001 against the seed-1 training text)
# must stay under a word error rate of $MAX_WER (0.5: a first bar for a model trained a few
# minutes; tighten it once one exists), and `voxrt serve` must give the CLI's text for an upload.
# Skips (exit 77) while no trained model exists or espeak-ng/flite/sox are missing.
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
model="$src/models/whisper_small"
max_wer=${MAX_WER:-0.5}
if [ ! -f "$model/encoder_model.onnx" ]; then
  echo "SKIP: no trained Whisper model in models/whisper_small (run recipes/whisper/device_train.sh on the GPU machine, then copy \$OUT/model there)"
  exit 77
fi
build_args=(--language en)
source "$(dirname "$0")/trained_model_check.sh"
