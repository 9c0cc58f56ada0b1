#!/usr/bin/env python3
"""Trains a small streaming Conformer transducer on the synthetic speech of recipes/data and exports it
in icefall's layout for sherpa-onnx (encoder/decoder/joiner .onnx + tokens.txt), which `voxrt build
--model-dir` imports.

The modules are those of tests/models/icefall_transducer.py (the stand-ins of icefall's streaming
Conformer, stateless decoder and joiner that voxrt's transducer tests export), so training, export and
voxrt's import share one definition. The encoder is trained as it runs: chunk by chunk with its attention
and convolution caches (T frames in, decode_chunk_len consumed per chunk), so streaming inference sees
what training saw. Units: characters as word pieces ("▁A" starts a word, "A" continues one).

Features: shards from `recipes/data/synth.py --mode train --features sherpa` (sherpa-onnx's fbank, which
voxrt computes for models in icefall's layout). Time-boxed and resumable; checkpoint files stay < 16 MB
(model.pt, optimizer.pt).

    train_transducer.py --data SHARDS --out DIR --train-seconds 300 [--resume DIR] [--export DIR]
    train_transducer.py --out DIR --export-only --export MODEL_DIR
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
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
import icefall_transducer as icefall  # noqa: E402

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ'"
PIECES = ["<blk>", "<sos/eos>", "<unk>"] + ["\u2581" + c for c in LETTERS] + list(LETTERS)
PIECE_ID = {p: i for i, p in enumerate(PIECES)}


def encode_text(text):
    ids = []
    for word in text.upper().split():
        letters = [c for c in word if c in LETTERS]
        for k, c in enumerate(letters):
            ids.append(PIECE_ID[("\u2581" if k == 0 else "") + c])
    return ids


def decode_ids(ids):
    return " ".join("".join(PIECES[i] for i in ids).replace("\u2581", " ").split())


def joiner_dim_of(config):
    """Checkpoints from before the joiner's width was a setting have the stand-ins' 48."""
    return config.get("joiner_dim", icefall.JOINER_DIM)


def make_models(config):
    encoder = icefall.ConformerEncoder(layers=config["layers"], d=config["dim"], heads=config["heads"],
                                       kernel=config["kernel"], chunk_size=config["chunk_size"],
                                       left_context=config["left_context"], joiner_dim=joiner_dim_of(config))
    decoder = icefall.Decoder(len(PIECES), dim=config["decoder_dim"], joiner_dim=joiner_dim_of(config))
    joiner = icefall.Joiner(len(PIECES), joiner_dim=joiner_dim_of(config))
    return encoder, decoder, joiner


class Shards:
    """Every utterance of the shards seen so far: features on the device, targets as piece ids."""

    def __init__(self, folder, device, max_frames):
        self.folder, self.device, self.max_frames = folder, device, max_frames
        self.loaded, self.utts = set(), []

    def refresh(self):
        new = [p for p in sorted(glob.glob(os.path.join(self.folder, "shard*.json")))
               if ".tmp." not in p and p not in self.loaded]
        for path in new:
            with open(path) as f:
                utts = json.load(f)["utts"]
            feats = torch.from_numpy(np.load(path[:-5] + ".npy")).to(self.device)
            for offset, frames, text, _voice in utts:
                target = encode_text(text)
                if frames <= self.max_frames and target and (frames + 3) // 4 >= len(target):
                    self.utts.append((feats[offset:offset + frames], target))
            self.loaded.add(path)
        return len(new)

    def batches(self, max_batch_frames, rng):
        order = sorted(range(len(self.utts)), key=lambda i: len(self.utts[i][0]) + 50 * rng.random())
        out, current, longest = [], [], 0
        for i in order:
            longest_if = max(longest, len(self.utts[i][0]))
            if current and longest_if * (len(current) + 1) > max_batch_frames:
                out.append(current)
                current, longest_if = [], len(self.utts[i][0])
            current.append(i)
            longest = longest_if
        if current:
            out.append(current)
        rng.shuffle(out)
        return out


def streaming_encode(encoder, feats, lengths):
    """feats [B, F, 80] -> encoder_out [B, n * chunk_size, J] and output lengths, chunk by chunk with the
    caches, the last frames padded with the features of silence, as voxrt's Recognizer runs it."""
    b, frames, _ = feats.shape
    shift, t = encoder.decode_chunk_len, encoder.T
    chunks = max(1, math.ceil(frames / shift))
    total = (chunks - 1) * shift + t
    pad = torch.full((b, total - frames, feats.shape[2]), icefall.SILENCE_FEATURE, device=feats.device)
    x = torch.cat([feats.float(), pad], dim=1)
    states = [s.to(feats.device) for s in encoder.init_states(b)]
    outs = []
    for i in range(chunks):
        processed = torch.full((b,), i * shift, dtype=torch.int64, device=feats.device)
        out, a, c = encoder(x[:, i * shift:i * shift + t], states[0], states[1], processed)
        states = [a, c]
        outs.append(out)
    out_lengths = torch.clamp((lengths + 3) // 4, min=1, max=chunks * encoder.chunk_size)
    # Frames past the longest utterance come from padding only.
    return torch.cat(outs, dim=1)[:, : int(out_lengths.max())], out_lengths


def decoder_sequence(decoder, targets):
    """The stateless decoder over a whole target sequence: output u sees (unit u-1, unit u) of
    [-1, blank, targets...], as the exported decoder sees the last context_size units."""
    b = targets.shape[0]
    ys = torch.cat([torch.full((b, 1), -1, device=targets.device), torch.zeros(b, 1, dtype=torch.int64,
                    device=targets.device), targets], dim=1)
    emb = decoder.embedding(ys.clamp(min=0)) * (ys >= 0).unsqueeze(-1)
    out = torch.relu(decoder.conv(emb.permute(0, 2, 1)).permute(0, 2, 1))
    return decoder.decoder_proj(out)  # [B, U + 1, J]


def rnnt_loss(logits, targets, logit_lengths, target_lengths):
    """Mean RNN-T negative log-likelihood (blank 0). torchaudio's when it has one, else the forward
    algorithm here, along anti-diagonals of the (t, u) lattice."""
    try:
        import torchaudio.functional as F
        if hasattr(F, "rnnt_loss"):
            return F.rnnt_loss(logits, targets.int(), logit_lengths.int(), target_lengths.int(), blank=0,
                               reduction="mean")
    except ImportError:
        pass
    return rnnt_loss_reference(logits, targets, logit_lengths, target_lengths)


def rnnt_loss_reference(logits, targets, logit_lengths, target_lengths):
    """Row by row over t: within a row, alpha[t, u] = logaddexp(alpha[t-1, u] + blank[t-1, u],
    alpha[t, u-1] + emit[t, u-1]) is a linear recurrence in log space, solved with a cumulative
    log-sum-exp (E = the emissions' running sum)."""
    b, t_max, u1, _ = logits.shape
    lp = logits.float().log_softmax(-1)
    blank = lp[..., 0]  # [B, T, U+1]
    emit = torch.gather(lp[:, :, :-1], 3, targets[:, None, :, None].long().expand(b, t_max, u1 - 1, 1)).squeeze(3)
    zero = torch.zeros(b, t_max, 1, device=logits.device)
    e_cum = torch.cat([zero, emit.cumsum(-1)], dim=-1)  # [B, T, U+1]: sum of emit[t, :u]
    rows = []
    first = torch.full((b, u1), -1e30, device=logits.device)
    first[:, 0] = 0.0
    carry = first
    for t in range(t_max):
        if t > 0:
            carry = rows[-1] + blank[:, t - 1]
        rows.append(e_cum[:, t] + torch.logcumsumexp(carry - e_cum[:, t], dim=-1))
    alpha = torch.stack(rows, dim=1)  # [B, T, U+1]
    idx = torch.arange(b, device=logits.device)
    t_last, u_last = logit_lengths.long() - 1, target_lengths.long()
    return -(alpha[idx, t_last, u_last] + blank[idx, t_last, u_last]).mean()


def make_ctc_head(config):
    """The auxiliary CTC output over the encoder's output (training only; not exported): a CTC loss
    beside the transducer's gives the encoder an alignment signal from the first steps, which the
    transducer loss alone takes thousands of steps to find (run 1: 733 steps, nothing but blanks)."""
    return nn.Linear(joiner_dim_of(config), len(PIECES))


def ctc_loss_per_utterance(ctc_head, enc, enc_lengths, targets, target_lengths):
    """CTC negative log-likelihood summed over each utterance and averaged over the batch, the
    same scale as rnnt_loss's (torch's "mean" would divide by the target lengths too)."""
    log_probs = ctc_head(enc).log_softmax(-1).transpose(0, 1)  # [T, B, V]
    total = nn.functional.ctc_loss(log_probs.float(), targets, enc_lengths, target_lengths, blank=0,
                                   reduction="sum", zero_infinity=True)
    return total / targets.shape[0]


def save(out, models, optimizer, config, progress, ctc_head=None):
    os.makedirs(out, exist_ok=True)
    encoder, decoder, joiner = models
    extra = {"ctc_head": ctc_head.state_dict()} if ctc_head is not None else {}
    torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict(),
                "joiner": joiner.state_dict(), "config": config, "progress": progress, **extra},
               os.path.join(out, "model.pt.tmp"))
    os.replace(os.path.join(out, "model.pt.tmp"), os.path.join(out, "model.pt"))
    # Adam's moments in fp16: the file stays under 16 MB for the recipe's sizes.
    # (state_dict() shares the live per-parameter dicts: copy them, never change them.)
    state = optimizer.state_dict()
    state["state"] = {index: {k: (v.half() if k in ("exp_avg", "exp_avg_sq") else v) for k, v in s.items()}
                      for index, s in state["state"].items()}
    torch.save(state, os.path.join(out, "optimizer.pt.tmp"))
    os.replace(os.path.join(out, "optimizer.pt.tmp"), os.path.join(out, "optimizer.pt"))


def load(folder, device):
    """The models, config and progress of a checkpoint, and its CTC head's weights (None when it
    has none)."""
    ckpt = torch.load(os.path.join(folder, "model.pt"), map_location=device)
    models = make_models(ckpt["config"])
    for module, key in zip(models, ("encoder", "decoder", "joiner")):
        module.load_state_dict(ckpt[key])
        module.to(device)
    return models, ckpt["config"], ckpt["progress"], ckpt.get("ctc_head")


def export(models, out):
    encoder, decoder, joiner = (m.cpu().eval() for m in models)
    with torch.no_grad():
        icefall.export_transducer(out, encoder, decoder, joiner, PIECES)
    print("exported the icefall layout to", out)


def self_test(out):
    torch.manual_seed(0)
    b, t, u, v = 3, 7, 4, 6
    logits = torch.randn(b, t, u + 1, v, requires_grad=True)
    targets = torch.randint(1, v, (b, u), dtype=torch.int32)
    ll, tl = torch.tensor([7, 5, 6]), torch.tensor([4, 2, 3])
    ours = rnnt_loss_reference(logits, targets, ll, tl)
    # Brute force for one short lattice: the sum over every alignment path.
    lp = logits[0].detach().log_softmax(-1)

    def paths(ti, ui):
        if ti == ll[0] - 1 and ui == tl[0]:
            return [lp[ti, ui, 0]]
        out_paths = []
        if ti < ll[0] - 1:
            out_paths += [lp[ti, ui, 0] + p for p in paths(ti + 1, ui)]
        if ui < tl[0]:
            out_paths += [lp[ti, ui, targets[0, ui]] + p for p in paths(ti, ui + 1)]
        return out_paths
    brute = -torch.logsumexp(torch.stack(paths(0, 0)), 0)
    single = rnnt_loss_reference(logits[:1], targets[:1], ll[:1], tl[:1])
    assert abs(float(single) - float(brute)) < 1e-4, (float(single), float(brute))
    try:
        import torchaudio.functional as F
        if hasattr(F, "rnnt_loss"):
            theirs = F.rnnt_loss(logits, targets, ll.int(), tl.int(), blank=0, reduction="mean")
            assert abs(float(theirs) - float(ours)) < 1e-4, (float(theirs), float(ours))
            print("loss == torchaudio's:", float(ours))
    except ImportError:
        pass
    config = {"layers": 1, "dim": 32, "heads": 4, "kernel": 3, "chunk_size": 2, "left_context": 4,
              "decoder_dim": 16}
    models = make_models(config)
    feats = torch.randn(2, 37, 80) * 3
    y = torch.tensor([encode_text("ab c"), encode_text("de f")])
    enc, enc_lengths = streaming_encode(models[0], feats, torch.tensor([37, 30]))
    logits = models[2].output_linear(torch.tanh(enc[:, :, None] + decoder_sequence(models[1], y)[:, None]))
    ctc_head = make_ctc_head(config)
    loss = rnnt_loss(logits, y, enc_lengths, torch.tensor([3, 3])) + 0.3 * ctc_loss_per_utterance(
        ctc_head, enc, enc_lengths, y, torch.tensor([3, 3]))
    loss.backward()
    assert all(p.grad is not None for m in (*models, ctc_head) for p in m.parameters()), "a parameter got no gradient"
    optimizer = torch.optim.AdamW([p for m in (*models, ctc_head) for p in m.parameters()])
    optimizer.step()
    save(out, models, optimizer, config, {"steps": 1, "seconds": 0.0}, ctc_head)
    saved_head_weight = ctc_head.weight.detach().clone()
    optimizer.step()  # training goes on after a checkpoint (its moments untouched by the save)
    reloaded_head = make_ctc_head(config)
    loaded, _, _, saved_head = load(out, "cpu")
    assert saved_head is not None, "the CTC head was not saved"
    reloaded_head.load_state_dict(saved_head)
    assert torch.equal(reloaded_head.weight, saved_head_weight), \
        "the CTC head did not round-trip"
    export(loaded, os.path.join(out, "model"))
    assert os.path.exists(os.path.join(out, "model", "joiner-epoch-99-avg-1.onnx"))
    print("self-test passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--out", required=True, help="checkpoint folder")
    parser.add_argument("--resume")
    parser.add_argument("--export", help="write the icefall layout here at the end")
    parser.add_argument("--export-only", action="store_true")
    parser.add_argument("--train-seconds", type=float, default=300)
    parser.add_argument("--save-every-s", type=float, default=60)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--dim", type=int, default=144)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kernel", type=int, default=15)
    parser.add_argument("--chunk-size", type=int, default=8, help="output frames per chunk (x 40 ms)")
    parser.add_argument("--left-context", type=int, default=32, help="output frames of attention cache")
    parser.add_argument("--decoder-dim", type=int, default=128)
    parser.add_argument("--joiner-dim", type=int, default=256,
                        help="width of the joint network (the encoder's and decoder's projections)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup-steps", type=int, default=300)
    parser.add_argument("--ctc-weight", type=float, default=0.3,
                        help="weight of the auxiliary CTC loss on the encoder's output (0: none)")
    parser.add_argument("--max-batch-frames", type=int, default=40000)
    parser.add_argument("--max-frames", type=int, default=800)
    parser.add_argument("--min-shards", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log")
    parser.add_argument("--self-test", action="store_true",
                        help="the loss against torchaudio's, one training step, an export (CPU, seconds)")
    args = parser.parse_args()
    if args.self_test:
        self_test(args.out)
        return
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.export_only:
        models, _, _, _ = load(args.out, "cpu")
        export(models, args.export)
        return
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    saved_ctc_head = None
    if args.resume:
        models, config, progress, saved_ctc_head = load(args.resume, device)
    else:
        config = {k: getattr(args, k) for k in ("layers", "dim", "heads", "kernel", "chunk_size", "left_context",
                                                 "decoder_dim", "joiner_dim")}
        models = tuple(m.to(device) for m in make_models(config))
        progress = {"steps": 0, "seconds": 0.0}
    ctc_head = make_ctc_head(config).to(device) if args.ctc_weight > 0 else None
    resume_optimizer = bool(args.resume)
    if args.resume and ctc_head is not None:
        if saved_ctc_head is None:
            # A run that adds the head cannot reuse the optimizer's state (its parameter list differs).
            print("the checkpoint has no CTC head: a new one, and fresh optimizer moments", flush=True)
            resume_optimizer = False
        else:
            ctc_head.load_state_dict(saved_ctc_head)
    params = [p for m in models for p in m.parameters()]
    print(f"{sum(p.numel() for p in params) / 1e6:.2f} M parameters on {device}; config {config}; "
          f"CTC weight {args.ctc_weight}", flush=True)
    if ctc_head is not None:
        params += list(ctc_head.parameters())
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-3)
    if resume_optimizer and os.path.exists(os.path.join(args.resume, "optimizer.pt")):
        state = torch.load(os.path.join(args.resume, "optimizer.pt"), map_location=device)
        for s in state["state"].values():
            for k in ("exp_avg", "exp_avg_sq"):
                if k in s:
                    s[k] = s[k].float()
        optimizer.load_state_dict(state)
    shards = Shards(args.data, device, args.max_frames)
    while shards.refresh() < args.min_shards and not shards.utts:
        time.sleep(5)
    log = open(args.log, "a") if args.log else sys.stdout
    start = last_save = time.time()
    encoder, decoder, joiner = models
    done = False
    while not done:
        shards.refresh()
        for batch in shards.batches(args.max_batch_frames, rng):
            if time.time() - start > args.train_seconds:
                done = True
                break
            feats = [shards.utts[i][0] for i in batch]
            targets = [shards.utts[i][1] for i in batch]
            lengths = torch.tensor([len(f) for f in feats], device=device)
            x = nn.utils.rnn.pad_sequence(feats, batch_first=True, padding_value=icefall.SILENCE_FEATURE)
            y = nn.utils.rnn.pad_sequence([torch.tensor(t) for t in targets], batch_first=True).to(device)
            target_lengths = torch.tensor([len(t) for t in targets], device=device)
            for m in models:
                m.train()
            enc, enc_lengths = streaming_encode(encoder, x, lengths)
            dec = decoder_sequence(decoder, y)
            logits = joiner.output_linear(torch.tanh(enc[:, :, None] + dec[:, None]))
            transducer_loss = rnnt_loss(logits, y, enc_lengths, target_lengths)
            loss = transducer_loss
            if ctc_head is not None:
                ctc_head.train()
                ctc = ctc_loss_per_utterance(ctc_head, enc, enc_lengths, y, target_lengths)
                loss = transducer_loss + args.ctc_weight * ctc
            step = progress["steps"] + 1
            for g in optimizer.param_groups:
                g["lr"] = args.lr * min(1.0, step / args.warmup_steps)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(params, 5.0)
            optimizer.step()
            progress["steps"] = step
            if step % 20 == 0:
                ctc_text = f" ctc {ctc.item():.3f}" if ctc_head is not None else ""
                print(f"step {step} loss {transducer_loss.item():.3f}{ctc_text} utts {len(batch)} shards {len(shards.loaded)} "
                      f"elapsed {time.time() - start:.0f}s", file=log, flush=True)
            if time.time() - last_save > args.save_every_s:
                save(args.out, models, optimizer, config, progress, ctc_head)
                last_save = time.time()
        else:
            continue
    progress["seconds"] += time.time() - start
    save(args.out, models, optimizer, config, progress, ctc_head)
    print(f"saved {args.out} after {progress['steps']} steps", flush=True)
    if args.export:
        export(models, args.export)


if __name__ == "__main__":
    main()
