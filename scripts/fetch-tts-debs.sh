#!/usr/bin/env bash
# Fetch the Debian .deb files of the TTS and audio tools (espeak-ng, flite, sox and their
# libraries) into .debs/, so they can travel to a machine without a package manager and be
# unpacked there with `dpkg -x` into a private prefix (recipes/data/tts_env.sh does that).
# The list is the one measured in shared/research/tts_on_the_gpu_machine.md, plus what the
# default model's recipe added: MP3 (lame; libsox-fmt-mp3 where sox finds its plugins), Opus round trips
# (opus-tools) and WordNet's usage examples (wordnet-base, text only).
set -euo pipefail
repo_root="$(cd "$(dirname "$0")/.." && pwd)"
deb_dir="${1:-$repo_root/.debs}"
mkdir -p "$deb_dir"
packages=(
  espeak-ng espeak-ng-data libespeak-ng1 libpcaudio0 libsonic0 libpulse0 libasyncns0
  libdbus-1-3 libsystemd0 libx11-6 libx11-xcb1 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0
  libasound2 libasound2-data flite libflite1 sox libsox3 libsox-fmt-base libsndfile1
  libflac12 libogg0 libvorbis0a libvorbisenc2 libopus0 libmpg123-0 libmp3lame0 libgsm1
  libmagic1 libmagic-mgc libltdl7 libpng16-16 libgomp1
  libsox-fmt-mp3 libmad0 libid3tag0 libtwolame0 lame opus-tools libopusenc0 libopusfile0 wordnet-base
)
cd "$deb_dir"
missing=()
for package in "${packages[@]}"; do
  if ! ls "${package}"_*.deb >/dev/null 2>&1; then missing+=("$package"); fi
done
if ((${#missing[@]})); then apt-get download "${missing[@]}"; fi
du -sh "$deb_dir"
