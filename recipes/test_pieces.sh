#!/usr/bin/env bash
# The pieces of recipes/device_train.sh at tiny sizes on the CPU (Debian's /usr/bin/python3):
# text, training synthesis (shards + synth_stats.json), the held-out set and a stream, train.py
# in one process, in two processes over gloo (the environment torchrun sets, by hand: Debian's
# torchrun fails under Python 3.11), a resume, and evaluate.py with the stream vs cut-apart
# comparison. Fails on any error or a hung DDP run (timeout). Skips (77) without espeak-ng.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v espeak-ng >/dev/null && command -v flite >/dev/null || { echo "SKIP: no espeak-ng/flite"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
py=/usr/bin/python3
# Run from a copy of recipes/ alone, as a device call that carries only recipes/ has it: a
# recipe that reaches outside (tests/unit, once) cost a whole training call, 2026-12-07.
mkdir -p "$work/tree"
tar -C "$here/.." --exclude=recipes/checkpoints --exclude=__pycache__ -cf - recipes | tar -C "$work/tree" -xf -
here="$work/tree/recipes"
tiny=(--d-model 32 --d-ff 64 --heads 2 --layers 1 --max-batch-frames 6000 --warmup-steps 2 --log-every 2)
$py "$here/data/text_gen.py" --count 24 --seed 5 > "$work/train.txt"
$py "$here/data/text_gen.py" --count 6 --seed 1001 --exclude "$work/train.txt" > "$work/test.txt"
$py "$here/data/synth.py" --text "$work/train.txt" --out "$work/shards" --mode train --jobs 2 --shard-size 12
test -f "$work/shards/shard0001.npy" && test -f "$work/shards/DONE"
$py -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['utterances'] >= 22, s; print('synth_stats', s['audio_hours'], 'h')" "$work/shards/synth_stats.json"
$py "$here/data/synth.py" --text "$work/test.txt" --out "$work/test" --mode test --jobs 2 --seed 1001 --snr-db 10
$py "$here/data/synth.py" --text "$work/test.txt" --out "$work/streams" --mode streams \
  --manifest "$work/test/clean/manifest.tsv" --streams 1 --seed 1001
test "$(wc -l < "$work/test/snr10/manifest.tsv")" = 6
$py "$here/train/train.py" --data "$work/shards" --out "$work/ckpt1" --train-seconds 4 "${tiny[@]}" \
  --summary "$work/summary1.json"
# The ranks meet on loopback (gloo otherwise binds to whatever the host name resolves to) on a
# port the kernel has just handed out. CI once saw this step hang for the whole ctest timeout:
# train.py turns SIGTERM into "stop at the next step", which a rank stuck in a collective never
# reaches, so timeout must follow with SIGKILL, and a missing peer fails the run after 60 s.
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') WORLD_SIZE=2 GLOO_SOCKET_IFNAME=lo
pids=()
for rank in 0 1; do
  RANK=$rank LOCAL_RANK=$rank timeout --kill-after=10 120 $py "$here/train/train.py" --data "$work/shards" \
    --out "$work/ckpt2" --train-seconds 4 --collective-timeout-s 60 "${tiny[@]}" > "$work/ddp$rank.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || { cat "$work"/ddp*.log; echo "FAIL: DDP rank exited non-zero"; exit 1; }; done
unset WORLD_SIZE MASTER_ADDR MASTER_PORT GLOO_SOCKET_IFNAME
grep -h "run:" "$work/ddp0.log"
$py "$here/train/train.py" --data "$work/shards" --out "$work/ckpt3" --resume "$work/ckpt2" \
  --train-seconds 3 --max-batch-frames 6000 --warmup-steps 2 --summary "$work/summary3.json"
$py -c "
import json, sys
a = json.load(open(sys.argv[1] + '/ckpt2/checkpoint.json'))['progress']
b = json.load(open(sys.argv[1] + '/ckpt3/checkpoint.json'))['progress']
assert b['steps'] > a['steps'] and b['runs'] == a['runs'] + 1, (a, b)
print('resume: steps', a['steps'], '->', b['steps'])" "$work"
$py "$here/eval/evaluate.py" --checkpoint "$work/ckpt3" --manifest clean="$work/test/clean/manifest.tsv" \
  --manifest streams="$work/streams/manifest.tsv" --cut-apart streams=clean --json "$work/eval.json"
$py -c "import json,sys; r=json.load(open(sys.argv[1])); assert 'stream_over_cut_apart' in r['streams'], r" "$work/eval.json"
# Synthesis that cannot make a single utterance must stop the trainer at once (FAILED), not
# leave it waiting out its time box for a first shard. Two ways it happens: an exception in
# every worker (a module missing from the tree: the 2026-12-07 call) and a speech tool failing
# for every utterance (each failure is counted; ALL_FAILED_LIMIT of them and none made stops it).
cp -r "$here" "$work/broken_recipes"
printf '\n\ndef compute(*_args, **_kwargs):\n    raise RuntimeError("injected: no features")\n' \
  >> "$work/broken_recipes/train/features.py"
mkdir -p "$work/failing_tools"
for tool in espeak-ng flite; do printf '#!/bin/sh\nexit 1\n' > "$work/failing_tools/$tool"; chmod +x "$work/failing_tools/$tool"; done
$py "$here/data/text_gen.py" --count 80 --seed 6 > "$work/broken.txt"
expect_synthesis_failure() {  # NAME RECIPES_DIR EXPECTED_REASON [env...]
  local name=$1 recipes=$2 reason=$3
  shift 3
  if env "$@" $py "$recipes/data/synth.py" --text "$work/broken.txt" --out "$work/$name" \
      --mode train --jobs 2 --shard-size 12 > "$work/$name.synth.log" 2>&1; then
    echo "FAIL ($name): synth.py exited 0 although every utterance failed"; exit 1
  fi
  grep -q "$reason" "$work/$name/FAILED" || { cat "$work/$name.synth.log"; echo "FAIL ($name): no FAILED mark naming '$reason'"; exit 1; }
  local start_s=$SECONDS
  if $py "$here/train/train.py" --data "$work/$name" --out "$work/$name.ckpt" --train-seconds 300 \
      "${tiny[@]}" > "$work/$name.train.log" 2>&1; then
    echo "FAIL ($name): train.py exited 0 without shards"; exit 1
  fi
  grep -q "synthesis failed before the first one: .*$reason" "$work/$name.train.log" ||
    { cat "$work/$name.train.log"; echo "FAIL ($name): train.py did not name the synthesis failure"; exit 1; }
  [ $((SECONDS - start_s)) -lt 60 ] || { echo "FAIL ($name): train.py took $((SECONDS - start_s)) s to give up"; exit 1; }
  echo "$name: synthesis failure stops the trainer: $(tail -1 "$work/$name.train.log")"
}
expect_synthesis_failure worker_exception "$work/broken_recipes" "injected: no features"
expect_synthesis_failure failing_tools "$here" "the first 64 utterances all failed" PATH="$work/failing_tools:$PATH"
echo PASS
