#!/usr/bin/env python3
"""WER of a checkpoint (recipes/train/checkpoint.py format) on manifests of 16 kHz wavs.

A manifest is a TSV: id, wav path, reference text[, anything]. Decoding is greedy CTC on the
offline interface, which equals streaming chunk by chunk (recipes/train/test_conformer.py,
test_streaming.py), so a 5-minute stream is decoded as the engine would stream it.

    evaluate.py --checkpoint CKPT --manifest NAME=PATH [--manifest ...] [--json out.json]
                [--hyp-dir DIR] [--cut-apart streams=clean]

A stream manifest (synth.py --mode streams: its 5th column lists the utterance ids it holds)
with --cut-apart STREAMS=CLEAN also gets the WER of the same utterances decoded one by one
from the CLEAN set (`cut_apart_wer`) and the ratio stream / cut apart (the goal: <= 1.2).
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
import units as units_module  # noqa: E402
from wer import corpus_wer  # noqa: E402


def read_manifest(path, with_extra=False):
    rows = []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3:
                rows.append(tuple(fields) if with_extra else (fields[0], fields[1], fields[2]))
    return rows


def cut_apart(results, manifests, hypotheses, streams_name, clean_name):
    """WER of the utterances of the streams decoded alone, from the clean set's hypotheses."""
    paths = dict(manifests)
    ids = [i for row in read_manifest(paths[streams_name], True) if len(row) >= 5
           for i in row[4].split(",")]
    clean = {key: text for key, _, text in read_manifest(paths[clean_name])}
    pairs = [(clean[i], hypotheses[clean_name][i]) for i in ids if i in clean]
    result = corpus_wer(pairs)
    stream = results[streams_name]
    stream["cut_apart_wer"] = result["wer"]
    stream["cut_apart_utts"] = len(pairs)
    stream["stream_over_cut_apart"] = round(stream["wer"] / max(result["wer"], 1e-9), 3)
    print(f"{streams_name}: the same {len(pairs)} utterances cut apart: WER {result['wer']:.2f} %,"
          f" stream / cut apart {stream['stream_over_cut_apart']}", flush=True)


def decode_manifest(model, mean, inv_std, rows, device, units):
    hypotheses = {}
    audio_seconds = 0.0
    with torch.no_grad():
        for key, path, _ in rows:
            samples = features.read_wav_int16(path)
            audio_seconds += len(samples) / 16000.0
            feats = torch.from_numpy(features.fbank(samples)).to(device)
            feats = (feats - mean) * inv_std
            log_probs = model.offline(feats.unsqueeze(0))
            hypotheses[key] = units_module.greedy_text(log_probs[0].float().cpu(), units)
    return hypotheses, audio_seconds


def read_shards(folder, count):
    """The first `count` utterances of the training shards in folder (synth.py --mode train):
    [(id, features [frames, 80] float32, text)]. Training data has no wavs; its features are
    what the model was trained on (before SpecAugment)."""
    import glob
    import json

    import numpy as np
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "shard*.json"))):
        if ".tmp." in path:
            continue
        with open(path) as f:
            utts = json.load(f)["utts"]
        feats = np.load(path[:-5] + ".npy")
        name = os.path.basename(path)[:-5]
        for k, (offset, frames, text, _voice) in enumerate(utts):
            if len(rows) >= count:
                return rows
            rows.append((f"{name}_{k}", feats[offset:offset + frames].astype(np.float32), text))
    return rows


def decode_features(model, mean, inv_std, rows, device, units):
    hypotheses = {}
    with torch.no_grad():
        for key, feats, _ in rows:
            feats = (torch.from_numpy(feats).to(device) - mean) * inv_std
            log_probs = model.offline(feats.unsqueeze(0))
            hypotheses[key] = units_module.greedy_text(log_probs[0].float().cpu(), units)
    return hypotheses


def evaluate(checkpoint_dir, manifests, device="cpu", hyp_dir=None, all_hypotheses=None,
             shard_sets=(), shard_utts=100):
    model, info = checkpoint.load(checkpoint_dir, device)
    units = units_module.from_config(info["config"])
    mean = torch.tensor(info["mean"], device=device)
    inv_std = torch.tensor(info["inv_std"], device=device)
    results = {}
    sets = [(name, path, False) for name, path in manifests] + \
        [(name, path, True) for name, path in shard_sets]
    for name, path, is_shards in sets:
        start = time.time()
        if is_shards:
            rows = read_shards(path, shard_utts)
            hypotheses = decode_features(model, mean, inv_std, rows, device, units)
            audio_seconds = sum(len(feats) for _, feats, _ in rows) / 100.0
        else:
            rows = read_manifest(path)
            hypotheses, audio_seconds = decode_manifest(model, mean, inv_std, rows, device, units)
        result = corpus_wer([(text, hypotheses[key]) for key, _, text in rows])
        result.update(utts=len(rows), audio_s=round(audio_seconds, 1),
                      decode_s=round(time.time() - start, 1))
        results[name] = result
        if all_hypotheses is not None:
            all_hypotheses[name] = hypotheses
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
    parser.add_argument("--manifest", action="append", default=[], help="NAME=PATH")
    parser.add_argument("--shards", action="append", default=[],
                        help="NAME=DIR: training shards (features) of synth.py --mode train")
    parser.add_argument("--shard-utts", type=int, default=100,
                        help="--shards: decode the first this many utterances")
    parser.add_argument("--json")
    parser.add_argument("--hyp-dir")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cut-apart", action="append", default=[], help="STREAMS=CLEAN names")
    args = parser.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    manifests = [tuple(m.split("=", 1)) for m in args.manifest]
    hypotheses = {}
    if not manifests and not args.shards:
        parser.error("expected at least one --manifest or --shards")
    results = evaluate(args.checkpoint, manifests, args.device, args.hyp_dir, hypotheses,
                       [tuple(m.split("=", 1)) for m in args.shards], args.shard_utts)
    for pair in args.cut_apart:
        streams_name, clean_name = pair.split("=", 1)
        cut_apart(results, manifests, hypotheses, streams_name, clean_name)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
