#!/usr/bin/env python3
"""Trains the default model with CTC on feature shards from recipes/data/synth.py.

Time-boxed and resumable: trains for --train-seconds (wall clock), picking up shards that
synthesis is still writing at each pass over the data, and saves the checkpoint (weights as
float16, parts under 15 MB: what a GPU run brings back) every --save-every-s and at the end.
A resume (--resume CKPT) restarts the optimiser with a short warmup: the checkpoint holds
weights, not optimiser moments (they would triple the files to bring back).

Model: --arch conformer (version 2, conformer.py, character or BPE units) or ds2 (version 1,
model.py).
Long streams: with --concat-prob P a training sample is, with probability P, 2 to
--concat-max utterances back to back (each with its own leading/trailing silence), so the model
learns to start a new command with its attention cache and convolution states full of the
previous one, as in a stream that is never reset.

Precision: bf16 autocast on GPUs that support it (fp16 with loss scaling otherwise), fp32 on the
CPU. Several GPUs: run under torchrun (DDP; every rank loads the same shards, the ranks agree on
how many, each takes every world_size-th batch, and they stop on the same step).

    train.py --data DIR --out CKPT_DIR [--resume CKPT_DIR] --train-seconds 300
    torchrun --nproc_per_node 8 train.py ...
"""
import argparse
import datetime
import glob
import json
import math
import os
import random
import signal
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoint  # noqa: E402
import units as units_module  # noqa: E402


class ShardStore:
    """All utterances of the shards loaded so far, as one flat [frames, bins] fp16 tensor."""

    def __init__(self, folder, device, max_frames, units):
        self.folder, self.device, self.max_frames, self.units = folder, device, max_frames, units
        self.loaded = []
        self.offsets, self.lengths, self.texts = [], [], []
        self.total_frames = 0
        self.flat = torch.zeros(0, 80, dtype=torch.float16, device=device)

    def ready_shards(self):
        return [p for p in sorted(glob.glob(os.path.join(self.folder, "shard*.json")))
                if ".tmp." not in p]

    def load(self, count):
        """Loads the first `count` finished shards (in name order) that are not loaded yet."""
        new = self.ready_shards()[len(self.loaded):count]
        added = []
        for path in new:
            with open(path) as f:
                utts = json.load(f)["utts"]
            feats = torch.from_numpy(np.load(path[:-5] + ".npy")).to(self.device)
            for offset, frames, text, _voice in utts:
                if frames <= self.max_frames and text.strip():
                    self.offsets.append(self.total_frames + offset)
                    self.lengths.append(frames)
                    self.texts.append(text)
            added.append(feats)
            self.total_frames += len(feats)
            self.loaded.append(path)
        if added:
            self.flat = torch.cat([self.flat] + added)
        return len(new)

    def items(self, rng, concat_prob, concat_max, max_item_frames, longest_utt_frames=None):
        """Training samples: single utterances, and with probability concat_prob groups of 2 to
        concat_max random utterances (at most max_item_frames) played back to back; only
        utterances of at most longest_utt_frames when given (the curriculum)."""
        order = [i for i, frames in enumerate(self.lengths)
                 if longest_utt_frames is None or frames <= longest_utt_frames]
        count = len(order)
        rng.shuffle(order)
        items, position = [], 0
        while position < count:
            take = 1
            if concat_prob > 0 and rng.random() < concat_prob:
                take = rng.randint(2, concat_max)
            group, frames = [], 0
            for i in order[position:position + take]:
                if group and frames + self.lengths[i] > max_item_frames:
                    break
                group.append(i)
                frames += self.lengths[i]
            position += len(group)
            items.append((tuple(group), frames))
        return items

    def batches(self, items, max_batch_frames, rng):
        """Length-sorted (with jitter) buckets of at most max_batch_frames padded frames."""
        order = sorted(range(len(items)), key=lambda k: items[k][1] + rng.random() * 50)
        batches, current, longest = [], [], 0
        for k in order:
            longest_if = max(longest, items[k][1])
            if current and longest_if * (len(current) + 1) > max_batch_frames:
                batches.append(current)
                current, longest_if = [], items[k][1]
            current.append(items[k][0])
            longest = longest_if
        if current:
            batches.append(current)
        rng.shuffle(batches)
        return batches

    def gather(self, groups):
        """groups: tuples of utterance indices -> feats [B, T, 80] (zero padded), lengths [B],
        targets (list of id tensors), text joined per group."""
        rows = []
        for group in groups:
            rows.append(torch.cat([self.flat[self.offsets[i]:self.offsets[i] + self.lengths[i]]
                                   for i in group]))
        lengths = torch.tensor([len(r) for r in rows], device=self.device)
        longest = int(lengths.max())
        feats = torch.zeros(len(rows), longest, 80, dtype=torch.float16, device=self.device)
        for b, row in enumerate(rows):
            feats[b, :len(row)] = row
        texts = [" ".join(self.texts[i] for i in group) for group in groups]
        targets = [torch.tensor(self.units.encode(t), dtype=torch.long) for t in texts]
        return feats.float(), lengths, targets


def compute_stats(store):
    flat = store.flat.double()
    mean = flat.mean(0)
    std = flat.std(0).clamp_min(1e-3)
    return mean.float(), (1.0 / std).float()


def spec_augment(feats, lengths, generator):
    """Frequency masks (2, up to 15 bins) and time masks (one per 100 frames, up to 20 frames);
    padding is zeroed (zero = the training mean after normalisation)."""
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
    valid = frame_index[None, :] < lengths[:, None]
    return feats.masked_fill(~valid[:, :, None], 0.0)


def learning_rate(schedule, elapsed_fraction, session_step, total_step, peak, warmup_steps,
                  knee_steps=0, floor=0.05):
    """Linear warmup over this session's first warmup_steps (a resumed run restarts Adam, so it
    warms up again), times
    cosine: a cosine over the run's wall clock down to floor * peak at its end;
    noam: peak until total step knee_steps (default: warmup_steps), then peak * sqrt(knee /
    step) over the total steps, so a resumed run goes on down the same curve."""
    warm = min(1.0, (session_step + 1) / warmup_steps)
    if schedule == "noam":
        knee = knee_steps or warmup_steps
        return peak * warm * min(1.0, math.sqrt(knee / (total_step + 1)))
    cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, elapsed_fraction)))
    return peak * warm * (floor + (1 - floor) * cosine)


def curriculum_frames(args, step):
    """The longest utterance (feature frames) a pass starting at this total step may use: short
    utterances first, the limit rising linearly from --curriculum-start-frames to
    --max-utt-frames over --curriculum-steps; None (no limit) after that or without a
    curriculum. CTC leaves its blank plateau sooner on short utterances, whose alignments
    leave the fewest choices."""
    if args.curriculum_steps <= 0 or step >= args.curriculum_steps:
        return None
    fraction = step / args.curriculum_steps
    return int(args.curriculum_start_frames +
               (args.max_utt_frames - args.curriculum_start_frames) * fraction)


def input_dependence(forward, feats, lengths):
    """How much the output depends on the audio: the mean total-variation distance between the
    posteriors of the batch and those of the same model on all-zero features (the training
    mean), over the real frames, without dropout. 0 means the model ignores its input (a
    collapsed encoder that only emits its blank/unit prior: run 1's model gave 1e-6), near 1
    that the audio decides every frame."""
    model = forward.model
    with torch.no_grad():
        was_training = model.training
        model.eval()
        posteriors = forward(feats, lengths).float().exp()
        reference = forward(torch.zeros_like(feats), lengths).float().exp()
        model.train(was_training)
        out_lengths = (lengths + model.subsampling - 1) // model.subsampling
        valid = torch.arange(reference.shape[1], device=feats.device)[None, :] < out_lengths[:, None]
        distance = 0.5 * (posteriors - reference).abs().sum(-1)
        return float(distance[valid].mean())


class OfflineForward(nn.Module):
    """The training forward (whole utterances, padding masked) as forward(), so DDP can wrap it."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, feats, lengths):
        if hasattr(self.model, "chunk_feature_frames"):  # the Conformer masks padding itself
            return self.model.offline(feats, lengths)
        return self.model.offline(feats)


class Distributed:
    """World size 1 without torchrun; DDP over NCCL (GPUs) or gloo (CPU) under torchrun."""

    def __init__(self, collective_timeout_s):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        if self.device == "cuda":
            torch.cuda.set_device(self.local_rank)
            self.device = f"cuda:{self.local_rank}"
        if self.world > 1:
            # A rank that never arrives (a lost peer, a port taken by another process) must end
            # the run with an error, not hold the others in a collective for the default 30 min.
            dist.init_process_group("nccl" if self.device.startswith("cuda") else "gloo",
                                    timeout=datetime.timedelta(seconds=collective_timeout_s))

    @property
    def main(self):
        return self.rank == 0

    def reduce(self, value, op="sum"):
        if self.world == 1:
            return value
        tensor = torch.tensor([float(value)], dtype=torch.float64,
                              device=self.device if self.device.startswith("cuda") else "cpu")
        dist.all_reduce(tensor, op={"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX,
                                    "min": dist.ReduceOp.MIN}[op])
        return tensor.item()

    def barrier(self):
        if self.world > 1:
            dist.barrier()

    def close(self):
        if self.world > 1:
            dist.destroy_process_group()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--resume")
    parser.add_argument("--train-seconds", type=float, required=True)
    parser.add_argument("--max-steps", type=int, default=0,
                        help="stop after this many steps of this run too (0: the clock only)")
    parser.add_argument("--save-every-s", type=float, default=90)
    parser.add_argument("--max-batch-frames", type=int, default=60000)
    parser.add_argument("--max-utt-frames", type=int, default=1500)
    parser.add_argument("--concat-prob", type=float, default=0.3)
    parser.add_argument("--concat-max", type=int, default=4)
    parser.add_argument("--max-item-frames", type=int, default=4000)
    parser.add_argument("--lr", type=float, default=1.5e-3, help="the peak learning rate")
    parser.add_argument("--warmup-steps", type=int, default=600,
                        help="linear warmup over this run's first steps (a resume warms up too)")
    parser.add_argument("--schedule", choices=["cosine", "noam"], default="noam")
    parser.add_argument("--knee-steps", type=int, default=1500,
                        help="noam: the total step where the decay starts (0: --warmup-steps)")
    parser.add_argument("--betas", default="0.9,0.98", help="Adam's beta1,beta2")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--concat-after-steps", type=int, default=2000,
                        help="back-to-back samples only from this (total) step on")
    parser.add_argument("--specaug-after-steps", type=int, default=1000,
                        help="SpecAugment only from this (total) step on")
    parser.add_argument("--curriculum-steps", type=int, default=1000,
                        help="short utterances first: the length limit rises over these steps")
    parser.add_argument("--curriculum-start-frames", type=int, default=400)
    parser.add_argument("--arch", choices=["conformer", "ds2"], default="conformer")
    parser.add_argument("--units", default="char",
                        help="conformer: char or bpe:NAME (ds2: char). Characters by default: "
                             "from scratch a 29-unit CTC head leaves the blank plateau in far "
                             "fewer steps than BPE 500 (recipes/README.md, test_plateau.py)")
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--conv-kernel", type=int, default=15)
    parser.add_argument("--left-frames", type=int, default=32)
    parser.add_argument("--norm", choices=["block", "pre"], default="pre",
                        help="conformer: a LayerNorm closing every block, or pre-norm blocks")
    parser.add_argument("--hidden", type=int, default=512, help="ds2 only")
    parser.add_argument("--min-shards", type=int, default=1, help="wait for this many shards")
    parser.add_argument("--wait-seconds", type=float, default=600)
    parser.add_argument("--collective-timeout-s", type=float, default=900,
                        help="DDP: a collective (or the start) that waits longer fails the run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log", default=None)
    parser.add_argument("--log-every", type=int, default=100, help="steps between loss lines")
    parser.add_argument("--summary", default=None, help="write this run's summary JSON here")
    return parser.parse_args(argv)


def new_config(args):
    if args.arch == "ds2":
        return {"arch": "ds2", "units": "char", "hidden": args.hidden, "layers": args.layers}
    return {"arch": "conformer", "units": args.units, "d_model": args.d_model, "d_ff": args.d_ff,
            "heads": args.heads, "layers": args.layers, "conv_kernel": args.conv_kernel,
            "left_frames": args.left_frames, "norm": args.norm}


def main():
    args = parse_args()
    start_time = time.time()
    # SIGTERM (recipes/device_train.sh's watchdog) ends training at the next step with a save.
    stop_requested = []
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.append(True))
    world = Distributed(args.collective_timeout_s)
    device = world.device
    if device.startswith("cuda"):
        # The CPUs belong to synthesis (recipes/device_train.sh runs it beside training).
        torch.set_num_threads(2)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)  # the same on every rank: the same batches everywhere
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed * 1000 + world.rank)
    log_file = open(args.log, "a") if args.log and world.main else None

    def log(message):
        if not world.main:
            return
        line = f"[{time.time() - start_time:7.1f}s] {message}"
        print(line, flush=True)
        if log_file:
            log_file.write(line + "\n")
            log_file.flush()

    if args.resume:
        info = checkpoint.load_info(args.resume)
        config = info["config"]
    else:
        config = new_config(args)
    units = units_module.from_config(config)
    store = ShardStore(args.data, device, args.max_utt_frames, units)

    def agreed_shards():
        return int(world.reduce(len(store.ready_shards()), "min"))

    def still_waiting():
        """Every rank decides together (one all-reduce), so none leaves the loop alone."""
        ready = (len(store.ready_shards()) >= args.min_shards or
                 os.path.exists(os.path.join(args.data, "DONE")))
        return bool(world.reduce(not ready, "max"))

    def synthesis_failure():
        """synth.py writes FAILED (with its error) when no shard will ever come."""
        try:
            with open(os.path.join(args.data, "FAILED")) as f:
                return f.read().strip() or "no reason given"
        except OSError:
            return None

    # Wait for the first shards (synthesis writes DONE when it has finished early).
    while still_waiting():
        time.sleep(2)
        failure = synthesis_failure()
        if world.reduce(failure is not None, "max"):
            sys.exit(f"expected training shards in {args.data}; synthesis failed before the first "
                     f"one: {failure}")
        if world.reduce(time.time() - start_time > args.wait_seconds or bool(stop_requested),
                        "max"):
            sys.exit(f"fewer than {args.min_shards} shards appeared in {args.data}")
    store.load(agreed_shards())
    if args.resume:
        model, info = checkpoint.load(args.resume, device)
        model.train()
        mean = torch.tensor(info["mean"], device=device)
        inv_std = torch.tensor(info["inv_std"], device=device)
        progress = info["progress"]
        log(f"resumed from {args.resume}: {progress}")
    else:
        model = checkpoint.build_model(config).to(device)
        mean, inv_std = compute_stats(store)
        progress = {"steps": 0, "train_seconds": 0.0, "utterances_seen": 0, "audio_hours_seen": 0.0,
                    "runs": 0}
    progress["runs"] = progress.get("runs", 0) + 1
    if device.startswith("cuda"):
        log(f"gpu {torch.cuda.get_device_name(device)} x {world.world}, torch {torch.__version__}")
    log(f"device {device}, {config}, params {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M,"
        f" shards {len(store.loaded)}, utts {len(store.lengths)}")
    plain = OfflineForward(model)
    trained = plain
    if world.world > 1:
        trained = nn.parallel.DistributedDataParallel(
            plain, device_ids=[world.local_rank] if device.startswith("cuda") else None)
    betas = tuple(float(b) for b in args.betas.split(","))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=betas,
                                  weight_decay=args.weight_decay)
    use_cuda = device.startswith("cuda")
    amp_dtype = torch.bfloat16 if not use_cuda or torch.cuda.is_bf16_supported() else torch.float16
    scaler_enabled = use_cuda and amp_dtype == torch.float16
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", enabled=scaler_enabled)
    else:  # torch 1.13
        scaler = torch.cuda.amp.GradScaler(enabled=scaler_enabled)
    ctc = nn.CTCLoss(blank=units.blank_id, reduction="sum", zero_infinity=True)
    session_steps, last_save, epoch = 0, time.time(), 0
    train_start = time.time()
    initial = dict(progress)
    run = {"started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "machine": (torch.cuda.get_device_name(device) if use_cuda else "cpu") +
           f" x {world.world}", "steps": 0, "audio_hours": 0.0, "losses": [],
           "input_dependence": []}

    def save():
        progress["train_seconds"] = initial["train_seconds"] + time.time() - train_start
        if world.main:
            checkpoint.save(args.out, model, config, mean.tolist(), inv_std.tolist(), progress,
                            half=True)
            log(f"saved {args.out}: {progress}")
        world.barrier()

    done = False
    loss_sum, loss_tokens, skipped = 0.0, 0, 0
    while not done:
        added = store.load(agreed_shards())
        epoch += 1
        concat = config["arch"] == "conformer" and progress["steps"] >= args.concat_after_steps
        items = store.items(rng, args.concat_prob if concat else 0.0, args.concat_max,
                            args.max_item_frames, curriculum_frames(args, progress["steps"]))
        batches = store.batches(items, args.max_batch_frames, rng)
        per_rank = len(batches) // world.world
        batches = batches[world.rank * per_rank:(world.rank + 1) * per_rank]
        longest = curriculum_frames(args, progress["steps"])
        log(f"pass {epoch}: {len(store.lengths)} utts ({store.total_frames / 360000:.2f} h, "
            f"+{added} shards), {per_rank} batches per rank"
            f"{f', utterances up to {longest} frames' if longest else ''}"
            f"{', back to back' if concat and args.concat_prob > 0 else ''}")
        if per_rank == 0:
            time.sleep(1)
            done = bool(world.reduce(bool(stop_requested) or
                                     time.time() - train_start > args.train_seconds, "max"))
        for groups in batches:
            elapsed = time.time() - train_start
            out_of_steps = bool(args.max_steps) and session_steps >= args.max_steps
            if world.reduce(elapsed > args.train_seconds or out_of_steps or bool(stop_requested),
                            "max"):
                done = True
                break
            feats, lengths, targets = store.gather(groups)
            feats = (feats - mean) * inv_std
            if progress["steps"] >= args.specaug_after_steps:
                feats = spec_augment(feats, lengths, generator)
            lr = learning_rate(args.schedule, elapsed / args.train_seconds, session_steps,
                               progress["steps"], args.lr, args.warmup_steps, args.knee_steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            with torch.autocast(device_type="cuda" if use_cuda else "cpu", dtype=amp_dtype,
                                enabled=use_cuda):
                log_probs = trained(feats, lengths)
            out_lengths = (lengths + model.subsampling - 1) // model.subsampling
            target_lengths = torch.tensor([len(t) for t in targets], device=device)
            # Rows whose targets cannot align (too many units for the frames) are dropped by
            # zero_infinity; count them so a wrong subsampling or unit shows in the log.
            skipped += int((target_lengths > out_lengths).sum())
            loss = ctc(log_probs.float().transpose(0, 1), torch.cat(targets).to(device),
                       out_lengths, target_lengths)
            tokens = int(target_lengths.sum())
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss / max(tokens, 1)).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            scaler.step(optimizer)
            scaler.update()
            session_steps += 1
            hours = float(lengths.sum()) / 360000
            progress["steps"] += 1
            progress["utterances_seen"] += sum(len(g) for g in groups) * world.world
            progress["audio_hours_seen"] += hours * world.world
            run["steps"] += 1
            run["audio_hours"] += hours * world.world
            loss_sum += float(loss)
            loss_tokens += tokens
            if session_steps % args.log_every == 0:
                mean_loss = world.reduce(loss_sum) / max(world.reduce(loss_tokens), 1)
                dependence = input_dependence(plain, feats, lengths)
                run["losses"].append([progress["steps"], round(mean_loss, 4)])
                run["input_dependence"].append([progress["steps"], round(dependence, 4)])
                log(f"step {progress['steps']} lr {lr:.2e} loss/unit {mean_loss:.3f} "
                    f"input {dependence:.3f} "
                    f"batch {len(groups)}x{feats.shape[1]} hours {progress['audio_hours_seen']:.1f}"
                    f" skipped {skipped}")
                loss_sum, loss_tokens = 0.0, 0
            if world.reduce(time.time() - last_save > args.save_every_s, "max"):
                save()
                last_save = time.time()
    if world.reduce(loss_tokens):
        mean_loss = world.reduce(loss_sum) / world.reduce(loss_tokens)
        run["losses"].append([progress["steps"], round(mean_loss, 4)])
        log(f"step {progress['steps']} loss/unit {mean_loss:.3f} (last {session_steps % args.log_every} steps)")
    save()
    run["train_seconds"] = round(time.time() - train_start, 1)
    run["total_steps"] = progress["steps"]
    run["total_audio_hours"] = round(progress["audio_hours_seen"], 2)
    run["final_loss"] = run["losses"][-1][1] if run["losses"] else None
    run["data_hours"] = round(store.total_frames / 360000, 2)
    if world.main and args.summary:
        with open(args.summary, "w") as f:
            json.dump(run, f, indent=1)
    log(f"run: {run['steps']} steps, {run['audio_hours']:.1f} audio h, loss {run['final_loss']}")
    world.close()


if __name__ == "__main__":
    main()
