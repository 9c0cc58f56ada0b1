#!/usr/bin/env bash
# bench/server/make_wavs.sh [DIR]: the load generator's clips: eight English sentences spoken by
# espeak-ng (Debian; scripts/install-deps.sh installs it), 16 kHz mono PCM16 with 0.3 s of
# silence before and 0.8 s after, each with its reference text (FILE.txt) for the WER.
# Default DIR: .device/wavs (carried to the GPU machine by bench/server/gpu_streams.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/.device/wavs}
mkdir -p "$dir"
sentences=(
  "play some music in the kitchen"
  "what is the weather like tomorrow morning"
  "set a timer for ten minutes"
  "turn off the lights in the living room"
  "call my sister on her mobile phone"
  "remind me to buy milk and bread"
  "how far is it to the nearest station"
  "stop the music and read the news"
)
i=0
for s in "${sentences[@]}"; do
  raw=$(mktemp --suffix=.wav)
  espeak-ng -s 150 -w "$raw" "$s"
  sox "$raw" -r 16000 -c 1 -b 16 "$dir/clip$i.wav" pad 0.3 0.8
  rm -f "$raw"
  echo "$s" > "$dir/clip$i.txt"
  i=$((i + 1))
done
echo "made $i clips in $dir"
