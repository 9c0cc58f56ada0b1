#!/usr/bin/env bash
# Every command of README.md's bash blocks and every example of `voxrt --help` and
# `voxrt <command> --help` runs here (issue 31: docs examples rotted), in a scratch folder that
# holds what they name: build/bin (the binary's folder), models/, samples/, .third_party/ (links
# into the repository), model.onnx (the default model and its metadata file), silero_vad_v5.onnx,
# test_data_set_0/ (the default model's PyTorch reference as TensorProto files) and engines the
# examples load before they build them. Servers are started, asked /healthz, and stopped. Lines
# that need a GPU, or the third-party models, are reported as skipped where those are missing, as
# are model-repository deploys (minutes of autotuning; their own tests run them) and imports of a
# downloaded sherpa-onnx folder.
set -uo pipefail
voxrt=$(realpath "$1")
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1
mkdir -p build
ln -s "$(dirname "$voxrt")" build/bin
ln -s "$src/models" models
ln -s "$src/samples" samples
[ -d "$src/.third_party" ] && ln -s "$src/.third_party" .third_party
ln -s "$src/models/default/model.onnx" model.onnx
ln -s "$src/models/default/model.metadata.txt" model.metadata.txt
[ -f .third_party/models/silero_vad_v5.onnx ] && ln -s .third_party/models/silero_vad_v5.onnx silero_vad_v5.onnx
/usr/bin/python3 - "$src/models/default/reference_chunks.npz" test_data_set_0 <<'PY' || exit 1
# The default model on the PyTorch reference: one call (its first 32-frame chunk, 2 streams)
# from zero states; the outputs are the log-probs and the states after it, as export_onnx.py
# recorded them (first_call_*).
import os, sys
import numpy as np
from onnx import numpy_helper
ref = np.load(sys.argv[1])
os.makedirs(sys.argv[2])
states = ["sub1_state_out", "sub2_state_out", "attn_cache_out", "conv_cache_out", "key_mask_out"]
chunk_frames = ref["first_call_log_probs"].shape[1] * 4  # subsampling 4
inputs = [np.ascontiguousarray(ref["features"][:, :chunk_frames])]
inputs += [np.zeros_like(ref[f"first_call_{s}"]) for s in states]
outputs = [ref["first_call_log_probs"]] + [ref[f"first_call_{s}"] for s in states]
for kind, tensors in (("input", inputs), ("output", outputs)):
    for k, t in enumerate(tensors):
        with open(f"{sys.argv[2]}/{kind}_{k}.pb", "wb") as f:
            f.write(numpy_helper.from_array(t).SerializeToString())
PY
for engine in model.engine default.engine; do
  "$voxrt" build --onnx model.onnx --engine $engine --no-autotune > /dev/null 2>&1 || { echo "FAIL: setup build"; exit 1; }
done

has_gpu=1
"$voxrt" --version > version.txt 2>&1
grep -q "no CUDA device\|no CUDA backend\|could not be loaded" version.txt && has_gpu=0
has_third_party=0
[ -d .third_party/node_modules/onnxruntime-node ] && [ -f .third_party/models/silero_vad_v5.onnx ] && has_third_party=1

passed=0
failed=0
skipped=0
B=build/bin
skip() { echo "SKIP ($1): $2"; skipped=$((skipped + 1)); }

# A server example: started in the background, passes once /healthz answers.
run_server() {
  local command=$1 port
  port=$(grep -oE -- '--port [0-9]+' <<<"$command" | awk '{print $2}')
  port=${port:-8080}
  eval "$command" > "server_$port.log" 2>&1 &
  local pid=$!
  servers+=("$pid")
  for _ in $(seq 100); do
    if curl -sf "http://127.0.0.1:$port/healthz" > /dev/null 2>&1; then
      echo "ok (server on $port): $command"
      passed=$((passed + 1))
      return
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.3
  done
  echo "FAIL: $command"
  tail -5 "server_$port.log"
  failed=$((failed + 1))
}

run_example() {
  local command=$1
  case $command in
    "" | "#"*) return ;;
    [A-Z]=* | [A-Z][A-Z]=*) eval "$command"; return ;;
    "bash scripts/"*) skip "a whole-machine flow, run by CI itself" "$command"; return ;;
  esac
  if [[ $command == *"--device cuda"* || $command == *"--devices 0"* || $command == *"gpu.engine"* ]] && [ $has_gpu = 0 ]; then
    skip "no CUDA device here" "$command"
    return
  fi
  if [[ $command == *".third_party"* || $command == *"silero_vad_v5"* || $command == *"--mark-all"* ]] && [ $has_third_party = 0 ]; then
    skip "scripts/fetch-third-party.sh not run" "$command"
    return
  fi
  if [[ $command == *" deploy "* || $command == *" --repo "* ]]; then
    skip "a model repository: deploy autotunes and gates for minutes (server_model_lifecycle and scripts/model-ci.sh run it)" "$command"
    return
  fi
  if [[ $command == *"zipformer"* ]] && [ ! -d sherpa-onnx-streaming-zipformer-en ]; then
    skip "no downloaded sherpa-onnx export here (models_transducer and e2e_cli_transducer import layouts made from code)" "$command"
    return
  fi
  if [[ $command == *"--accuracy-data"* ]]; then
    skip "needs synthesized speech and minutes of builds (e2e_int8_accuracy_gate, e2e_debug_precision run it)" "$command"
    return
  fi
  if [[ $command == *" serve "* ]]; then
    run_server "$command"
    return
  fi
  if [[ $command == *" loadgen "* ]]; then
    # It needs a server where it points: the serve example's port.
    local port
    port=$(grep -oE '127\.0\.0\.1:[0-9]+' <<<"$command" | cut -d: -f2)
    curl -sf "http://127.0.0.1:$port/healthz" > /dev/null 2>&1 ||
      run_server "$B/voxrt serve --engine default.engine --port $port"
  fi
  if eval "$command" > example.log 2>&1; then
    echo "ok: $command"
    passed=$((passed + 1))
  else
    echo "FAIL ($?): $command"
    tail -5 example.log
    failed=$((failed + 1))
  fi
}

# README.md: the lines of every ```bash block, continuation lines joined.
echo "== README.md"
in_block=0
line=""
while IFS= read -r raw; do
  if [[ $raw == '```bash' ]]; then in_block=1; continue; fi
  if [[ $raw == '```' ]]; then in_block=0; continue; fi
  [ $in_block = 1 ] || continue
  if [[ $raw == *'\' ]]; then line+="${raw%\\} "; continue; fi
  line+=$raw
  run_example "$line"
  line=""
done < "$src/README.md"

# --help: lines that start with "  voxrt " (a trailing "   description" column cut off).
echo "== --help examples"
for command in "" build inspect run check bench transcribe serve loadgen "debug precision"; do
  # shellcheck disable=SC2086  # an empty command is the top-level --help
  "$voxrt" $command --help > help.txt 2>&1
  joined=$(sed -e ':a' -e '/\\$/N; s/\\\n *//; ta' help.txt)
  while IFS= read -r example; do
    example=$(sed -E 's/ {3,}[a-z].*$//' <<<"$example")
    run_example "$B/voxrt ${example#voxrt }"
  done < <(grep -E '^  voxrt ' <<<"$joined" | sed 's/^  //')
done

echo "examples: $passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ] && [ $passed -gt 20 ] && echo PASS
[ $failed = 0 ] && [ $passed -gt 20 ]
