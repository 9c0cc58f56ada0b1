#!/usr/bin/env bash
# A continuous stream against the same utterances cut apart (issue 31): 40 synthetic sentences
# (held-out voices) joined with 0.5 s pauses must reach a WER within 1.2x of the clips decoded
# one by one (the model's state is reset at endpoints), and a 35 s stream must give the same text
# however the audio is cut (7, 10, 20, 100, 320 and 1000 ms pieces: the VAD's decisions and
# endpoints must not depend on it, nor cut a word's tail).
set -euo pipefail
voxrt=$1
src=${VOXRT_SOURCE_DIR:?}
for tool in espeak-ng flite sox; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps.sh)"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$voxrt" build --onnx "$src/models/default/model.onnx" --engine "$work/default.engine" \
  --profile features:1x4x80/8x32x80/64x32x80 --no-autotune > "$work/build.log" 2>&1 ||
  { cat "$work/build.log"; exit 1; }
/usr/bin/python3 "$src/tests/e2e/long_stream_set.py" --out "$work/wer" --count 40 --seed 1001
/usr/bin/python3 "$src/tests/e2e/long_stream_set.py" --out "$work/chunks" --count 12 --seed 7

# WER: the clips as concurrent streams, then the whole recording as one stream.
cut -f1 "$work/wer/clips.tsv" > "$work/wer/paths.txt"
xargs "$voxrt" transcribe --engine "$work/default.engine" --json < "$work/wer/paths.txt" \
  > "$work/cut.jsonl" 2> "$work/cut.err" || { cat "$work/cut.err"; exit 1; }
"$voxrt" transcribe --engine "$work/default.engine" --json "$work/wer/long.wav" \
  > "$work/long.jsonl" 2> "$work/long.err" || { cat "$work/long.err"; exit 1; }
/usr/bin/python3 - "$src/recipes/eval" "$work/wer" "$work/cut.jsonl" "$work/long.jsonl" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import wer
folder, cut_jsonl, long_jsonl = sys.argv[2:5]

def finals(path):
    texts = {}
    for line in open(path):
        result = json.loads(line)
        if result["is_final"] and result["text"]:
            texts.setdefault(result["file"], []).append(result["text"])
    return {name: " ".join(parts) for name, parts in texts.items()}

references = dict(line.rstrip("\n").split("\t")[:2] for line in open(folder + "/clips.tsv"))
cut = finals(cut_jsonl)
cut_wer = wer.corpus_wer([(text, cut.get(path, "")) for path, text in references.items()])
joined = " ".join(finals(long_jsonl).values())
long_wer = wer.corpus_wer([(open(folder + "/long.txt").read(), joined)])
print(f"cut apart: WER {cut_wer['wer']:.1f} % ({cut_wer['words']} words); "
      f"one stream: WER {long_wer['wer']:.1f} % (ratio {long_wer['wer'] / cut_wer['wer']:.3f})")
if long_wer["wer"] > 1.2 * cut_wer["wer"]:
    sys.exit("FAIL: the continuous stream's WER is more than 1.2x the clips'")
PY

# Chunking: the same text whatever the piece size.
reference=""
for ms in 20 7 10 100 320 1000; do
  text=$("$voxrt" transcribe --engine "$work/default.engine" --chunk-ms "$ms" "$work/chunks/long.wav" 2>/dev/null)
  if [ -z "$reference" ]; then
    reference=$text
    echo "20 ms pieces: $(wc -l <<<"$text") utterance(s)"
  elif [ "$text" != "$reference" ]; then
    echo "FAIL: $ms ms pieces give other text than 20 ms pieces:"
    diff <(echo "$reference") <(echo "$text") || true
    exit 1
  fi
done
echo PASS
