#!/usr/bin/env bash
# Source this file. Makes espeak-ng, flite, sox (with MP3), opusenc/opusdec and WordNet's data
# usable: the system ones if all are installed, else the .debs in $VOXRT_DEB_DIR (default
# <repo>/.debs, scripts/fetch-tts-debs.sh) unpacked with `dpkg -x` into a private prefix
# ($VOXRT_TTS_PREFIX, default /tmp/voxrt-tts; recipes/data/debian_text.py looks there too).
# Exports ESPEAK_PATH_ARG (espeak-ng needs --path=<folder with espeak-ng-data> when unpacked).
_voxrt_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ESPEAK_PATH_ARG=""
if command -v espeak-ng >/dev/null && command -v flite >/dev/null && command -v sox >/dev/null \
   && command -v opusenc >/dev/null && [ -f /usr/share/wordnet/data.noun ] \
   && [ -z "${VOXRT_FORCE_PRIVATE_TTS:-}" ]; then
  :
else
  _deb_dir="${VOXRT_DEB_DIR:-$_voxrt_repo/.debs}"
  _prefix="${VOXRT_TTS_PREFIX:-/tmp/voxrt-tts}"
  export VOXRT_TTS_PREFIX="$_prefix"
  if [ ! -x "$_prefix/usr/bin/opusenc" ]; then
    mkdir -p "$_prefix"
    for _deb in "$_deb_dir"/*.deb; do dpkg -x "$_deb" "$_prefix"; done
  fi
  _lib="$_prefix/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$_lib:$_lib/pulseaudio:$_prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$_prefix/usr/bin:$PATH"
  # sox loads its format plugins (MP3, Vorbis, FLAC...) with libltdl from its build-time folder;
  # LTDL_LIBRARY_PATH adds the unpacked one (synth_stats.json counts codecs that were missing).
  export LTDL_LIBRARY_PATH="$_lib/sox${LTDL_LIBRARY_PATH:+:$LTDL_LIBRARY_PATH}"
  ESPEAK_PATH_ARG="--path=$_lib"
fi
export ESPEAK_PATH_ARG
