#!/usr/bin/env python3
"""The default model beside its peer, on the same audio in the same run: for each manifest the
WER of the PyTorch checkpoint (greedy), the compiled voxrt engine through `voxrt transcribe`
(greedy, and CTC prefix beam search with an ARPA word LM when --lm is given) and Debian's
pocketsphinx (en-us with its own trigram LM). For stream manifests (synth.py --mode streams)
each system also gets the WER of the same utterances cut apart (--cut-apart STREAMS=CLEAN) and
the ratio stream / cut apart.

    compare.py --checkpoint CKPT --engine E.engine --manifest clean=... --manifest streams=... \\
        [--cut-apart streams=clean] [--lm lm.arpa] [--no-pocketsphinx] [--limit N] \\
        [--json out.json] [--markdown out.md] [--hyp-dir DIR] [-- extra transcribe args]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import engine_wer  # noqa: E402
import evaluate  # noqa: E402
import pocketsphinx  # noqa: E402
from wer import corpus_wer  # noqa: E402

BEAM_ARGS = ["--beam", "16", "--lm-weight", "0.3", "--word-bonus", "3"]


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint")
    parser.add_argument("--engine")
    parser.add_argument("--voxrt", default="build/bin/voxrt")
    parser.add_argument("--manifest", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--cut-apart", action="append", default=[], help="STREAMS=CLEAN")
    parser.add_argument("--lm", help="ARPA LM for the engine's beam search column")
    parser.add_argument("--beam-args", default=" ".join(BEAM_ARGS))
    parser.add_argument("--no-pocketsphinx", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--limit", type=int, default=0, help="first N rows of each manifest")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--hyp-dir")
    args = parser.parse_args(argv)
    manifests = [m.split("=", 1) for m in args.manifest]
    rows = {name: evaluate.read_manifest(path, True)[:args.limit or None]
            for name, path in manifests}
    for pair in args.cut_apart:
        # The utterances of the streams must be decoded alone too, even past --limit.
        streams, clean = pair.split("=", 1)
        wanted = {i for r in rows[streams] if len(r) >= 5 for i in r[4].split(",")}
        have = {r[0] for r in rows[clean]}
        rows[clean] += [r for r in evaluate.read_manifest(dict(manifests)[clean], True)
                        if r[0] in wanted and r[0] not in have]
    # hypotheses[system][manifest] = {id: text}
    hypotheses, seconds = {}, {}
    if args.checkpoint:
        started = time.time()
        limited = []
        for name, _ in manifests:
            path = f"/tmp/voxrt_compare_{os.getpid()}_{name}.tsv"
            with open(path, "w") as f:
                f.writelines("\t".join(r) + "\n" for r in rows[name])
            limited.append((name, path))
        found = {}
        evaluate.evaluate(args.checkpoint, limited, args.device, None, found)
        hypotheses["pytorch"] = found
        seconds["pytorch"] = time.time() - started
        for _, path in limited:
            os.remove(path)
    if args.engine:
        systems = [("engine", extra)]
        if args.lm:
            systems.append(("engine+lm", extra + ["--lm", args.lm] + args.beam_args.split()))
        for system, system_args in systems:
            started = time.time()
            hypotheses[system] = {}
            for name, _ in manifests:
                by_wav = engine_wer.engine_hypotheses(args.voxrt, args.engine, rows[name],
                                                      system_args, label=f"{system} {name}")
                hypotheses[system][name] = {r[0]: by_wav.get(r[1], "") for r in rows[name]}
            seconds[system] = time.time() - started
    if not args.no_pocketsphinx:
        started = time.time()
        hypotheses["pocketsphinx"] = {}
        for name, _ in manifests:
            from multiprocessing import Pool
            with Pool(args.jobs) as pool:
                texts = pool.map(pocketsphinx.decode, [r[1] for r in rows[name]], chunksize=1)
            hypotheses["pocketsphinx"][name] = {r[0]: t for r, t in zip(rows[name], texts)}
        seconds["pocketsphinx"] = time.time() - started
    report = {"systems": list(hypotheses), "seconds": {k: round(v, 1) for k, v in seconds.items()},
              "sets": {}}
    for name, _ in manifests:
        report["sets"][name] = {}
        for system, by_set in hypotheses.items():
            result = corpus_wer([(r[2], by_set[name].get(r[0], "")) for r in rows[name]])
            report["sets"][name][system] = result
    for pair in args.cut_apart:
        streams, clean = pair.split("=", 1)
        clean_text = {r[0]: r[2] for r in evaluate.read_manifest(dict(manifests)[clean], True)}
        ids = [i for r in rows[streams] if len(r) >= 5 for i in r[4].split(",")]
        for system, by_set in hypotheses.items():
            pairs = [(clean_text[i], by_set[clean].get(i, "")) for i in ids if i in clean_text]
            result = corpus_wer(pairs)
            stream = report["sets"][streams][system]
            stream["cut_apart_wer"] = result["wer"]
            stream["cut_apart"] = {k: result[k] for k in ("sub", "del", "ins", "words")}
            stream["stream_over_cut_apart"] = round(stream["wer"] / max(result["wer"], 1e-9), 3)
    if args.hyp_dir:
        os.makedirs(args.hyp_dir, exist_ok=True)
        for system, by_set in hypotheses.items():
            for name, _ in manifests:
                with open(os.path.join(args.hyp_dir, f"{name}.{system}.tsv"), "w") as f:
                    for r in rows[name]:
                        f.write(f"{r[0]}\t{by_set[name].get(r[0], '')}\t{r[2]}\n")
    systems = list(hypotheses)
    lines = ["| set | words | " + " | ".join(systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    for name, _ in manifests:
        cells = []
        for system in systems:
            result = report["sets"][name][system]
            cell = f"{result['wer']:.1f} %"
            if "cut_apart_wer" in result:
                cell += f" (cut apart {result['cut_apart_wer']:.1f} %, x{result['stream_over_cut_apart']})"
            cells.append(cell)
        words = report["sets"][name][systems[0]]["words"] if systems else 0
        lines.append(f"| {name} | {words} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
