"""A torchaudio Emformer RNN-T exported to ONNX the way a user of torchaudio's streaming (online ASR)
tutorial would export it, built from code with random weights (Debian's torch 1.13 / torchaudio 0.13,
/usr/bin/python3), and a straightforward streaming reference decoder over the same torch modules.

  export DIR [--seed N] [--memory M]   writes transcriber.onnx (the streaming `infer`), predictor.onnx,
                                       joiner.onnx, global_stats.json (RNNTBundle's {"mean", "invstddev"}),
                                       spm_bpe.model (a SentencePiece BPE model; blank = its size, as
                                       EMFORMER_RNNT_BASE_LIBRISPEECH's 4096 pieces + blank 4096) and
                                       weights.pt (the torch model, for the reference)
  check-data DIR OUT                   OUT/{transcriber,predictor,joiner}/input_K.pb and output_K.pb:
                                       one call of each graph with torch's eager outputs as the expected
                                       outputs (for `voxrt check GRAPH.onnx --data OUT/NAME`)
  reference DIR [--max-symbols K] [--search greedy|beam] [--beam K] [--hotwords FILE] [--hotword-bonus B] WAV...
                                       one JSON line per file: {"file", "text", "units"}

The model is emformer_rnnt_base's architecture at small sizes: 80 log-mel bins, segment_length 16 and
right_context_length 4 feature frames, time reduction by 4 (so the Emformer sees 4 + 1 frames per call),
an LSTM prediction network with layer norm, the additive joiner.

What the ONNX export is (torch.onnx.export of the modules' own methods, read in torchaudio's source):
  transcriber  _EmformerEncoder.infer(input [N, 20, 80], lengths [N], states): the states are torchaudio's
               per-layer [memory [M, N, D], left_context_key [L, N, D], left_context_val [L, N, D],
               past_length [1, N] int32], flattened as memory_i, left_context_key_i, left_context_val_i,
               past_length_i in and new_<name> out (batch on axis 1). Emformer's _unpack_state reads
               past_length with .item(), which the trace freezes: the export is traced with a state
               past the left context and the memory bank (the steady state), so the graph always
               attends over the whole left context and memory, the zeros of a fresh state included.
               The reference decoder starts its states the same way (zeros, past_length already
               steady), so it computes what the exported graph computes.
  predictor    _Predictor.forward(targets [N, 1] int64, target_lengths [N], [[h_0, c_0], ...]):
               h_i, c_i [N, hidden] in, new_h_i, new_c_i out; one token per call (the trace unrolls the
               LSTM over the token axis).
  joiner       _Joiner.forward(source_encodings [N, T, D], source_lengths, target_encodings [N, U, D],
               target_lengths) -> output [N, T, U, classes] (the lengths pass through unused and drop
               out of the graph).

Features (RNNTBundle.get_feature_extractor, over the whole stream as a streaming front end computes
them): MelSpectrogram(16 kHz, n_fft 400, hop 160, 80 mels; Hann window, power 2, HTK mel, no mel
norm, frames centred on multiples of the hop with reflection at the edges), times _gain (32767^2),
_piecewise_linear_log, then (x - mean) * invstddev. The tutorial's streaming feature extractor instead
recomputes each 20-frame window from its own audio (reflecting at the window's edges), which differs
from the whole-stream features only in the frames next to the window's edges.

Streaming: windows of 20 feature frames advancing by 16, the tail padded with the features of digital
silence; each window's 4 output frames (in the last window, those that see audio) are searched by
greedy RNN-T decoding: per frame up to
max_symbols units, a blank moves on; an emitted unit's LSTM state replaces the hypothesis's
(the predictor starts from the blank with zero state, as torchaudio's RNNTBeamSearch does); or
modified beam search (modified_beam below) over the same windows.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import wave
import warnings

import numpy as np
import torch
import torchaudio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from icefall_transducer import ContextGraph  # noqa: E402  (voxrt's hotword graph, written in Python)

warnings.filterwarnings("ignore")

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
SEGMENT = 16
RIGHT_CONTEXT = 4
STRIDE = 4
GAIN = pow(10, 0.05 * (2 * 20 * math.log10(torch.iinfo(torch.int16).max)))
WORDS = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go", "zero", "one", "two", "three"]


def build_model(classes, memory):
    return torchaudio.models.emformer_rnnt_model(
        input_dim=N_MELS, encoding_dim=64, num_symbols=classes, segment_length=SEGMENT,
        right_context_length=RIGHT_CONTEXT, time_reduction_input_dim=32, time_reduction_stride=STRIDE,
        transformer_num_heads=4, transformer_ffn_dim=128, transformer_num_layers=2, transformer_dropout=0.0,
        transformer_activation="gelu", transformer_left_context_length=8, transformer_max_memory_size=memory,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True,
        symbol_embedding_dim=32, num_lstm_layers=2, lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-3,
        lstm_dropout=0.0).eval()


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            scale = 1.0 / math.sqrt(p.shape[-1]) if p.dim() > 1 else 0.1
            p.copy_(torch.randn(p.shape, generator=g) * scale)
            if "norm" in name and name.endswith("weight"):
                p.uniform_(0.8, 1.2, generator=g)
    return model


# ---------------------------------------------------------------------------- the export wrappers
def state_names(layers):
    return [f"{k}_{i}" for i in range(layers) for k in ("memory", "left_context_key", "left_context_val",
                                                           "past_length")]


class TranscriberInfer(torch.nn.Module):
    def __init__(self, transcriber):
        super().__init__()
        self.transcriber = transcriber

    def forward(self, input, lengths, *flat):
        states = [list(flat[i * 4:(i + 1) * 4]) for i in range(len(flat) // 4)]
        output, output_lengths, new_states = self.transcriber.infer(input, lengths, states)
        return (output, output_lengths, *[t for s in new_states for t in s])


class PredictorStep(torch.nn.Module):
    def __init__(self, predictor):
        super().__init__()
        self.predictor = predictor

    def forward(self, targets, target_lengths, *flat):
        states = [[flat[2 * i], flat[2 * i + 1]] for i in range(len(flat) // 2)]
        output, lengths, new_states = self.predictor(targets, target_lengths, states)
        return (output, lengths, *[t for s in new_states for t in s])


class JoinerCall(torch.nn.Module):
    def __init__(self, joiner):
        super().__init__()
        self.joiner = joiner

    def forward(self, source_encodings, source_lengths, target_encodings, target_lengths):
        output, _, _ = self.joiner(source_encodings, source_lengths, target_encodings, target_lengths)
        return output


def layers_of(model):
    return len(model.transcriber.transformer.emformer_layers)


def fresh_transcriber_states(model, batch):
    """Zeros with past_length already past the left context and memory bank: what the exported graph
    computes for every call (see the module docstring)."""
    emformer = model.transcriber.transformer
    steady = emformer.segment_length * max(1, emformer.max_memory_size) + emformer.left_context_length
    states = []
    for layer in emformer.emformer_layers:
        s = layer._init_state(batch, None)
        s[3] = torch.full_like(s[3], steady)
        states.append(s)
    return states


def predictor_shape(model):
    lstm = model.predictor.lstm_layers
    return len(lstm), lstm[0].hidden_dim


def fresh_predictor_states(model, batch):
    layers, hidden = predictor_shape(model)
    return [[torch.zeros(batch, hidden), torch.zeros(batch, hidden)] for _ in range(layers)]


def export_onnx(module, args, path, inputs, outputs, axes):
    with torch.no_grad():
        torch.onnx.export(module, tuple(args), path, input_names=inputs, output_names=outputs,
                          dynamic_axes=axes, opset_version=14, do_constant_folding=True)


def train_spm(out_dir, vocab):
    import sentencepiece as spm
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "text.txt")
        rng = np.random.default_rng(0)
        with open(corpus, "w") as f:
            for _ in range(2000):
                f.write(" ".join(rng.choice(WORDS, 4)) + "\n")
        spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(out_dir, "spm_bpe"),
                                       vocab_size=vocab, model_type="bpe", character_coverage=1.0,
                                       minloglevel=2)
    return spm.SentencePieceProcessor(model_file=os.path.join(out_dir, "spm_bpe.model"))


def export(args):
    os.makedirs(args.dir, exist_ok=True)
    sp = train_spm(args.dir, args.vocab)
    classes = sp.get_piece_size() + 1  # the blank is the last class, as in torchaudio's bundle
    torch.manual_seed(args.seed)
    model = randomize(build_model(classes, args.memory), args.seed)
    torch.save({"state_dict": model.state_dict(), "classes": classes, "memory": args.memory},
               os.path.join(args.dir, "weights.pt"))
    # Global stats as torchaudio's pipeline assets hold them (the log-mel of speech is about 0..20).
    g = torch.Generator().manual_seed(args.seed + 1)
    stats = {"mean": (torch.rand(N_MELS, generator=g) * 4 + 8).tolist(),
             "invstddev": (torch.rand(N_MELS, generator=g) * 0.2 + 0.2).tolist()}
    with open(os.path.join(args.dir, "global_stats.json"), "w") as f:
        json.dump(stats, f)

    layers = layers_of(model)
    names = state_names(layers)
    batch = 2
    window = SEGMENT + RIGHT_CONTEXT
    states = fresh_transcriber_states(model, batch)
    flat = [t for s in states for t in s]
    export_onnx(TranscriberInfer(model.transcriber), (torch.randn(batch, window, N_MELS),
                                                      torch.full((batch,), window), *flat),
                os.path.join(args.dir, "transcriber.onnx"), ["input", "lengths", *names],
                ["output", "output_lengths", *["new_" + n for n in names]],
                {"input": {0: "N"}, "lengths": {0: "N"}, "output": {0: "N"}, "output_lengths": {0: "N"},
                 **{n: {1: "N"} for n in names}, **{"new_" + n: {1: "N"} for n in names}})
    p_layers, _ = predictor_shape(model)
    p_names = [f"{k}_{i}" for i in range(p_layers) for k in ("h", "c")]
    p_states = [t for s in fresh_predictor_states(model, batch) for t in s]
    export_onnx(PredictorStep(model.predictor), (torch.tensor([[3], [5]]), torch.tensor([1, 1]), *p_states),
                os.path.join(args.dir, "predictor.onnx"), ["targets", "target_lengths", *p_names],
                ["output", "output_lengths", *["new_" + n for n in p_names]],
                {"targets": {0: "N"}, "target_lengths": {0: "N"}, "output": {0: "N"},
                 "output_lengths": {0: "N"}, **{n: {0: "N"} for n in p_names},
                 **{"new_" + n: {0: "N"} for n in p_names}})
    d = model.joiner.linear.in_features
    export_onnx(JoinerCall(model.joiner), (torch.randn(batch, 1, d), torch.tensor([1, 1]),
                                           torch.randn(batch, 1, d), torch.tensor([1, 1])),
                os.path.join(args.dir, "joiner.onnx"),
                ["source_encodings", "source_lengths", "target_encodings", "target_lengths"], ["output"],
                {"source_encodings": {0: "N", 1: "T"}, "source_lengths": {0: "N"},
                 "target_encodings": {0: "N", 1: "U"}, "target_lengths": {0: "N"},
                 "output": {0: "N", 1: "T", 2: "U"}})
    print(json.dumps({"classes": classes, "layers": layers, "memory": args.memory}))


def load(model_dir):
    blob = torch.load(os.path.join(model_dir, "weights.pt"))
    model = build_model(blob["classes"], blob["memory"])
    model.load_state_dict(blob["state_dict"])
    return model.eval()


# ------------------------------------------------------------------------- data for `voxrt check`
def write_case(out_dir, inputs, outputs):
    from onnx import numpy_helper
    os.makedirs(out_dir, exist_ok=True)
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for k, t in enumerate(tensors):
            with open(os.path.join(out_dir, f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(t.detach().numpy()).SerializeToString())


def check_data(args):
    model = load(args.dir)
    g = torch.Generator().manual_seed(7)
    batch = 3
    window = SEGMENT + RIGHT_CONTEXT
    # A steady state with non-zero caches: the graph's and torch's computations are the same there.
    states = fresh_transcriber_states(model, batch)
    for s in states:
        for i in range(3):
            s[i] = torch.randn(s[i].shape, generator=g)
    flat = [t.clone() for s in states for t in s]
    x = torch.randn(batch, window, N_MELS, generator=g)
    lengths = torch.full((batch,), window)
    with torch.no_grad():
        out = TranscriberInfer(model.transcriber)(x, lengths, *[t.clone() for t in flat])
    write_case(os.path.join(args.out, "transcriber"), [x, lengths, *flat], list(out))
    p_states = [torch.randn(t.shape, generator=g) for s in fresh_predictor_states(model, batch) for t in s]
    targets = torch.tensor([[1], [4], [model.joiner.linear.out_features - 1]])
    with torch.no_grad():
        out = PredictorStep(model.predictor)(targets, torch.ones(batch, dtype=torch.int64), *p_states)
    write_case(os.path.join(args.out, "predictor"), [targets, torch.ones(batch, dtype=torch.int64), *p_states],
               list(out))
    d = model.joiner.linear.in_features
    src, tgt = torch.randn(batch, 1, d, generator=g), torch.randn(batch, 1, d, generator=g)
    with torch.no_grad():
        out = JoinerCall(model.joiner)(src, torch.ones(batch, dtype=torch.int64), tgt,
                                       torch.ones(batch, dtype=torch.int64))
    # The exported joiner keeps only the encodings as inputs (the lengths drop out of the trace).
    write_case(os.path.join(args.out, "joiner"), [src, tgt], [out])


# ------------------------------------------------------------------------------ reference decoder
def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getframerate() != SAMPLE_RATE or w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise SystemExit(f"{path}: expected 16 kHz 16-bit mono")
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0


def features(samples, stats):
    mel = torchaudio.transforms.MelSpectrogram(sample_rate=SAMPLE_RATE, n_fft=N_FFT, n_mels=N_MELS,
                                               hop_length=HOP)
    x = mel(torch.from_numpy(samples)).transpose(1, 0) * GAIN
    x = torch.where(x > math.e, torch.log(x), x / math.e)
    return (x - torch.tensor(stats["mean"])) * torch.tensor(stats["invstddev"])


def silence_feature(stats):
    # Digital silence: power 0 -> 0 after the piecewise-linear log, then normalised.
    return (0.0 - torch.tensor(stats["mean"])) * torch.tensor(stats["invstddev"])


def greedy(model, encoded, hyp, max_symbols, blank):
    """encoded [T, D]; hyp: {"units", "state", "pred_out"} carried across windows."""
    for t in range(encoded.shape[0]):
        for _ in range(max_symbols):
            logits, _, _ = model.joiner(encoded[t].view(1, 1, -1), torch.tensor([1]),
                                        hyp["pred_out"], torch.tensor([1]))
            unit = int(torch.argmax(logits[0, 0, 0]))
            if unit == blank:
                break
            hyp["units"].append(unit)
            out, _, state = model.predictor(torch.tensor([[unit]]), torch.tensor([1]), hyp["state"])
            hyp["pred_out"], hyp["state"] = out, state


def log_add(a, b):
    if a < b:
        a, b = b, a
    if b == -math.inf:
        return a
    return a + math.log1p(math.exp(b - a))


def encode_hotword(text, pieces, blank):
    """A phrase as piece ids, longest piece first over the word-marked text (as voxrt spells a phrase
    with a pieces vocabulary)."""
    marked = "".join("\u2581" + w for w in text.split())
    longest = max(len(p) for p in pieces)
    ids, pos = [], 0
    while pos < len(marked):
        for length in range(min(len(marked) - pos, longest), 0, -1):
            piece = marked[pos:pos + length]
            if piece in pieces and pieces.index(piece) != blank:
                ids.append(pieces.index(piece))
                pos += length
                break
        else:
            raise ValueError(f"hotword {text!r} cannot be spelled with the pieces")
    return ids


def modified_beam(model, encoded, hyps, beam, blank, graph=None):
    """icefall's modified beam search (at most one unit per hypothesis and frame), as voxrt's
    stateful_transducer_beam.h states its rules: per frame every (hypothesis, unit) extension scores
    the hypothesis's score + the unit's log-softmax (float64); the `beam` best are kept (ties: the
    earlier hypothesis, then the lower unit); equal unit sequences merge (scores log-added, the first
    one's state kept). A hypothesis: {"units", "score", "pred_out", "state", "context"} (the
    predictor's output and state after its last unit, the hotword graph's state). Hotwords (`graph`,
    voxrt's context graph written in Python): a chosen unit's bonus is added after the selection."""
    for t in range(encoded.shape[0]):
        candidates = []
        for i, h in enumerate(hyps):
            logits, _, _ = model.joiner(encoded[t].view(1, 1, -1), torch.tensor([1]), h["pred_out"],
                                        torch.tensor([1]))
            logp = torch.log_softmax(logits[0, 0, 0].to(torch.float64), dim=0).tolist()
            for k, lp in enumerate(logp):
                candidates.append((h["score"] + lp, i, k))
        candidates.sort(key=lambda x: (-x[0], x[1], x[2]))
        nxt = []
        for score, i, k in candidates[:beam]:
            h = hyps[i]
            units = h["units"] + [k] if k != blank else h["units"]
            context = h["context"]
            if k != blank and graph is not None:
                bonus, context = graph.forward(context, k)
                score += bonus
            for other in nxt:
                if other["units"] == units:
                    other["score"] = log_add(other["score"], score)
                    break
            else:
                if k == blank:
                    nxt.append(dict(h, score=score))
                else:
                    out, _, state = model.predictor(torch.tensor([[k]]), torch.tensor([1]), h["state"])
                    nxt.append({"units": units, "score": score, "pred_out": out, "state": state,
                                "context": context})
        hyps = nxt
    return hyps


def reference(args):
    import sentencepiece as spm
    model = load(args.dir)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.dir, "spm_bpe.model"))
    with open(os.path.join(args.dir, "global_stats.json")) as f:
        stats = json.load(f)
    blank = model.joiner.linear.out_features - 1
    window = SEGMENT + RIGHT_CONTEXT
    graph = None
    if args.hotwords:
        pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
        with open(args.hotwords, encoding="utf-8") as f:
            graph = ContextGraph([encode_hotword(line.strip(), pieces, blank) for line in f if line.strip()],
                                 args.hotword_bonus)
    for path in args.wavs:
        feats = features(read_wav(path), stats)
        frames = feats.shape[0]
        # Every frame is consumed: windows advance by SEGMENT until the last one covers the end.
        windows = max(1, math.ceil(frames / SEGMENT))
        pad = windows * SEGMENT + RIGHT_CONTEXT - feats.shape[0]
        feats = torch.cat([feats, silence_feature(stats).expand(pad, N_MELS)])
        states = fresh_transcriber_states(model, 1)
        with torch.no_grad():
            start_out, _, start_state = model.predictor(torch.tensor([[blank]]), torch.tensor([1]),
                                                        fresh_predictor_states(model, 1))
            hyp = {"units": [], "state": start_state, "pred_out": start_out}
            hyps = [dict(hyp, score=0.0, context=0)]
            for w in range(windows):
                chunk = feats[w * SEGMENT:w * SEGMENT + window].unsqueeze(0)
                encoded, _, states = model.transcriber.infer(chunk, torch.tensor([window]), states)
                # Output frame j of a window sees its segment's frames up to STRIDE * j: the last
                # window's frames past the audio's end are padding and not searched.
                valid = min(encoded.shape[1], math.ceil((frames - w * SEGMENT) / STRIDE))
                if args.search == "beam":
                    hyps = modified_beam(model, encoded[0, :valid], hyps, args.beam, blank, graph)
                else:
                    greedy(model, encoded[0, :valid], hyp, args.max_symbols, blank)
        if args.search == "beam":
            hyp = max(hyps, key=lambda h: h["score"])  # the first with the highest score
        # The pieces joined with word markers as spaces (torchaudio's _SentencePieceTokenProcessor,
        # which also drops <unk> and </s>; voxrt prints every piece, so the comparison does too).
        pieces = [sp.id_to_piece(u) for u in hyp["units"]]
        text = " ".join("".join(pieces).replace("\u2581", " ").split())
        print(json.dumps({"file": path, "text": text, "units": hyp["units"]}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir")
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--memory", type=int, default=4)
    e.add_argument("--vocab", type=int, default=40)
    c = sub.add_parser("check-data")
    c.add_argument("dir")
    c.add_argument("out")
    r = sub.add_parser("reference")
    r.add_argument("dir")
    r.add_argument("--max-symbols", type=int, default=3)
    r.add_argument("--search", choices=["greedy", "beam"], default="greedy")
    r.add_argument("--beam", type=int, default=4)
    r.add_argument("--hotwords", help="a file of phrases, one a line (beam search)")
    r.add_argument("--hotword-bonus", type=float, default=1.5)
    r.add_argument("wavs", nargs="+")
    args = ap.parse_args()
    {"export": export, "check-data": check_data, "reference": reference}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
