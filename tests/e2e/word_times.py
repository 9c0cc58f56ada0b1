#!/usr/bin/env python3
"""Word times against measured speech onsets: each clip of a long_stream_set.py folder holds one
sentence with silence around it, so its speech onset and offset can be measured from the audio
(the first and last 10 ms frame within 35 dB of the clip's loudest). The first word's start and
the last word's end that `voxrt transcribe --json` reports are compared with them.

  word_times.py --voxrt build/bin/voxrt --engine E --set DIR [--max-median-ms 60] [--json]

Prints the median and spread of (reported - measured) for starts and ends, in ms. With
--max-median-ms it fails (exit 1) when either median is further than that from 0. Needs numpy.
"""
import argparse
import json
import subprocess
import sys
import wave

import numpy as np

FRAME_S = 0.010


def measured_speech(path, below_peak_db=35.0):
    with wave.open(path) as f:
        rate = f.getframerate()
        samples = np.frombuffer(f.readframes(f.getnframes()), dtype=np.int16).astype(np.float64)
    frame = int(rate * FRAME_S)
    frames = samples[:len(samples) // frame * frame].reshape(-1, frame)
    energy_db = 10 * np.log10(np.mean(frames ** 2, axis=1) + 1e-9)
    loud = np.nonzero(energy_db >= energy_db.max() - below_peak_db)[0]
    return loud[0] * FRAME_S, (loud[-1] + 1) * FRAME_S


def reported_words(voxrt, engine, paths, extra):
    done = subprocess.run([voxrt, "transcribe", "--engine", engine, "--json", *extra, *paths],
                          check=True, capture_output=True, text=True)
    words = {path: [] for path in paths}
    for line in done.stdout.splitlines():
        result = json.loads(line)
        if result["is_final"]:
            words[result["file"]].extend(result["words"])
    return words


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--voxrt", required=True)
    parser.add_argument("--engine", required=True)
    parser.add_argument("--set", required=True, help="a long_stream_set.py folder")
    parser.add_argument("--max-median-ms", type=float)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    paths = [line.split("\t")[0] for line in open(args.set + "/clips.tsv")]
    words = reported_words(args.voxrt, args.engine, paths, extra)
    start_errors, end_errors = [], []
    for path in paths:
        if not words[path]:
            continue
        onset, offset = measured_speech(path)
        start_errors.append(words[path][0]["start"] - onset)
        end_errors.append(words[path][-1]["end"] - offset)
    report = {"clips": len(paths), "with_words": len(start_errors)}
    for name, errors in (("start", start_errors), ("end", end_errors)):
        ms = np.array(errors) * 1000
        report[name] = {"median_ms": round(float(np.median(ms)), 1),
                        "p10_ms": round(float(np.percentile(ms, 10)), 1),
                        "p90_ms": round(float(np.percentile(ms, 90)), 1)}
    if args.json:
        print(json.dumps(report))
    else:
        for name in ("start", "end"):
            r = report[name]
            print(f"word {name}s - measured speech {name}s over {report['with_words']} clips: "
                  f"median {r['median_ms']:+.0f} ms (p10 {r['p10_ms']:+.0f}, p90 {r['p90_ms']:+.0f})")
    if args.max_median_ms is not None:
        worst = max(abs(report["start"]["median_ms"]), abs(report["end"]["median_ms"]))
        if worst > args.max_median_ms:
            print(f"FAIL: a median error of {worst:.0f} ms is beyond {args.max_median_ms:.0f} ms")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
