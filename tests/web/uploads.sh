#!/usr/bin/env bash
# POST /v1/audio/transcriptions with the compressed formats users upload, made from the bundled
# sample with Debian's ffmpeg: MP4/AAC (.m4a, Safari's recordings), WebM/Opus (Chromium's and
# Firefox's), Ogg/Opus, Ogg/Vorbis, MP3, FLAC; each must come back as the sample's words. A
# damaged WebM and a video-only file are refused with a message, and the server keeps serving.
set -euo pipefail
voxrt=$1
engine=$2
src=${VOXRT_SOURCE_DIR:?}
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
trap 'echo "FAIL: uploads.sh line $LINENO (exit $?)"; cat "$work/serve.log" 2>/dev/null' ERR
command -v ffmpeg >/dev/null || { echo "FAIL: ffmpeg is missing (scripts/install-deps.sh)"; exit 1; }
sample=$src/samples/play_music.wav
"$voxrt" serve --engine "$engine" --port 0 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do
  port=$(sed -n 's/.*serving on ws:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/serve.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.log"; echo "FAIL: voxrt serve did not start"; exit 1; }

upload() {  # FILE -> the response body; the HTTP status goes to $work/status
  curl -s -o "$work/body" -w '%{http_code}' -F "file=@$1" -F model=voxrt -F response_format=json \
    "http://127.0.0.1:$port/v1/audio/transcriptions" >"$work/status"
  cat "$work/body"
}

encode() {  # NAME ARGS...: the sample through ffmpeg into $work/NAME
  local name=$1; shift
  ffmpeg -hide_banner -loglevel error -i "$sample" "$@" "$work/$name"
}
encode sample.m4a -c:a aac -b:a 64k
encode sample.webm -c:a libopus -b:a 24k
encode sample.opus -c:a libopus -b:a 24k
encode sample.ogg -c:a libvorbis -q:a 4
encode sample.mp3 -c:a libmp3lame -b:a 64k
encode sample.flac
encode stereo48k.m4a -ac 2 -ar 48000 -c:a aac -b:a 96k
failed=0
for f in sample.m4a sample.webm sample.opus sample.ogg sample.mp3 sample.flac stereo48k.m4a; do
  body=$(upload "$work/$f")
  echo "$f: $(cat "$work/status") $body"
  if [ "$(cat "$work/status")" != 200 ] || ! grep -q "play some music" <<<"$body"; then
    echo "FAIL: $f was not transcribed"; failed=1
  fi
done

# Damaged and wrong uploads: a 4xx with a message, never a crash.
head -c 3000 "$work/sample.webm" >"$work/truncated.webm"
dd if=/dev/urandom of="$work/garbage.webm" bs=1k count=20 status=none
printf '\x1a\x45\xdf\xa3' | cat - "$work/garbage.webm" >"$work/bad_header.webm"
ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc=duration=1:size=64x64:rate=5 -c:v libvpx \
  "$work/video_only.webm"
for f in truncated.webm garbage.webm bad_header.webm video_only.webm; do
  body=$(upload "$work/$f")
  echo "$f: $(cat "$work/status") $body"
  case "$(cat "$work/status")" in
    200) grep -q '"text"' <<<"$body" || { echo "FAIL: $f: 200 without a text"; failed=1; } ;;
    4??) grep -q '"error"' <<<"$body" || { echo "FAIL: $f: no error message"; failed=1; } ;;
    *) echo "FAIL: $f: status $(cat "$work/status")"; failed=1 ;;
  esac
done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { echo "FAIL: the server died"; exit 1; }
[ "$failed" = 0 ] || exit 1
echo PASS
