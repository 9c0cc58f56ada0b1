#!/usr/bin/env python3
"""WER of a checkpoint (recipes/train/checkpoint.py format) on manifests of 16 kHz wavs.

A manifest is a TSV: id, wav path, reference text[, anything]. Decoding is greedy CTC on the
offline interface (which equals streaming, see recipes/train/test_streaming.py).

    evaluate.py --checkpoint CKPT --manifest NAME=PATH [--manifest ...] [--json out.json]
                [--hyp-dir DIR]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "train"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import checkpoint  # noqa: E402
import features  # noqa: E402
from model import greedy_decode  # noqa: E402
from wer import corpus_wer  # noqa: E402


def read_manifest(path):
    rows = []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3:
                rows.append((fields[0], fields[1], fields[2]))
    return rows


def decode_manifest(model, mean, inv_std, rows, device):
    hypotheses = {}
    audio_seconds = 0.0
    with torch.no_grad():
        for key, path, _ in rows:
            samples = features.read_wav_int16(path)
            audio_seconds += len(samples) / 16000.0
            feats = torch.from_numpy(features.fbank(samples)).to(device)
            feats = (feats - mean) * inv_std
            log_probs = model.offline(feats.unsqueeze(0))
            hypotheses[key] = greedy_decode(log_probs[0].float().cpu())
    return hypotheses, audio_seconds


def evaluate(checkpoint_dir, manifests, device="cpu", hyp_dir=None):
    model, info = checkpoint.load(checkpoint_dir, device)
    mean = torch.tensor(info["mean"], device=device)
    inv_std = torch.tensor(info["inv_std"], device=device)
    results = {}
    for name, path in manifests:
        rows = read_manifest(path)
        start = time.time()
        hypotheses, audio_seconds = decode_manifest(model, mean, inv_std, rows, device)
        result = corpus_wer([(text, hypotheses[key]) for key, _, text in rows])
        result.update(utts=len(rows), audio_s=round(audio_seconds, 1),
                      decode_s=round(time.time() - start, 1))
        results[name] = result
        print(f"{name}: WER {result['wer']:.2f} % ({result['sub']} sub, {result['del']} del, "
              f"{result['ins']} ins / {result['words']} words, {len(rows)} utts)", flush=True)
        if hyp_dir:
            os.makedirs(hyp_dir, exist_ok=True)
            with open(os.path.join(hyp_dir, f"{name}.hyp.tsv"), "w") as f:
                for key, _, text in rows:
                    f.write(f"{key}\t{hypotheses[key]}\t{text}\n")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--manifest", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--json")
    parser.add_argument("--hyp-dir")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    manifests = [tuple(m.split("=", 1)) for m in args.manifest]
    results = evaluate(args.checkpoint, manifests, args.device, args.hyp_dir)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
