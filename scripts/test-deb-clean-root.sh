#!/usr/bin/env bash
# scripts/test-deb-clean-root.sh BUILD_DIR: the Debian package on a clean Debian 12 root.
#   1. cpack -G DEB in BUILD_DIR: voxrt_<version>_<arch>.deb (and voxrt-cuda_... with the plugin).
#   2. debootstrap --variant=minbase bookworm into a scratch root (Debian's default mirror), or
#      reuse VOXRT_DEB_ROOT when it already holds one (the download is the slow part).
#   3. In that root (chroot): apt-get install the .deb, whose Depends come from dpkg-shlibdeps
#      and are fetched from Debian's archive; then voxrt --version, voxrt build of the installed
#      default model and voxrt transcribe of the installed sample, and a CUDA build that must say
#      that there is no CUDA backend (no plugin installed) instead of failing to start.
# Downloads a base system (~40 MB of packages) and the voxrt dependencies, and takes minutes, so
# ctest (e2e_deb_clean_root) skips it unless VOXRT_DEB_ROOT_TEST=1. Needs root and debootstrap.
set -euo pipefail
build=$(realpath "${1:?usage: test-deb-clean-root.sh BUILD_DIR}")
skip() { echo "SKIP: $*"; exit 77; }
[ "${VOXRT_DEB_ROOT_TEST:-0}" = 1 ] || skip "set VOXRT_DEB_ROOT_TEST=1 to run it (it downloads a Debian 12 base system)"
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot)"
command -v debootstrap > /dev/null || skip "debootstrap is not installed (scripts/install-deps.sh)"
work=$(mktemp -d)
root=${VOXRT_DEB_ROOT:-$work/root}
mounted=0
cleanup() {
  [ $mounted = 1 ] && umount "$root/proc" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$build" && cpack -G DEB > "$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$build"/voxrt_*.deb | head -1)
echo "package: $deb"
echo "Depends: $(dpkg-deb --field "$deb" Depends)"
if [ ! -x "$root/usr/bin/apt-get" ]; then
  mkdir -p "$root"
  start=$(date +%s)
  debootstrap --variant=minbase bookworm "$root" > "$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; exit 1; }
  echo "debootstrap: $(( $(date +%s) - start )) s"
fi
mount -t proc proc "$root/proc" 2>/dev/null && mounted=1
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
start=$(date +%s)
in_root apt-get update > "$work/apt.log" 2>&1 &&
  in_root apt-get install -y "/tmp/$(basename "$deb")" >> "$work/apt.log" 2>&1 ||
  { tail -30 "$work/apt.log"; exit 1; }
echo "apt-get install: $(( $(date +%s) - start )) s"
in_root voxrt --version
in_root voxrt build --onnx /usr/share/voxrt/models/default/model.onnx --engine /tmp/default.engine \
  --no-autotune > /dev/null
text=$(in_root voxrt transcribe --engine /tmp/default.engine /usr/share/voxrt/samples/play_music.wav 2>/dev/null)
echo "transcript: $text"
grep -q "play some music" <<<"$text" || { echo "FAIL: transcript"; exit 1; }
if in_root voxrt build --onnx /usr/share/voxrt/models/default/model.onnx --engine /tmp/gpu.engine \
     --device cuda > /dev/null 2> "$work/cuda.err"; then
  echo "FAIL: a CUDA build succeeded without the plugin"; exit 1
fi
grep -q "no CUDA backend" "$work/cuda.err" || { cat "$work/cuda.err"; echo "FAIL: the CUDA message"; exit 1; }
echo "without the plugin: $(head -1 "$work/cuda.err")"
echo PASS
