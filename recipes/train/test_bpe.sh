#!/usr/bin/env bash
# The pure-Python BPE encoder (bpe.py) == SentencePiece on the recipe's text: 20,000 generated
# commands (the first of the 80,000 the BPE model was trained on), 400 held-out ones, and
# WordNet's training and test sentences. Skips (77) without python3-sentencepiece or WordNet
# (scripts/install-deps.sh installs both).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
/usr/bin/python3 -c "import sentencepiece" 2>/dev/null || { echo "SKIP: no python3-sentencepiece"; exit 77; }
[ -f /usr/share/wordnet/data.noun ] || { echo "SKIP: no wordnet-base"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/../data/text_gen.py" --count 20000 --seed 1 > "$work/text.txt"
/usr/bin/python3 "$here/../data/text_gen.py" --count 400 --seed 1001 --exclude "$work/text.txt" >> "$work/text.txt"
/usr/bin/python3 "$here/../data/debian_text.py" --split train >> "$work/text.txt"
/usr/bin/python3 "$here/../data/debian_text.py" --split test >> "$work/text.txt"
/usr/bin/python3 "$here/bpe.py" check --model "$here/bpe/bpe500" --text "$work/text.txt"
