#!/usr/bin/env bash
# Latency of one stream through each interface, on the bundled sample fed in 20 ms pieces:
# C++ (voxrt transcribe, the baseline), the C API, the Python package and the live page in
# headless Chromium. Prints JSON lines and a markdown table (bench/interfaces/README.md).
#   bash bench/interfaces/run.sh [RUNS]        (after building voxrt voxrt_c_latency _voxrt)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
runs=${1:-10}
clip=$root/samples/play_music.wav
engine=$build/default.engine
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ ! -f "$engine" ]; then
  # The engine scripts/run-default.sh builds (autotuned, two profiles).
  "$build/bin/voxrt" build --onnx "$root/models/default/model.onnx" --engine "$engine" \
    --timing-cache "$build/cpu.cache" \
    --profile features:1x4x80/1x32x80/1x32x80 --profile features:2x4x80/8x32x80/64x32x80 >&2
fi
{
  # C++: the CLI reports each run's per-20-ms-chunk latency (accept + advance) percentiles.
  for _ in $(seq "$runs"); do
    "$build/bin/voxrt" transcribe --engine "$engine" "$clip" 2>&1 >/dev/null |
      grep -o 'latency p50 [0-9.]* p95 [0-9.]* p99 [0-9.]* max [0-9.]*'
  done >"$work/cli.txt"
  /usr/bin/python3 - "$work/cli.txt" <<'PY'
import json, statistics, sys
runs = [line.split() for line in open(sys.argv[1])]
print(json.dumps({"interface": "c++ (voxrt transcribe)", "runs": len(runs),
                  "feed_ms_p50": statistics.median(float(r[2]) for r in runs),
                  "feed_ms_p95": statistics.median(float(r[4]) for r in runs),
                  "feed_ms_max": max(float(r[8]) for r in runs)}))
PY
  "$build/bin/voxrt_c_latency" "$engine" "$clip" "$runs"
  PYTHONPATH=$build/python /usr/bin/python3 "$root/bench/interfaces/python_latency.py" "$engine" "$clip" "$runs"
  node "$root/tests/web/live_page.js" --voxrt "$build/bin/voxrt" --engine "$engine" \
    --out "$work/page" --runs "$runs" | grep '^{"run"' >"$work/page.jsonl"
  /usr/bin/python3 - "$work/page.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(key):
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 3) if values else None
print(json.dumps({"interface": "page (chromium)", "runs": len(rows),
                  "feed_ms_p50": med("reply_ms_p50"), "feed_ms_p95": med("reply_ms_p95"),
                  "end_to_final_ms_p50": med("stop_to_final_ms"),
                  "end_to_final_ms_max": max(r["stop_to_final_ms"] for r in rows),
                  "speech_end_to_final_ms_p50": med("speech_end_to_final_ms"),
                  "speech_start_to_first_partial_ms_p50": med("speech_start_to_first_partial_ms"),
                  "server_first_partial_ms_p50": med("server_first_partial_ms"),
                  "server_final_ms_p50": med("server_final_ms"),
                  "texts": sorted({r["text"] for r in rows})}))
PY
} | tee "$work/all.jsonl"
/usr/bin/python3 - "$work/all.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\n| interface | 20 ms feed to result p50 / p95 / max (ms) | p50, p95 vs C++ | end of input to final p50 / max (ms) |")
print("|---|---|---|---|")
for r in rows:
    feed = " / ".join(f"{r[k]:.2f}" if r.get(k) is not None else "-" for k in ("feed_ms_p50", "feed_ms_p95", "feed_ms_max"))
    ratio = ", ".join(f"{r[k] / rows[0][k]:.2f}x" for k in ("feed_ms_p50", "feed_ms_p95"))
    end = " / ".join(f"{r[k]:.1f}" if r.get(k) is not None else "-" for k in ("end_to_final_ms_p50", "end_to_final_ms_max"))
    print(f"| {r['interface']} | {feed} | {ratio} | {end} |")
page = rows[-1]
print(f"\npage, medians over {page['runs']} runs: speech start to first partial shown "
      f"{page['speech_start_to_first_partial_ms_p50']} ms, speech end to final text shown "
      f"{page['speech_end_to_final_ms_p50']} ms; server-reported first partial "
      f"{page['server_first_partial_ms_p50']} ms, final {page['server_final_ms_p50']} ms; texts {page['texts']}")
PY
