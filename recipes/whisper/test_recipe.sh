#!/usr/bin/env bash
# The Whisper recipe end to end at tiny sizes (CPU, about a minute): the BPE's and the trainer's
# self-tests; training shards of Whisper's log-mel from synth.py --features whisper read by the
# trainer, and resumed from the checkpoint folder and from its model.pt; a tiny model trained on
# the wavs of two sentences until it says them (the loss must fall), exported in optimum's
# layout, imported by `voxrt build --model-dir`, and `voxrt transcribe` must give both sentences,
# as the PyTorch greedy decode of the same checkpoint does. Fails when any step breaks; skips (77)
# without espeak-ng or sox.
#   test_recipe.sh VOXRT
set -euo pipefail
voxrt=${1:?usage: test_recipe.sh VOXRT}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
for tool in espeak-ng sox; do
  command -v "$tool" > /dev/null || { echo "SKIP: $tool is missing"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tiny=(--dim 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --ffn 64 --target-positions 40 --merges 30)

"$py" "$here/byte_bpe.py"
"$py" "$here/train_whisper.py" --self-test --out "$work/self_test"

printf 'turn on the kitchen lights\nwhat time is it\n' > "$work/text.txt"
# Shards: both sentences, clean, in one shard of two utterances.
"$py" "$src/recipes/data/synth.py" --text "$work/text.txt" --out "$work/shards" --mode train --features whisper \
  --jobs 1 --seed 3 --clean-first 2 --shard-size 2 > "$work/synth_train.log" 2>&1
"$py" "$here/train_whisper.py" --data "$work/shards" --out "$work/from_shards" "${tiny[@]}" --max-steps 2 \
  --batch-size 2 --log-every 1 --log "$work/shards.log"
grep -q "^step 2 loss .* utts 2 shards 1 " "$work/shards.log" ||
  { cat "$work/shards.log"; echo "FAIL: expected 2 steps on the 2 utterances of 1 shard"; exit 1; }
# Resumes: the folder (weights and optimizer), then its model.pt alone (weights); the steps go on.
"$py" "$here/train_whisper.py" --data "$work/shards" --out "$work/from_shards" --resume "$work/from_shards" \
  --max-steps 1 --batch-size 2 --log-every 1 --log "$work/resume.log"
"$py" "$here/train_whisper.py" --data "$work/shards" --out "$work/from_shards" \
  --resume "$work/from_shards/model.pt" --max-steps 1 --batch-size 2 --log-every 1 --log "$work/resume.log"
grep -q "^optimizer state from" "$work/resume.log" && grep -q "^step 3 loss" "$work/resume.log" &&
  grep -q "^step 4 loss" "$work/resume.log" ||
  { cat "$work/resume.log"; echo "FAIL: expected steps 3 and 4 resumed, the first with the optimizer's state"; exit 1; }

# Wavs of the same sentences (held-out voices), the model trained on them.
"$py" "$src/recipes/data/synth.py" --text "$work/text.txt" --out "$work/wavs" --mode test --snr-db "" \
  --jobs 1 --seed 3 > "$work/synth_test.log" 2>&1
manifest="$work/wavs/clean/manifest.tsv"
"$py" "$here/train_whisper.py" --manifest "$manifest" --out "$work/ckpt" "${tiny[@]}" --batch-size 2 \
  --lr 5e-3 --warmup-steps 10 --max-steps "${STEPS:-100}" --train-seconds 300 --decay-fraction 0 \
  --log-every 10 --log "$work/train.log" --export "$work/model"
cat "$work/train.log"
"$py" - "$work/train.log" << 'EOF'
import re, sys
losses = [float(m) for m in re.findall(r"^step \d+ loss ([0-9.]+)", open(sys.argv[1]).read(), re.M)]
if len(losses) < 2 or not losses[-1] < 0.25 * losses[0]:
    sys.exit(f"FAIL: expected the loss to fall below a quarter of its first value, found {losses}")
EOF

"$voxrt" build --model-dir "$work/model" --language en --engine "$work/bundle" --max-batch 2
"$py" "$here/train_whisper.py" --out "$work/ckpt" --decode "$manifest" > "$work/torch.jsonl"
status=0
while IFS=$'\t' read -r id wav text _; do
  hyp=$("$voxrt" transcribe --engine "$work/bundle" --json "$wav" 2> /dev/null |
    "$py" -c 'import json,sys; print(" ".join(j["text"] for j in map(json.loads, sys.stdin) if j["is_final"]))')
  torch_hyp=$("$py" -c 'import json,sys; print({j["id"]: j["hyp"] for j in map(json.loads, open(sys.argv[1]))}[sys.argv[2]])' \
    "$work/torch.jsonl" "$id")
  echo "$id: text '$text' voxrt '$hyp' pytorch '$torch_hyp'"
  [ "$hyp" = "$torch_hyp" ] || { echo "FAIL: voxrt and PyTorch differ on $id"; status=1; }
  [ "$hyp" = "$text" ] || { echo "FAIL: $id is not its training text"; status=1; }
done < "$manifest"
[ "$status" = 0 ] && echo "PASS: trained, exported, built; voxrt == PyTorch == the text"
exit "$status"
