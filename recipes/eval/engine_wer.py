#!/usr/bin/env python3
"""WER of a voxrt engine on manifests of wavs, through the real CLI (`voxrt transcribe --json`).

The same manifests as evaluate.py (id, wav path, reference text[, ...]), so the PyTorch checkpoint
and the compiled engine are scored on the same audio with the same WER code. Files go to the CLI
in groups, which decodes each group as concurrent streams (as a server would batch them); a
file's text is its final results joined in order (endpointing may split an utterance).

  engine_wer.py --voxrt build/bin/voxrt --engine default.engine \\
      --manifest clean=/tmp/test/clean/manifest.tsv [--manifest ...] \\
      [--json out.json] [-- extra transcribe args, e.g. --lm lm.arpa --decoder beam]
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wer  # noqa: E402


def read_manifest(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3:
                rows.append((parts[0], parts[1], parts[2]))
    return rows


def transcribe(voxrt, engine, paths, extra_args):
    command = [voxrt, "transcribe", "--engine", engine, "--json", *extra_args, *paths]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:6])} ... failed ({done.returncode}):\n{done.stderr}")
    finals = {path: [] for path in paths}
    for line in done.stdout.splitlines():
        result = json.loads(line)
        if result["is_final"] and result["text"]:
            finals.setdefault(result["file"], []).append(result["text"])
    return {path: " ".join(texts) for path, texts in finals.items()}


def engine_hypotheses(voxrt, engine, rows, extra_args, group=16, label=""):
    """{wav path: text} for rows (id, wav, text), `group` files per CLI call."""
    hypotheses = {}
    for i in range(0, len(rows), group):
        chunk = rows[i:i + group]
        hypotheses.update(transcribe(voxrt, engine, [r[1] for r in chunk], extra_args))
        print(f"\r{label}: {min(i + group, len(rows))}/{len(rows)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return hypotheses


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--voxrt", default="build/bin/voxrt")
    parser.add_argument("--engine", required=True)
    parser.add_argument("--manifest", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--group", type=int, default=16, help="files decoded as concurrent streams")
    parser.add_argument("--limit", type=int, default=0, help="first N utterances only")
    parser.add_argument("--json")
    parser.add_argument("--hyp-dir", help="write NAME.hyp.tsv (id, hypothesis, reference) here")
    args = parser.parse_args(argv)
    report = {"engine": args.engine, "transcribe_args": extra, "sets": {}}
    for spec in args.manifest:
        name, path = spec.split("=", 1)
        rows = read_manifest(path)
        if args.limit:
            rows = rows[:args.limit]
        started = time.time()
        hypotheses = engine_hypotheses(args.voxrt, args.engine, rows, extra, args.group, name)
        pairs = [(text, hypotheses.get(wav, "")) for _, wav, text in rows]
        result = wer.corpus_wer(pairs)
        result["seconds"] = round(time.time() - started, 1)
        report["sets"][name] = result
        print(f"{name}: WER {result['wer']:.1f} % ({result['words']} words, sub {result['sub']}, "
              f"del {result['del']}, ins {result['ins']})")
        if args.hyp_dir:
            os.makedirs(args.hyp_dir, exist_ok=True)
            with open(os.path.join(args.hyp_dir, f"{name}.hyp.tsv"), "w", encoding="utf-8") as out:
                for (utt, wav, text), (_, hyp) in zip(rows, pairs):
                    out.write(f"{utt}\t{hyp}\t{text}\n")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)


if __name__ == "__main__":
    main()
