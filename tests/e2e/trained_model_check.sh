#!/usr/bin/env bash
# Sourced by trained_transducer.sh and trained_whisper.sh, with $voxrt, $src, $model (a trained
# model's folder), $max_wer and build_args (extra `voxrt build` arguments) set: speaks 20 held-out
# sentences with held-out voices (recipes/data: seed 1001 against the seed-1 training text),
# builds the model with `voxrt build --model-dir`, requires `voxrt transcribe`'s word error rate
# on them to stay under $max_wer, and `voxrt serve` to give the CLI's text for an upload. Skips
# (exit 77) without espeak-ng/flite/sox.
for tool in espeak-ng flite sox; do
  command -v "$tool" > /dev/null || { echo "SKIP: $tool is missing"; exit 77; }
done
work=$(mktemp -d)
source "$(dirname "$0")/serve_for_test.sh"
trap 'stop_server; rm -rf "$work"' EXIT
py=/usr/bin/python3
"$voxrt" build --model-dir "$model" "${build_args[@]}" --engine "$work/bundle" --max-batch 8
"$py" "$src/recipes/data/text_gen.py" --count 80000 --seed 1 > "$work/train_seed1.txt"
"$py" "$src/recipes/data/text_gen.py" --count 20 --seed 1001 --exclude "$work/train_seed1.txt" > "$work/test.txt"
"$py" "$src/recipes/data/synth.py" --text "$work/test.txt" --out "$work/test" --mode test --jobs 2 \
  --seed 1001 --snr-db 20 > "$work/synth.log" 2>&1
manifest="$work/test/clean/manifest.tsv"
: > "$work/ref.tsv"
: > "$work/hyp.tsv"
while IFS=$'\t' read -r id wav text _; do
  hyp=$("$voxrt" transcribe --engine "$work/bundle" --json "$wav" 2>/dev/null |
    "$py" -c 'import json,sys; print(" ".join(j["text"] for j in map(json.loads, sys.stdin) if j["is_final"]))')
  printf '%s\t%s\n' "$id" "$text" >> "$work/ref.tsv"
  printf '%s\t%s\n' "$id" "$hyp" >> "$work/hyp.tsv"
  echo "$id: ref '$text' hyp '$hyp'"
done < "$manifest"
wer=$("$py" -c "
import sys
sys.path.insert(0, '$src/recipes/eval')
import wer
refs, hyps = wer.read_id_text('$work/ref.tsv'), wer.read_id_text('$work/hyp.tsv')
print(wer.corpus_wer([(refs[k], hyps.get(k, '')) for k in refs])['wer'] / 100)")
echo "WER $wer on $(wc -l < "$work/ref.tsv") held-out sentences"
"$py" -c "import sys; sys.exit(0 if $wer <= $max_wer else 1)" || { echo "FAIL: WER $wer above $max_wer"; exit 1; }

# The server gives the CLI's text for an upload of the first clip.
first_wav=$(head -1 "$manifest" | cut -f2)
first_hyp=$(head -1 "$work/hyp.tsv" | cut -f2)
start_server "$voxrt" "$work/serve.log" --engine "$work/bundle"
served=$(upload_text "$first_wav")
[ "$served" = "$first_hyp" ] || { echo "FAIL: serve gave '$served', transcribe '$first_hyp'"; exit 1; }
echo "PASS: WER $wer; serve == transcribe ('$served')"
