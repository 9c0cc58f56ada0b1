#!/usr/bin/env python3
"""Tunes the default model's LM beam search settings (model.metadata.txt's voxrt.decoding.*) by
measurement: the engine's WER through `voxrt transcribe` on the first N utterances of a manifest
for every LM weight x word bonus of a grid at one beam width, then the best pair at other beam
widths. Prints one table row per setting and the best line (lowest WER; ties go to the narrower
beam, then to the smaller LM weight and bonus, the cheaper and less biased choice).

    tune_decoding.py --engine E.engine --lm lm.arpa --manifest clean=PATH [--limit 100] \\
        [--weights 0.2,0.3,...] [--bonuses 0,1,...] [--beams 8,16,32] [-- extra transcribe args]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import engine_wer  # noqa: E402
from wer import corpus_wer  # noqa: E402


def floats(text):
    return [float(v) for v in text.split(",") if v]


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voxrt", default="build/bin/voxrt")
    parser.add_argument("--engine", required=True)
    parser.add_argument("--lm", required=True)
    parser.add_argument("--manifest", required=True, help="NAME=PATH")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--weights", default="0.2,0.3,0.5,0.7,1.0")
    parser.add_argument("--bonuses", default="0,1,2,3,5,7,9")
    parser.add_argument("--grid-beam", type=int, default=16)
    parser.add_argument("--beams", default="8,32")
    args = parser.parse_args(argv)
    name, path = args.manifest.split("=", 1)
    rows = engine_wer.read_manifest(path)[:args.limit]
    if not rows:
        sys.exit(f"tune_decoding: expected utterances in {path}, found none")

    results = {}

    def measure(beam, weight, bonus):
        key = (beam, weight, bonus)
        if key in results:
            return results[key]
        flags = ["--lm", args.lm, "--beam", str(beam), "--lm-weight", f"{weight:g}",
                 "--word-bonus", f"{bonus:g}"]
        started = time.time()
        hyps = engine_wer.engine_hypotheses(args.voxrt, args.engine, rows, extra + flags,
                                            label=f"beam {beam} weight {weight:g} bonus {bonus:g}")
        result = corpus_wer([(text, hyps.get(wav, "")) for _, wav, text in rows])
        results[key] = result["wer"]
        print(f"| {beam} | {weight:g} | {bonus:g} | {result['wer']:.1f} % | "
              f"{time.time() - started:.0f} s |", flush=True)
        return result["wer"]

    greedy = engine_wer.engine_hypotheses(args.voxrt, args.engine, rows, extra, label="greedy")
    greedy_wer = corpus_wer([(text, greedy.get(wav, "")) for _, wav, text in rows])
    words = greedy_wer["words"]
    print(f"{name}: first {len(rows)} utterances ({words} words); greedy {greedy_wer['wer']:.1f} %")
    print("| beam | LM weight | word bonus | WER | time |\n|---|---|---|---|---|", flush=True)
    for weight in floats(args.weights):
        for bonus in floats(args.bonuses):
            measure(args.grid_beam, weight, bonus)

    def best():
        return min(results.items(), key=lambda item: (round(item[1], 6), item[0][0], item[0][1],
                                                      item[0][2]))

    (_, weight, bonus), _ = best()
    for beam in [int(v) for v in floats(args.beams)]:
        measure(beam, weight, bonus)
    (beam, weight, bonus), wer = best()
    print(f"best: beam {beam} lm_weight {weight:g} word_bonus {bonus:g}: {wer:.1f} % "
          f"(greedy {greedy_wer['wer']:.1f} %)")


if __name__ == "__main__":
    main()
