#!/usr/bin/env python3
"""Trains the default model (model.py) with CTC on feature shards from recipes/data/synth.py.

Time-boxed: trains for --train-seconds (wall clock), picking up shards that synthesis is still
writing at each pass over the data, and saves a checkpoint every --save-every-s and at the end.
All features live on the accelerator; batches are gathered there. Mixed precision (fp16 autocast
with loss scaling) on CUDA, fp32 on CPU.

    train.py --data DIR --out CKPT_DIR [--resume CKPT_DIR] --train-seconds 300
"""
import argparse
import glob
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoint  # noqa: E402
from model import StreamingDS2, encode_text, output_lengths  # noqa: E402


class ShardStore:
    """All utterances of the shards seen so far, as one flat [frames, bins] fp16 tensor."""

    def __init__(self, folder, device, max_frames):
        self.folder, self.device, self.max_frames = folder, device, max_frames
        self.loaded = set()
        self.chunks, self.offsets, self.lengths, self.targets = [], [], [], []
        self.total_frames = 0
        self.flat = torch.zeros(0, 80, dtype=torch.float16, device=device)

    def refresh(self):
        new = [p for p in sorted(glob.glob(os.path.join(self.folder, "shard*.json")))
               if ".tmp." not in p and p not in self.loaded]
        added = []
        for path in new:
            with open(path) as f:
                utts = json.load(f)["utts"]
            feats = torch.from_numpy(np.load(path[:-5] + ".npy")).to(self.device)
            for offset, frames, text, _voice in utts:
                target = encode_text(text)
                # CTC needs output frames >= target length plus repeats; drop what cannot align.
                if frames > self.max_frames or not target or (frames + 1) // 2 < len(target) + 2:
                    continue
                self.offsets.append(self.total_frames + offset)
                self.lengths.append(frames)
                self.targets.append(target)
            added.append(feats)
            self.total_frames += len(feats)
            self.loaded.add(path)
        if added:
            self.flat = torch.cat([self.flat] + added)
        return len(new)

    def batches(self, max_batch_frames, rng):
        order = sorted(range(len(self.lengths)), key=lambda i: self.lengths[i] + rng.random())
        batches, current, longest = [], [], 0
        for i in order:
            longest_if = max(longest, self.lengths[i])
            if current and longest_if * (len(current) + 1) > max_batch_frames:
                batches.append(current)
                current, longest_if = [], self.lengths[i]
            current.append(i)
            longest = longest_if
        if current:
            batches.append(current)
        rng.shuffle(batches)
        return batches

    def gather(self, indices):
        lengths = torch.tensor([self.lengths[i] for i in indices], device=self.device)
        offsets = torch.tensor([self.offsets[i] for i in indices], device=self.device)
        longest = int(lengths.max()) + int(lengths.max()) % 2
        steps = torch.arange(longest, device=self.device)
        index = offsets[:, None] + torch.minimum(steps[None, :], lengths[:, None] - 1)
        feats = self.flat[index].float()
        valid = steps[None, :] < lengths[:, None]
        targets = [torch.tensor(self.targets[i]) for i in indices]
        return feats, valid, lengths, targets


def compute_stats(store):
    flat = store.flat.double()
    mean = flat.mean(0)
    std = flat.std(0).clamp_min(1e-3)
    return mean.float(), (1.0 / std).float()


def spec_augment(feats, valid, generator):
    """Frequency masks (2, up to 15 bins) and time masks (one per 100 frames, up to 20 frames)."""
    batch, frames, bins = feats.shape
    device = feats.device
    bin_index = torch.arange(bins, device=device)
    for _ in range(2):
        width = torch.randint(0, 16, (batch, 1), device=device, generator=generator)
        start = (torch.rand(batch, 1, device=device, generator=generator) * (bins - width)).long()
        mask = (bin_index[None, :] >= start) & (bin_index[None, :] < start + width)
        feats = feats.masked_fill(mask[:, None, :], 0.0)
    frame_index = torch.arange(frames, device=device)
    for _ in range(max(1, frames // 100)):
        width = torch.randint(0, 21, (batch, 1), device=device, generator=generator)
        start = (torch.rand(batch, 1, device=device, generator=generator) * frames).long()
        mask = (frame_index[None, :] >= start) & (frame_index[None, :] < start + width)
        feats = feats.masked_fill(mask[:, :, None], 0.0)
    return feats.masked_fill(~valid[:, :, None], 0.0)


def learning_rate(elapsed_fraction, step, peak, warmup_steps):
    warm = min(1.0, (step + 1) / warmup_steps)
    cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, elapsed_fraction)))
    return peak * warm * (0.03 + 0.97 * cosine)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--resume")
    parser.add_argument("--train-seconds", type=float, required=True)
    parser.add_argument("--save-every-s", type=float, default=120)
    parser.add_argument("--max-batch-frames", type=int, default=60000)
    parser.add_argument("--max-utt-frames", type=int, default=1500)
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--warmup-steps", type=int, default=400)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=5)
    parser.add_argument("--min-shards", type=int, default=1, help="wait for this many shards")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log", default=None)
    args = parser.parse_args()

    start_time = time.time()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)
    log_file = open(args.log, "a") if args.log else None

    def log(message):
        line = f"[{time.time() - start_time:7.1f}s] {message}"
        print(line, flush=True)
        if log_file:
            log_file.write(line + "\n")
            log_file.flush()

    store = ShardStore(args.data, device, args.max_utt_frames)
    # Wait for the first shards (synthesis writes DONE when it has finished early).
    store.refresh()
    while len(store.loaded) < args.min_shards and not os.path.exists(
            os.path.join(args.data, "DONE")):
        time.sleep(2)
        store.refresh()
        if time.time() - start_time > 600:
            sys.exit(f"fewer than {args.min_shards} shards appeared in {args.data}")
    store.refresh()
    if args.resume:
        model, info = checkpoint.load(args.resume, device)
        model.train()
        mean = torch.tensor(info["mean"], device=device)
        inv_std = torch.tensor(info["inv_std"], device=device)
        progress = info["progress"]
        config = info["config"]
        log(f"resumed from {args.resume}: {progress}")
    else:
        config = {"hidden": args.hidden, "layers": args.layers}
        model = StreamingDS2(**config).to(device)
        mean, inv_std = compute_stats(store)
        progress = {"steps": 0, "train_seconds": 0.0, "utterances_seen": 0, "audio_hours_seen": 0.0}
    if device == "cuda":
        log(f"gpu {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    log(f"device {device}, params {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M, "
        f"shards {len(store.loaded)}, utts {len(store.lengths)}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    use_amp = device == "cuda"
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    else:  # torch 1.13
        scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    ctc = nn.CTCLoss(blank=0, reduction="mean", zero_infinity=True)
    session_steps, last_save, epoch = 0, time.time(), 0
    train_start = time.time()
    initial_train_seconds = progress["train_seconds"]

    def save():
        progress["train_seconds"] = initial_train_seconds + time.time() - train_start
        checkpoint.save(args.out, model, config, mean.tolist(), inv_std.tolist(), progress)
        log(f"saved {args.out}: {progress}")

    done = False
    while not done:
        added = store.refresh()
        epoch += 1
        batches = store.batches(args.max_batch_frames, rng)
        hours = store.total_frames / 360000
        log(f"pass {epoch}: {len(store.lengths)} utts ({hours:.2f} h, +{added} shards), "
            f"{len(batches)} batches")
        loss_sum, loss_count = 0.0, 0
        for indices in batches:
            elapsed = time.time() - train_start
            if elapsed > args.train_seconds:
                done = True
                break
            feats, valid, lengths, targets = store.gather(indices)
            feats = (feats - mean) * inv_std
            feats = spec_augment(feats, valid, generator)
            lr = learning_rate(elapsed / args.train_seconds, session_steps, args.lr,
                               args.warmup_steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
                log_probs = model.offline(feats)
            out_lengths = output_lengths(lengths)
            target_lengths = torch.tensor([len(t) for t in targets], device=device)
            loss = ctc(log_probs.float().transpose(0, 1), torch.cat(targets).to(device),
                       out_lengths, target_lengths)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            scaler.step(optimizer)
            scaler.update()
            session_steps += 1
            progress["steps"] += 1
            progress["utterances_seen"] += len(indices)
            progress["audio_hours_seen"] += float(lengths.sum()) / 360000
            loss_sum += float(loss)
            loss_count += 1
            if session_steps % 100 == 0:
                log(f"step {progress['steps']} lr {lr:.2e} loss {loss_sum / loss_count:.3f} "
                    f"batch {len(indices)}x{feats.shape[1]}")
                loss_sum, loss_count = 0.0, 0
            if time.time() - last_save > args.save_every_s:
                save()
                last_save = time.time()
        if loss_count:
            log(f"pass {epoch} end: loss {loss_sum / loss_count:.3f}")
    save()


if __name__ == "__main__":
    main()
