#!/usr/bin/env bash
# Source this file. Makes espeak-ng, flite and sox usable: the system ones if installed, else the
# .debs in $VOXRT_DEB_DIR (default <repo>/.debs) unpacked with `dpkg -x` into a private prefix.
# Exports ESPEAK_PATH_ARG (espeak-ng needs --path=<folder with espeak-ng-data> when unpacked).
_voxrt_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ESPEAK_PATH_ARG=""
if command -v espeak-ng >/dev/null && command -v flite >/dev/null && command -v sox >/dev/null \
   && [ -z "${VOXRT_FORCE_PRIVATE_TTS:-}" ]; then
  :
else
  _deb_dir="${VOXRT_DEB_DIR:-$_voxrt_repo/.debs}"
  _prefix="${VOXRT_TTS_PREFIX:-/tmp/voxrt-tts}"
  if [ ! -x "$_prefix/usr/bin/sox" ]; then
    mkdir -p "$_prefix"
    for _deb in "$_deb_dir"/*.deb; do dpkg -x "$_deb" "$_prefix"; done
  fi
  _lib="$_prefix/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$_lib:$_lib/pulseaudio:$_prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$_prefix/usr/bin:$PATH"
  ESPEAK_PATH_ARG="--path=$_lib"
fi
export ESPEAK_PATH_ARG
