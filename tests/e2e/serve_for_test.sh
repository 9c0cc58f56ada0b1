# Sourced by the e2e scripts that run `voxrt serve`: start_server VOXRT LOG [serve args...] starts a
# server on a free port (sets server_pid and server_port, fails when it does not come up);
# stop_server ends it. The caller's EXIT trap calls stop_server too.
server_pid=
server_port=
start_server() {
  local voxrt=$1 log=$2
  shift 2
  "$voxrt" serve --port 0 "$@" > "$log" 2>&1 &
  server_pid=$!
  server_port=
  for _ in $(seq 1 100); do
    server_port=$(grep -o 'ws://127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    [ -n "$server_port" ] && return 0
    sleep 0.1
  done
  cat "$log"
  echo "FAIL: the server did not start"
  exit 1
}
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=
}
# upload_text WAV: the text the server's OpenAI-style endpoint gives for a file.
upload_text() {
  curl -sf -F "file=@$1" "http://127.0.0.1:$server_port/v1/audio/transcriptions" |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["text"])'
}
