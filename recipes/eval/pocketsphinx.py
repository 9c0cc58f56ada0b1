#!/usr/bin/env python3
"""Debian's pocketsphinx (0.8, en-us acoustic model, en-us.lm.bin trigram LM, cmudict) as the
peer: decodes wavs of a manifest (id, wav, text[, ...]) in parallel processes and scores them
with wer.py.

    pocketsphinx.py --manifest NAME=PATH [--manifest ...] [--jobs 2] [--json out.json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from multiprocessing import Pool

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wer import corpus_wer  # noqa: E402

MODEL = "/usr/share/pocketsphinx/model/en-us"


def decode(wav):
    cmd = ["pocketsphinx_continuous", "-hmm", os.path.join(MODEL, "en-us"),
           "-lm", os.path.join(MODEL, "en-us.lm.bin"),
           "-dict", os.path.join(MODEL, "cmudict-en-us.dict"), "-infile", wav, "-logfn", "/dev/null"]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    return " ".join(re.sub(r"\(\d+\)", "", out).split())


def read_manifest(path):
    with open(path) as f:
        return [tuple(line.rstrip("\n").split("\t")[:3]) for line in f if line.count("\t") >= 2]


def score(name, rows, jobs, hyp_dir=None):
    started = time.time()
    with Pool(jobs) as pool:
        hypotheses = pool.map(decode, [wav for _, wav, _ in rows], chunksize=1)
    result = corpus_wer([(text, hyp) for (_, _, text), hyp in zip(rows, hypotheses)])
    result["decode_s"] = round(time.time() - started, 1)
    if hyp_dir:
        os.makedirs(hyp_dir, exist_ok=True)
        with open(os.path.join(hyp_dir, f"{name}.pocketsphinx.tsv"), "w") as f:
            for (key, _, text), hyp in zip(rows, hypotheses):
                f.write(f"{key}\t{hyp}\t{text}\n")
    print(f"{name}: pocketsphinx WER {result['wer']:.2f} % ({result['words']} words, "
          f"{len(rows)} utts, {result['decode_s']} s)", flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--json")
    parser.add_argument("--hyp-dir")
    args = parser.parse_args()
    results = {}
    for spec in args.manifest:
        name, path = spec.split("=", 1)
        rows = read_manifest(path)[:args.limit or None]
        results[name] = score(name, rows, args.jobs, args.hyp_dir)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
