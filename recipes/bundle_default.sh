#!/usr/bin/env bash
# Makes the bundled default model (models/default) from a training checkpoint of recipes/train:
#   bash recipes/bundle_default.sh CHECKPOINT_DIR [OUT_DIR]      (OUT_DIR: models/default)
# writes OUT_DIR/model.onnx (float16 weights read through Cast: the file must stay under 40 MB,
# issue 28), vocabulary.txt, reference_chunks.npz (PyTorch's streaming output for runtime tests)
# and source.txt (which checkpoint, its progress, the commit that held it). It leaves
# model.metadata.txt and MODEL_CARD.md alone: they hold measurements of a model, so after a new
# checkpoint re-run the measurements they name and update them:
#   recipes/eval/tune_decoding.py             (model.metadata.txt: beam, LM weight, word bonus)
#   bash recipes/eval/tune_stream_settings.sh (model.metadata.txt: word delays, endpoint tail)
#   bash recipes/eval/model_card_eval.sh      (MODEL_CARD.md's tables)
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: bash recipes/bundle_default.sh CHECKPOINT_DIR [OUT_DIR]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
checkpoint=$1
out=${2:-$root/models/default}
py=${PY:-/usr/bin/python3}
max_model_bytes=$((40 * 1000 * 1000))
if [ ! -f "$checkpoint/checkpoint.json" ]; then
  echo "bundle_default: expected a checkpoint folder with checkpoint.json, found none in '$checkpoint'" >&2
  exit 1
fi
mkdir -p "$out"
# Export into a scratch folder first, so a failed export never leaves a half-written bundle.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$py" "$root/recipes/train/export_onnx.py" --checkpoint "$checkpoint" --out "$scratch/model.onnx" \
  --fp16-weights --vocabulary-out "$scratch/vocabulary.txt" \
  --reference-out "$scratch/reference_chunks.npz"
model_bytes=$(stat -c %s "$scratch/model.onnx")
if [ "$model_bytes" -ge "$max_model_bytes" ]; then
  echo "bundle_default: expected model.onnx under $max_model_bytes bytes (issue 28), found" \
    "$model_bytes bytes from $checkpoint" >&2
  exit 1
fi
# export_onnx.py copies unit files (a SentencePiece .model) beside the ONNX file: keep them too.
for extra in "$scratch"/*; do
  case $(basename "$extra") in
    model.onnx | vocabulary.txt | reference_chunks.npz) ;;
    *) cp "$extra" "$out/" ;;
  esac
done
cp "$scratch/vocabulary.txt" "$scratch/reference_chunks.npz" "$out/"
cp "$scratch/model.onnx" "$out/model.onnx"
# Provenance: the card's evaluation reads the checkpoint from here for its PyTorch column.
checkpoint_rel=$(realpath --relative-to="$root" "$checkpoint")
# A fixed 12-digit abbreviation: git's default length grows with the number of objects, so a
# fresh clone and a long-lived one would write different files for the same commit.
commit=$(git -C "$root" log -1 --format=%H -- "$checkpoint" 2>/dev/null | cut -c1-12 || true)
"$py" - "$checkpoint/checkpoint.json" "$checkpoint_rel" "${commit:-uncommitted}" "$model_bytes" \
  >"$out/source.txt" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
progress, config = info.get("progress", {}), info.get("config", {})
print(f"checkpoint={sys.argv[2]}")
print(f"checkpoint_commit={sys.argv[3]}")
print(f"arch={config.get('arch')} units={config.get('units')} d_model={config.get('d_model')} "
      f"layers={config.get('layers')}")
print(f"training_steps={progress.get('steps')}")
print(f"training_seconds={round(progress.get('train_seconds', 0))}")
print(f"audio_hours_seen={round(progress.get('audio_hours_seen', 0))}")
print(f"model_onnx_bytes={sys.argv[4]}")
PY
echo "bundle_default: $out from $checkpoint_rel ($model_bytes bytes):"
cat "$out/source.txt"
