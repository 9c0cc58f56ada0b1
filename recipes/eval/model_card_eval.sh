#!/usr/bin/env bash
# Every number of models/default/MODEL_CARD.md's tables, measured in one run and printed as the
# card's markdown: the bundled model (models/default/model.onnx + model.metadata.txt, compiled
# for this machine's CPU) through `voxrt transcribe`, greedy and with the 3-gram LM (the bundle's
# tuned beam settings), its PyTorch checkpoint (source.txt names it) and Debian's pocketsphinx,
# all on the same audio in the same run (recipes/eval/compare.py):
#   - the held-out synthetic set, clean and 20/10/5 dB SNR (150 commands + 50 WordNet sentences
#     in held-out voices, recipes/README.md "Held-out test split");
#   - 2 continuous streams of held-out commands against the same utterances cut apart (--vad
#     off), and 10 through the CLI's default energy VAD;
#   - the human clips of pocketsphinx-testdata (cards, librivox; recipes/eval/real_speech.py).
#   bash recipes/eval/model_card_eval.sh      (about 25 minutes on 2 busy cores)
# DATA (default /tmp/v2) holds the audio and the LM; what is missing there is made with the
# commands of recipes/README.md (the same seeds, so the same clips). WORK (default
# /tmp/voxrt_card) gets the engine, each system's hypotheses and the JSON reports.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
py=${PY:-/usr/bin/python3}
voxrt=${VOXRT:-build/bin/voxrt}
data=${DATA:-/tmp/v2}
work=${WORK:-/tmp/voxrt_card}
model=models/default/model.onnx
checkpoint=$(sed -n 's/^checkpoint=//p' models/default/source.txt)
for needed in "$voxrt" "$model" "$checkpoint/checkpoint.json" /usr/bin/pocketsphinx_continuous; do
  [ -e "$needed" ] || { echo "model_card_eval: expected $needed, found nothing" >&2; exit 1; }
done
mkdir -p "$data" "$work"

# The held-out audio and the LM (recipes/README.md; skipped when already there).
if [ ! -f "$data/test/snr5/manifest.tsv" ] || [ ! -f "$data/streams/manifest.tsv" ]; then
  "$py" recipes/data/text_gen.py --count 80000 --seed 1 >"$data/commands_seed1.txt"
  "$py" recipes/data/text_gen.py --count 400 --seed 1001 --exclude "$data/commands_seed1.txt" |
    head -150 >"$data/test_commands.txt"
  "$py" recipes/data/debian_text.py --split test | head -50 | cat "$data/test_commands.txt" - >"$data/test.txt"
  nice -n 5 "$py" recipes/data/synth.py --text "$data/test.txt" --out "$data/test" --mode test \
    --jobs 2 --seed 1001
  nice -n 5 "$py" recipes/data/synth.py --text "$data/test_commands.txt" --out "$data/streams" \
    --mode streams --manifest "$data/test/clean/manifest.tsv" --streams 2 --seed 1001
fi
if [ ! -f "$data/lm.arpa" ]; then
  [ -f "$data/commands_seed1.txt" ] ||
    "$py" recipes/data/text_gen.py --count 80000 --seed 1 >"$data/commands_seed1.txt"
  "$py" recipes/data/debian_text.py --split train | cat "$data/commands_seed1.txt" - >"$data/lm_text.txt"
  "$py" recipes/lm/make_arpa.py --text "$data/lm_text.txt" --order 3 --out "$data/lm.arpa"
fi

# The engine a user gets from the bundle (model.metadata.txt is read beside model.onnx).
"$voxrt" build --onnx "$model" --engine "$work/default.engine" \
  --profile features:1x4x80/8x32x80/64x32x80 >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; exit 1; }
"$py" -c "import sys; sys.path.insert(0, 'recipes/eval'); import real_speech; real_speech.pocketsphinx_manifests('$work/real')"

started=$(date -u +%FT%TZ)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# --beam-args "": the LM column decodes with the bundle's own voxrt.decoding.* settings.
nice -n 5 "$py" recipes/eval/compare.py --voxrt "$voxrt" --checkpoint "$checkpoint" \
  --engine "$work/default.engine" --lm "$data/lm.arpa" --beam-args "" \
  --manifest "clean=$data/test/clean/manifest.tsv" --manifest "snr20=$data/test/snr20/manifest.tsv" \
  --manifest "snr10=$data/test/snr10/manifest.tsv" --manifest "snr5=$data/test/snr5/manifest.tsv" \
  --manifest "streams=$data/streams/manifest.tsv" --cut-apart streams=clean \
  --hyp-dir "$work/hyp" --json "$work/synthetic.json" --markdown "$work/synthetic.md" \
  -- --vad off >"$work/synthetic.log" 2>&1 || { tail -20 "$work/synthetic.log" >&2; exit 1; }
nice -n 5 "$py" recipes/eval/compare.py --voxrt "$voxrt" --checkpoint "$checkpoint" \
  --engine "$work/default.engine" --lm "$data/lm.arpa" --beam-args "" \
  --manifest "cards=$work/real/cards.tsv" --manifest "librivox=$work/real/librivox.tsv" \
  --hyp-dir "$work/hyp" --json "$work/real.json" --markdown "$work/real.md" \
  -- --vad off >"$work/real.log" 2>&1 || { tail -20 "$work/real.log" >&2; exit 1; }

# The stream goal as a user meets it: 10 continuous streams (the 150 held-out commands in new
# orders and pauses for each pass, synth.py --streams 10; the first 2 are the streams above)
# through the CLI's default energy VAD, engine greedy and with the LM, against the same
# utterances cut apart (decoded with the same VAD). 2 streams are too few to tell a stream effect
# from chance (one stream is 20-30 errors).
if [ ! -f "$data/streams10/manifest.tsv" ]; then
  nice -n 5 "$py" recipes/data/synth.py --text "$data/test_commands.txt" --out "$data/streams10" \
    --mode streams --manifest "$data/test/clean/manifest.tsv" --streams 10 --seed 1001
fi
nice -n 5 "$py" recipes/eval/compare.py --voxrt "$voxrt" --engine "$work/default.engine" \
  --lm "$data/lm.arpa" --beam-args "" --no-pocketsphinx \
  --manifest "clean=$data/test/clean/manifest.tsv" --manifest "streams10=$data/streams10/manifest.tsv" \
  --cut-apart streams10=clean --json "$work/streams10.json" --markdown "$work/streams10.md" \
  >"$work/streams10.log" 2>&1 || { tail -20 "$work/streams10.log" >&2; exit 1; }

echo "model: $model ($(stat -c %s "$model") bytes), $(tr '\n' ' ' <models/default/source.txt)"
echo "decoding: $(grep '^voxrt.decoding' models/default/model.metadata.txt | tr '\n' ' ')"
echo "measured $started .. $(date -u +%FT%TZ) on $(nproc) cores, load $load_before -> $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Held-out synthetic set and streams (WER; pytorch = the checkpoint, greedy; engine = voxrt"
echo "transcribe --vad off, greedy; engine+lm = the same with --lm; pocketsphinx = Debian's en-us):"
cat "$work/synthetic.md"
echo
echo "10 streams through the default energy VAD (engine = voxrt transcribe, greedy; engine+lm with --lm):"
cat "$work/streams10.md"
echo
echo "Human speech, pocketsphinx-testdata:"
cat "$work/real.md"
"$py" - "$work/synthetic.json" "$work/streams10.json" "$work/real.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    print(f"\nseconds per system ({path}):", json.load(open(path))["seconds"])
PY
