"""NeMo transducer exports (EncDecRNNTBPEModel, and Parakeet-TDT's token-and-duration transducer) built from code
with random weights (Debian's torch 1.13, /usr/bin/python3) in the layout sherpa-onnx's NeMo transducer export
scripts leave, and a straightforward reference decoder with NeMo's greedy rules, for voxrt's import tests
(tests/models/nemo_transducer_test.cpp).

  export DIR [--tdt] [--seed N]   encoder.onnx, decoder.onnx, joiner.onnx, tokens.txt (blank LAST), weights.pt,
                                  frontend.json
  reference DIR [--segment-hops N] [--max-symbols K] [--search greedy|beam] [--beam K] [--hotwords FILE]
                [--hotword-bonus B] WAV...
                                  one JSON line per file: {"file", "text", "ids"}: NeMo's front end
                                  (nemo_ctc.py's), the torch encoder on the whole utterance (or on consecutive
                                  segments of N hops, each its own utterance), then greedy search (or beam
                                  search: modified beam for RNN-T, voxrt's TDT beam for TDT) over the torch
                                  prediction and joint networks

The layout follows sherpa-onnx's scripts/nemo/*/export-onnx*.py and offline-transducer-nemo-model.cc (read, not
copied), which run NeMo's own exporters for the three modules:
  encoder.onnx  audio_signal [N, n_mels, T] f32, length [N] i64 -> outputs [N, D, T'], encoded_lengths [N];
                metadata vocab_size (WITHOUT the blank: NeMo's decoder.vocab_size), normalize_type,
                subsampling_factor, pred_rnn_layers, pred_hidden, model_type, version, model_author, url, comment
  decoder.onnx  targets [N, 1] i32, target_length [N] i32, states.1 (h) and onnx::Slice_3 (c) [layers, N, hidden]
                -> outputs [N, hidden, 1], prednet_lengths, states (h'), 162 (c') (NeMo's exported names)
  joiner.onnx   encoder_outputs [N, D, T], decoder_outputs [N, hidden, U] -> outputs [N, T, U, vocab + 1 (+ durations)]
  tokens.txt    "<piece> <id>", <blk> last
The modules are small stand-ins of the same shape, not NeMo's code: nemo_ctc.py's Conv2d subsampling (by 8, as
FastConformer) and Conformer block; NeMo's RNNTDecoder (an embedding whose blank row is the padding, so the blank
as input is NeMo's start-of-sequence zero vector, then an LSTM); NeMo's RNNTJoint (two projections, ReLU, a linear
layer to the token logits, followed for TDT by the duration logits).

Greedy search is NeMo's GreedyRNNTInfer / GreedyTDTInfer for one utterance, written from their rules:
  RNN-T: per encoder frame, up to max_symbols units; a blank moves to the next frame; an emitted unit updates the
         prediction network's state and last unit.
  TDT:   at frame t the joint gives a unit and a duration (argmax over each part); a unit is emitted as above; t
         advances by the duration; the inner loop at a frame goes on while the duration is 0, up to max_symbols
         (a blank with duration 0 repeats itself until then, so it advances by one frame); after max_symbols the
         frame advances by one more.
A stream's prediction state and last unit carry over from one segment to the next.
Beam search: icefall's modified beam search for RNN-T (modified_beam), voxrt's TDT beam search for TDT (tdt_beam,
the rules of src/decode/stateful_tdt_beam.h: every (unit, duration) pair scored, hypotheses at different frames).
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nemo_ctc  # noqa: E402  (its front end, subsampling and Conformer block)
from icefall_transducer import ContextGraph  # noqa: E402  (voxrt's hotword graph, written in Python)

N_MELS = nemo_ctc.N_MELS
D_MODEL = nemo_ctc.D_MODEL
PIECES = nemo_ctc.PIECES
BLANK = len(PIECES)
PRED_HIDDEN = 32
PRED_LAYERS = 2
JOINT_DIM = 48
DURATIONS = [0, 1, 2, 3, 4]  # Parakeet-TDT's
SUBSAMPLING = 8


class Encoder(nn.Module):
    """audio_signal [N, n_mels, T], length [N] -> outputs [N, D, T'], encoded_lengths [N] (NeMo's encoder export)."""

    def __init__(self):
        super().__init__()
        self.pre_encode = nemo_ctc.ConvSubsampling(SUBSAMPLING)
        self.block = nemo_ctc.ConformerBlock()

    def forward(self, audio_signal, length):
        x, lengths = self.pre_encode(audio_signal, length)
        steps = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        x = self.block(x, steps >= lengths.unsqueeze(1))
        return x.transpose(1, 2), lengths


class Decoder(nn.Module):
    """NeMo's RNNTDecoder as exported: targets [N, 1], target_length [N], h and c [layers, N, hidden]."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(BLANK + 1, PRED_HIDDEN, padding_idx=BLANK)
        self.lstm = nn.LSTM(PRED_HIDDEN, PRED_HIDDEN, PRED_LAYERS)

    def forward(self, targets, target_length, h, c):
        y = self.embed(targets.to(torch.int64)).transpose(0, 1)  # [1, N, hidden]: NeMo's LSTM is time-major
        out, (h2, c2) = self.lstm(y, (h, c))
        return out.permute(1, 2, 0), target_length, h2, c2


class Joint(nn.Module):
    def __init__(self, tdt, encoder_dim=D_MODEL):
        super().__init__()
        self.enc = nn.Linear(encoder_dim, JOINT_DIM)
        self.pred = nn.Linear(PRED_HIDDEN, JOINT_DIM)
        self.out = nn.Linear(JOINT_DIM, BLANK + 1 + (len(DURATIONS) if tdt else 0))

    def forward(self, encoder_outputs, decoder_outputs):
        f = self.enc(encoder_outputs.transpose(1, 2)).unsqueeze(2)
        g = self.pred(decoder_outputs.transpose(1, 2)).unsqueeze(1)
        return self.out(torch.relu(f + g))


def make_modules(seed, tdt):
    torch.manual_seed(seed)
    encoder, decoder, joint = Encoder(), Decoder(), Joint(tdt)
    with torch.no_grad():
        bn = encoder.block.batch_norm
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        # Random weights put most frames on one class; larger output weights and a bias that cancels the
        # common part on seeded random features (after every unit) make the greedy path alternate between blanks and several
        # units (with TDT, between several durations too).
        joint.out.weight.mul_(20.0)
        g = torch.Generator().manual_seed(1)
        feats = torch.randn(4, N_MELS, 300, generator=g)
        enc, _ = encoder.eval()(feats, torch.full((4,), 300))
        calibrate_joint(joint, decoder, enc)
    return encoder.eval(), decoder.eval(), joint.eval()


def calibrate_joint(joint, decoder, enc):
    """Sets the joint's output bias from encoder outputs enc [N, D, T] (see make_modules)."""
    with torch.no_grad():
        # The prediction network's outputs after the blank (the start) and after every unit, each frame.
        units = torch.arange(BLANK + 1, dtype=torch.int32).view(1, -1)
        dec, _, _, _ = decoder(units.t(), torch.ones(BLANK + 1, dtype=torch.int32),
                               torch.zeros(PRED_LAYERS, BLANK + 1, PRED_HIDDEN),
                               torch.zeros(PRED_LAYERS, BLANK + 1, PRED_HIDDEN))
        f = joint.enc(enc.transpose(1, 2)).unsqueeze(2)  # [4, T, 1, J]
        g = joint.pred(dec[:, :, 0]).view(1, 1, BLANK + 1, JOINT_DIM)
        hidden = torch.relu(f + g)
        common = hidden.mean(dim=(0, 1, 2))
        joint.out.bias.copy_(-(joint.out.weight @ common))
        joint.out.bias[0] = -100.0  # <unk> never wins
        # The blank wins on about 60% of those (frame, previous unit) pairs: several units per clip,
        # not one per frame.
        logits = joint.out(hidden)[..., : BLANK + 1].reshape(-1, BLANK + 1)
        margin = logits[:, :BLANK].max(dim=1).values - logits[:, BLANK]
        joint.out.bias[BLANK] += float(torch.quantile(margin, 0.6))


def frontend_config():
    return dict(nemo_ctc.FRONTEND, subsampling=SUBSAMPLING)


def export_prediction_networks(decoder, joint, out_dir):
    """decoder.onnx and joiner.onnx with NeMo's exported names and dynamic axes."""
    dec_names = ["targets", "target_length", "states.1", "onnx::Slice_3"]
    torch.onnx.export(decoder, (torch.zeros(2, 1, dtype=torch.int32), torch.ones(2, dtype=torch.int32),
                                torch.zeros(PRED_LAYERS, 2, PRED_HIDDEN), torch.zeros(PRED_LAYERS, 2, PRED_HIDDEN)),
                      os.path.join(out_dir, "decoder.onnx"), opset_version=13, input_names=dec_names,
                      output_names=["outputs", "prednet_lengths", "states", "162"],
                      dynamic_axes={"targets": {0: "targets_dynamic_axes_1"},
                                    "target_length": {0: "target_length_dynamic_axes_1"},
                                    "states.1": {1: "states.1_dynamic_axes_1"},
                                    "onnx::Slice_3": {1: "onnx::Slice_3_dynamic_axes_1"},
                                    "outputs": {0: "outputs_dynamic_axes_1"},
                                    "prednet_lengths": {0: "prednet_lengths_dynamic_axes_1"},
                                    "states": {1: "states_dynamic_axes_1"}, "162": {1: "162_dynamic_axes_1"}})
    torch.onnx.export(joint, (torch.randn(2, joint.enc.in_features, 1), torch.randn(2, PRED_HIDDEN, 1)),
                      os.path.join(out_dir, "joiner.onnx"), opset_version=13,
                      input_names=["encoder_outputs", "decoder_outputs"], output_names=["outputs"],
                      dynamic_axes={"encoder_outputs": {0: "encoder_outputs_dynamic_axes_1", 2: "encoder_outputs_dynamic_axes_2"},
                                    "decoder_outputs": {0: "decoder_outputs_dynamic_axes_1", 2: "decoder_outputs_dynamic_axes_2"},
                                    "outputs": {0: "outputs_dynamic_axes_1", 1: "outputs_dynamic_axes_2",
                                                2: "outputs_dynamic_axes_3"}})


def export(args):
    import onnx

    os.makedirs(args.dir, exist_ok=True)
    encoder, decoder, joint = make_modules(args.seed, args.tdt)
    torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict(), "joint": joint.state_dict(),
                "tdt": args.tdt, "seed": args.seed}, os.path.join(args.dir, "weights.pt"))
    with open(os.path.join(args.dir, "frontend.json"), "w") as f:
        json.dump(frontend_config(), f)
    enc_path = os.path.join(args.dir, "encoder.onnx")
    torch.onnx.export(encoder, (torch.randn(2, N_MELS, 203), torch.tensor([203, 150])), enc_path, opset_version=13,
                      input_names=["audio_signal", "length"], output_names=["outputs", "encoded_lengths"],
                      dynamic_axes={"audio_signal": {0: "audio_signal_dynamic_axes_1", 2: "audio_signal_dynamic_axes_2"},
                                    "length": {0: "length_dynamic_axes_1"},
                                    "outputs": {0: "outputs_dynamic_axes_1", 2: "outputs_dynamic_axes_2"},
                                    "encoded_lengths": {0: "encoded_lengths_dynamic_axes_1"}})
    export_prediction_networks(decoder, joint, args.dir)
    m = onnx.load(enc_path)
    meta = {
        "vocab_size": str(len(PIECES)),  # NeMo's decoder.vocab_size: without the blank
        "normalize_type": "per_feature",
        "subsampling_factor": str(SUBSAMPLING),
        "pred_rnn_layers": str(PRED_LAYERS),
        "pred_hidden": str(PRED_HIDDEN),
        "model_type": "EncDecRNNTBPEModel",
        "version": "2",
        "model_author": "NeMo",
        # NeMo writes the model's download address here; the stand-in gives the model's name
        # only (the importer reads "tdt" in it), so no host is named.
        "url": "nvidia/parakeet-tdt-0.6b-v2" if args.tdt else "stt_en_fastconformer_transducer_large",
        "comment": "voxrt test stand-in",
    }
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.save(m, enc_path)
    with open(os.path.join(args.dir, "tokens.txt"), "w", encoding="utf-8") as f:
        for i, piece in enumerate(PIECES):
            f.write(f"{piece} {i}\n")
        f.write(f"<blk> {BLANK}\n")


def greedy_choice(unit_logits, graph, ctx):
    """The unit greedy search takes: the arg max, or with hotwords the best log-probability plus the unit's
    bonus from ctx (never below 0; none for the blank), the first of equals (voxrt's ContextGraph::greedy_choice)."""
    if graph is None:
        return int(unit_logits.argmax())
    lp = torch.log_softmax(unit_logits.to(torch.float64), dim=0).tolist()
    best, best_score = 0, -math.inf
    for k, score in enumerate(lp):
        if k != BLANK and PIECES[k] != "<unk>":
            score += max(0.0, graph.forward(ctx, k)[0])
        if score > best_score:
            best, best_score = k, score
    return best


def greedy(encoder_frames, decoder, joint, tdt, max_symbols, state, graph=None):
    """NeMo's greedy rules over one segment's frames [T, D]; `state` (last unit, h, c, ids, hotword context
    state) carries on. With hotwords a unit that extends a phrase competes with its bonus (greedy_choice)."""
    last, h, c, ids, ctx = state
    frames = encoder_frames.shape[0]

    def predict(unit, h, c):
        out, _, h2, c2 = decoder(torch.tensor([[unit]], dtype=torch.int32), torch.ones(1, dtype=torch.int32), h, c)
        return out, h2, c2

    g, h_next, c_next = predict(last, h, c)
    t = 0
    while t < frames:
        f = encoder_frames[t].view(1, -1, 1)
        symbols = 0
        need_loop = True
        while need_loop and symbols < max_symbols:
            logits = joint(f, g)[0, 0, 0]
            k = greedy_choice(logits[: BLANK + 1], graph, ctx)
            skip = DURATIONS[int(logits[BLANK + 1:].argmax())] if tdt else (1 if k == BLANK else 0)
            if k != BLANK:
                ids.append(k)
                if graph is not None and PIECES[k] != "<unk>":
                    ctx = graph.forward(ctx, k)[1]
                last, h, c = k, h_next, c_next
                g, h_next, c_next = predict(last, h, c)
            elif tdt and skip == 0:
                # NeMo repeats the same blank (same inputs) until max_symbols, then moves one frame on.
                symbols = max_symbols
                break
            symbols += 1
            t += skip
            need_loop = skip == 0
        # TDT (NeMo's GreedyTDTInfer): one more frame whenever max_symbols was reached, whatever the last
        # duration; RNN-T (GreedyRNNTInfer): the next frame when the frame's units ran out before a blank.
        if (tdt and symbols == max_symbols) or (not tdt and need_loop):
            t += 1
    return last, h, c, ids, ctx


def log_add(a, b):
    if a < b:
        a, b = b, a
    if b == -math.inf:
        return a
    return a + math.log1p(math.exp(b - a))


def encode_hotword(text):
    """A phrase as PIECES ids, longest piece first (as voxrt spells a phrase with a pieces vocabulary)."""
    marked = "".join("\u2581" + w for w in text.split())
    ids, pos = [], 0
    while pos < len(marked):
        for length in range(min(len(marked) - pos, max(len(p) for p in PIECES)), 0, -1):
            piece = marked[pos:pos + length]
            if piece in PIECES[1:]:
                ids.append(PIECES.index(piece))
                pos += length
                break
        else:
            raise ValueError(f"hotword {text!r} cannot be spelled with the pieces")
    return ids


def modified_beam(encoder_frames, decoder, joint, beam, hyps, graph=None):
    """icefall's modified beam search (at most one unit per hypothesis and frame) over one segment's frames, the
    prediction state per hypothesis. A hypothesis: (units, score, last unit, h, c). Per frame every (hypothesis,
    unit) extension scores the hypothesis's score + the unit's log-softmax (float64); the `beam` best are kept
    (ties: the earlier hypothesis, then the lower unit); equal unit sequences merge (scores log-added, the first
    one's state kept). Hotwords (`graph`): a chosen unit's bonus is added after the selection; a hypothesis is
    (units, score, last unit, h, c, context state)."""
    for t in range(encoder_frames.shape[0]):
        f = encoder_frames[t].view(1, -1, 1)
        candidates = []
        for i, (units, score, last, h, c, _) in enumerate(hyps):
            g, _, h2, c2 = decoder(torch.tensor([[last]], dtype=torch.int32), torch.ones(1, dtype=torch.int32), h, c)
            logp = torch.log_softmax(joint(f, g)[0, 0, 0].to(torch.float64), dim=0).tolist()
            for k, lp in enumerate(logp):
                candidates.append((score + lp, i, k, h2, c2))
        candidates.sort(key=lambda x: (-x[0], x[1], x[2]))
        nxt = []
        for score, i, k, h2, c2 in candidates[:beam]:
            units, _, last, h, c, ctx = hyps[i]
            if k != BLANK:
                units, last, h, c = units + [k], k, h2, c2
                if graph is not None:
                    bonus, ctx = graph.forward(ctx, k)
                    score += bonus
            for j, other in enumerate(nxt):
                if other[0] == units:
                    nxt[j] = (other[0], log_add(other[1], score)) + other[2:]
                    break
            else:
                nxt.append((units, score, last, h, c, ctx))
        hyps = nxt
    return hyps


def tdt_beam(encoder_frames, decoder, joint, beam, max_symbols, hyps, graph=None):
    """voxrt's TDT beam search (src/decode/stateful_tdt_beam.h) over one segment's frames, written straightforwardly:
    every (unit, duration) pair is scored, no batching, no pruning of units. A hypothesis: (units, score, last unit,
    h, c, context state, frame, steps at that frame). While some hypothesis stands before the segment's end, the
    ones at the lowest frame t extend by every (unit, duration): score + log_softmax(unit logits)[unit] +
    log_softmax(duration logits)[duration] (float64). A unit other than the blank is emitted (its state becomes the
    hypothesis's); the frame advances by the duration; a blank of duration 0 counts as max_symbols steps; reaching
    max_symbols steps at t moves one frame more (the greedy rules). The candidates are the extensions and the
    hypotheses at later frames; the `beam` best are kept (ties: lower hypothesis index, lower unit, lower duration
    index; a waiting hypothesis first), then equal units at one frame merge (log-added, the first one kept).
    Frames past the end are dropped: every hypothesis starts the next segment at frame 0 (equal units merge)."""
    frames = encoder_frames.shape[0]

    def merge(nxt, hyp):
        for j, other in enumerate(nxt):
            if other[0] == hyp[0] and other[6] == hyp[6]:
                nxt[j] = (other[0], log_add(other[1], hyp[1])) + other[2:]
                return
        nxt.append(hyp)

    while frames > 0 and min(h[6] for h in hyps) < frames:
        t = min(h[6] for h in hyps)
        f = encoder_frames[t].view(1, -1, 1)
        candidates = []
        for i, hyp in enumerate(hyps):
            units, score, last, h, c, ctx, frame, steps = hyp
            if frame != t:
                candidates.append((score, i, -1, -1, None, None))
                continue
            g, _, h2, c2 = decoder(torch.tensor([[last]], dtype=torch.int32), torch.ones(1, dtype=torch.int32), h, c)
            logits = joint(f, g)[0, 0, 0].to(torch.float64)
            unit_lp = torch.log_softmax(logits[: BLANK + 1], dim=0).tolist()
            duration_lp = torch.log_softmax(logits[BLANK + 1:], dim=0).tolist()
            for k, lk in enumerate(unit_lp):
                for j, ld in enumerate(duration_lp):
                    candidates.append((score + lk + ld, i, k, j, h2, c2))
        candidates.sort(key=lambda x: (-x[0], x[1], x[2], x[3]))
        nxt = []
        for score, i, k, j, h2, c2 in candidates[:beam]:
            units, _, last, h, c, ctx, frame, steps = hyps[i]
            if k < 0:
                merge(nxt, hyps[i])
                continue
            if k != BLANK:
                units, last, h, c = units + [k], k, h2, c2
                if graph is not None:
                    bonus, ctx = graph.forward(ctx, k)
                    score += bonus
            skip = DURATIONS[j]
            steps = max_symbols if (k == BLANK and skip == 0) else steps + 1
            frame = t + skip
            if skip > 0 or steps >= max_symbols:
                if steps >= max_symbols:
                    frame += 1
                steps = 0
            merge(nxt, (units, score, last, h, c, ctx, frame, steps))
        hyps = nxt
    nxt = []
    for hyp in hyps:
        merge(nxt, hyp[:6] + (0, 0))
    return nxt


def reference(args):
    weights = torch.load(os.path.join(args.dir, "weights.pt"))
    tdt = weights["tdt"]
    encoder, decoder, joint = make_modules(weights["seed"], tdt)
    encoder.load_state_dict(weights["encoder"])
    decoder.load_state_dict(weights["decoder"])
    joint.load_state_dict(weights["joint"])
    graph = None
    if args.hotwords:
        with open(args.hotwords, encoding="utf-8") as f:
            graph = ContextGraph([encode_hotword(line.strip()) for line in f if line.strip()], args.hotword_bonus)
    cfg = frontend_config()
    hop = int(round(cfg["window_stride"] * cfg["sample_rate"]))
    for wav in args.wavs:
        samples = nemo_ctc.read_wav(wav)
        step = args.segment_hops * hop if args.segment_hops > 0 else max(len(samples), 1)
        zeros = torch.zeros(PRED_LAYERS, 1, PRED_HIDDEN)
        state = (BLANK, zeros, zeros, [], 0)
        # (TDT hypotheses also carry their frame and their steps at it.)
        hyps = [([], 0.0, BLANK, zeros, zeros, 0) + ((0, 0) if tdt else ())]
        with torch.no_grad():
            for begin in range(0, len(samples) // hop * hop, step):
                x, frames = nemo_ctc.nemo_features(samples[begin: begin + step], cfg)
                out, lengths = encoder(torch.from_numpy(x).unsqueeze(0), torch.tensor([frames], dtype=torch.int64))
                frames_first = out[0].transpose(0, 1)[: int(lengths[0])]
                if args.search == "beam" and tdt:
                    hyps = tdt_beam(frames_first, decoder, joint, args.beam, args.max_symbols, hyps, graph)
                elif args.search == "beam":
                    hyps = modified_beam(frames_first, decoder, joint, args.beam, hyps, graph)
                else:
                    state = greedy(frames_first, decoder, joint, tdt, args.max_symbols, state, graph)
        # The best hypothesis: the first with the highest score (an unfinished hotword's bonus is not taken back:
        # the choice is made before, as voxrt's finalize does).
        ids = max(hyps, key=lambda h: h[1])[0] if args.search == "beam" else state[3]
        text = "".join(PIECES[i] for i in ids).replace("\u2581", " ").strip()
        print(json.dumps({"file": wav, "text": text, "ids": ids}))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir")
    e.add_argument("--tdt", action="store_true", help="a token-and-duration transducer (durations 0..4)")
    e.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("reference")
    r.add_argument("dir")
    r.add_argument("wavs", nargs="+")
    r.add_argument("--segment-hops", type=int, default=0, help="hops per segment (0: the whole file)")
    r.add_argument("--max-symbols", type=int, default=10, help="NeMo's max_symbols (greedy; TDT beam)")
    r.add_argument("--search", choices=["greedy", "beam"], default="greedy")
    r.add_argument("--beam", type=int, default=4, help="modified beam search: hypotheses kept per stream")
    r.add_argument("--hotwords", help="a file of phrases, one a line (greedy and beam search)")
    r.add_argument("--hotword-bonus", type=float, default=1.5)
    args = parser.parse_args()
    {"export": export, "reference": reference}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
