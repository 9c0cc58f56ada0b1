#!/usr/bin/env bash
# The text of the small models' recipes (recipes/transducer, recipes/whisper):
#   split_text.sh WORK SENTENCES SEED
# writes WORK/test.txt, 400 held-out sentences (seed 1001 against the seed-1 text, so they never
# reach training), and WORK/train.txt, SENTENCES sentences of seed SEED with every test sentence
# taken out. PY names the Python (default python3).
set -euo pipefail
work=$1 sentences=$2 seed=$3
py=${PY:-python3}
text_gen="$(dirname "$0")/text_gen.py"
"$py" "$text_gen" --count 80000 --seed 1 > "$work/train_seed1.txt"
"$py" "$text_gen" --count 400 --seed 1001 --exclude "$work/train_seed1.txt" > "$work/test.txt"
"$py" "$text_gen" --count "$sentences" --seed "$seed" > "$work/train_raw.txt"
grep -vxF -f "$work/test.txt" "$work/train_raw.txt" > "$work/train.txt"
