#!/usr/bin/env bash
# NeMo's cache-aware streaming FastConformer-CTC (random weights, made by
# tests/models/nemo_cache_aware.py and exported as sherpa-onnx's script exports it) through the
# CLI: `voxrt build --model-dir` with no metadata written by hand; `voxrt transcribe` of two files
# at once (streams of different lengths batched together) and `voxrt serve` (an upload) must give,
# file by file, the text of the Python reference (NeMo's cache-aware streaming loop, greedy CTC);
# then the transducer (RNN-T) variant through build and transcribe; then both models in NeMo's own
# export layout (model_config.yaml, no metadata), which must give the same texts.
set -euo pipefail
voxrt=$1
source "$(dirname "$0")/nemo_cli_common.sh"
script="$src/tests/models/nemo_cache_aware.py"

"$py" "$script" export "$work/model" > "$work/export.log" 2>&1 || { cat "$work/export.log"; exit 1; }
"$voxrt" build --model-dir "$work/model" --engine "$work/model.bundle" --no-autotune --max-batch 4
test -f "$work/model.bundle/bundle.json"
"$py" "$script" reference "$work/model" "${files[@]}" 2>/dev/null > "$work/reference"
"$voxrt" transcribe --engine "$work/model.bundle" --vad off --json "${files[@]}" 2>/dev/null \
  > "$work/voxrt"
for f in "${files[@]}"; do
  want=$(reference_text "$work/reference" "$f")
  [ -n "$want" ] || { echo "FAIL: the reference decoded nothing for $f"; exit 1; }
  got=$(transcribed_text "$work/voxrt" "$f")
  check "transcribe $(basename "$f")" "$want" "$got"
done

start_server "$voxrt" "$work/serve.log" --engine "$work/model.bundle" --vad off --max-batch 4
for f in "${files[@]}"; do
  want=$(reference_text "$work/reference" "$f")
  check "serve upload $(basename "$f")" "$want" "$(upload_text "$f")"
done
stop_server

# The transducer (RNN-T) variant: encoder.onnx with NeMo's caches, decoder.onnx, joiner.onnx.
# NeMo's streaming loop has no endpoints, but the random model's blanks trigger voxrt's
# trailing-silence rule inside these clips, and the CLI has no flag to switch the rules off: the
# bundle's voxrt.state_at_endpoint (a tuned setting, docs/model_contract.md) is set to carry, so
# the caches and the prediction network's state go on through the endpoint as in NeMo's loop.
"$py" "$script" export "$work/rnnt" --model rnnt > "$work/export-rnnt.log" 2>&1 ||
  { cat "$work/export-rnnt.log"; exit 1; }
"$voxrt" build --model-dir "$work/rnnt" --engine "$work/rnnt.bundle" --no-autotune --max-batch 4
grep -q '"transducer_stateful"' "$work/rnnt.bundle/bundle.json"
"$py" - "$work/rnnt.bundle/bundle.json" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
manifest["metadata"]["voxrt.state_at_endpoint"] = "carry"
json.dump(manifest, open(sys.argv[1], "w"), indent=2)
PY
"$py" "$script" reference "$work/rnnt" "${files[@]}" 2>/dev/null > "$work/rnnt.reference"
"$voxrt" transcribe --engine "$work/rnnt.bundle" --vad off --json "${files[@]}" 2>/dev/null \
  > "$work/rnnt.voxrt"
for f in "${files[@]}"; do
  want=$(reference_text "$work/rnnt.reference" "$f")
  [ -n "$want" ] || { echo "FAIL: the reference decoded nothing for $f"; exit 1; }
  got=$(transcribed_text "$work/rnnt.voxrt" "$f")
  check "rnnt transcribe $(basename "$f")" "$want" "$got"
done

# NeMo's own export layout of the same two models (same seed: same weights): model.export()'s
# files without metadata beside the .nemo archive's model_config.yaml and tokenizer. Built as they
# are, they must give, file by file, the reference's text and the sherpa-onnx layout's (served
# too for the CTC model); the transducer bundle's endpoint state is set to carry as above.
"$py" "$script" export "$work/native" --layout nemo > "$work/export-native.log" 2>&1 ||
  { cat "$work/export-native.log"; exit 1; }
"$voxrt" build --model-dir "$work/native" --engine "$work/native.bundle" --no-autotune --max-batch 4
grep -q '"nemo-export-cache-aware-ctc"' "$work/native.bundle/bundle.json"
"$voxrt" transcribe --engine "$work/native.bundle" --vad off --json "${files[@]}" 2>/dev/null \
  > "$work/native.voxrt"
start_server "$voxrt" "$work/serve-native.log" --engine "$work/native.bundle" --vad off --max-batch 4
for f in "${files[@]}"; do
  want=$(reference_text "$work/reference" "$f")
  check "native transcribe $(basename "$f")" "$want" "$(transcribed_text "$work/native.voxrt" "$f")"
  check "native = sherpa-onnx layout $(basename "$f")" "$(transcribed_text "$work/voxrt" "$f")" \
    "$(transcribed_text "$work/native.voxrt" "$f")"
  check "native serve upload $(basename "$f")" "$want" "$(upload_text "$f")"
done
stop_server

"$py" "$script" export "$work/native-rnnt" --layout nemo --model rnnt > "$work/export-nrnnt.log" 2>&1 ||
  { cat "$work/export-nrnnt.log"; exit 1; }
"$voxrt" build --model-dir "$work/native-rnnt" --engine "$work/native-rnnt.bundle" --no-autotune \
  --max-batch 4
grep -q '"nemo-export-cache-aware-transducer"' "$work/native-rnnt.bundle/bundle.json"
"$py" - "$work/native-rnnt.bundle/bundle.json" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
manifest["metadata"]["voxrt.state_at_endpoint"] = "carry"
json.dump(manifest, open(sys.argv[1], "w"), indent=2)
PY
"$voxrt" transcribe --engine "$work/native-rnnt.bundle" --vad off --json "${files[@]}" 2>/dev/null \
  > "$work/native-rnnt.voxrt"
for f in "${files[@]}"; do
  want=$(reference_text "$work/rnnt.reference" "$f")
  got=$(transcribed_text "$work/native-rnnt.voxrt" "$f")
  check "native rnnt transcribe $(basename "$f")" "$want" "$got"
  check "native rnnt = sherpa-onnx layout $(basename "$f")" \
    "$(transcribed_text "$work/rnnt.voxrt" "$f")" "$got"
done
