"""Streaming transducers laid out as icefall exports them for sherpa-onnx, built from code with random
weights (Debian's torch 1.13, /usr/bin/python3), and a straightforward reference decoder over the same
torch modules (greedy and modified beam search, hotwords), for voxrt's transducer tests.

  export DIR --type lstm|conformer|zipformer2 [--seed N]   writes encoder-epoch-99-avg-1.onnx, decoder-..., joiner-...,
                                                tokens.txt (icefall's file names, input/output names,
                                                dynamic axes and metadata_props) and weights.pt
  export DIR --type ctc                         a streaming CTC model: ctc-epoch-99-avg-1-chunk-16-left-128.onnx
                                                (the lstm encoder's caches, output log_probs), tokens.txt
  reference DIR [--search greedy|beam] [--beam K] [--hotwords FILE] [--hotword-bonus B] WAV...
                                                one JSON line per file: {"file", "text", "endpoint_free"}

The layouts follow icefall's export scripts (read, not copied):
  lstm       lstm_transducer_stateless2/export-onnx.py: x, state0 [L, N, d_model], state1 [L, N, rnn_hidden]
             -> encoder_out, new_state0, new_state1 (batch on axis 1)
  conformer  pruned_transducer_stateless5/export-onnx-streaming.py: x, cached_attn [L, left, N, D],
             cached_conv [L, kernel-1, N, D], processed_lens [N] -> encoder_out, new_cached_attn,
             new_cached_conv (batch on axis 2)
  zipformer2 zipformer/export-onnx-streaming.py: x, cached_key_i [left, N, d], cached_conv_i [N, d, k-1], ...,
             embed_states [N, ...], processed_lens [N] int64 -> encoder_out, new_<each> (processed_lens a cache)
  decoder    y [N, context_size] int64 -> decoder_out [N, joiner_dim] (the -1 "no unit yet" entries embed as 0)
  joiner     encoder_out [N, joiner_dim], decoder_out [N, joiner_dim] -> logit [N, vocab]
The modules are small stand-ins of the same shape (Conv2d subsampling by 4, projected LSTM / a streaming
Conformer layer with attention and convolution caches), not icefall's code.

The reference decoder (greedy CTC for the ctc export) does what voxrt's Recognizer does with --vad off: Kaldi fbank as sherpa-onnx
computes it (torchaudio.compliance.kaldi, snip_edges false, 20 Hz .. Nyquist - 400 Hz, int16 scale),
chunks of T frames advancing by decode_chunk_len, the last frames padded with the features of digital
silence, processed_lens counted in feature frames (as sherpa-onnx feeds it), and the searches of
src/decode/transducer_search.cpp (sherpa-onnx's semantics). It reports whether voxrt's endpoint rules
would have cut the audio (the comparison is only meaningful when they would not).
"""
import argparse
import json
import math
import os
import sys
import wave

import numpy as np
import torch
import torch.nn as nn

NUM_BINS = 80
JOINER_DIM = 48
CONTEXT_SIZE = 2
PIECES = ["<blk>", "<sos/eos>", "<unk>"] + ["\u2581" + c for c in "ABCDEFGHIJKLMN"] + list("ABCDEFGHIJKLMNO")
SILENCE_FEATURE = math.log(float(np.finfo(np.float32).eps))


def onnx_export(*args, **kwargs):
    """torch.onnx.export with the TorchScript exporter whatever the torch version: torch 2.9 and
    later default to the dynamo exporter (another graph, other names), and the transducer recipe
    exports on the GPU machine (torch 2.11) as well as here (torch 1.13)."""
    import inspect
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs.setdefault("dynamo", False)
    torch.onnx.export(*args, **kwargs)


class Conv2dSubsampling(nn.Module):
    """[N, T, 80] -> [N, ((T - 1) // 2 - 1) // 2, d] as icefall's encoder_embed."""

    def __init__(self, d, channels=8):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, channels, 3, 2), nn.ReLU(), nn.Conv2d(channels, channels, 3, 2), nn.ReLU())
        self.out = nn.Linear(channels * (((NUM_BINS - 1) // 2 - 1) // 2), d)

    def forward(self, x):
        # Raw fbank is about -16 (silence) .. 20 and its level swamps random weights; taking each
        # frame's mean out stands in for what trained weights learn, so the output follows the
        # spectrum's shape.
        y = self.conv(((x - x.mean(dim=-1, keepdim=True)) * 0.3).unsqueeze(1))
        n, c, t, f = y.shape
        return self.out(y.transpose(1, 2).reshape(n, t, c * f))


class LstmEncoder(nn.Module):
    """Conv2d subsampling + projected LSTM layers (h: d_model, c: rnn_hidden) + the joiner's encoder_proj."""

    model_type = "lstm"

    def __init__(self, layers=2, d_model=64, rnn_hidden=96, decode_chunk_len=16):
        super().__init__()
        self.layers, self.d_model, self.rnn_hidden = layers, d_model, rnn_hidden
        self.decode_chunk_len = decode_chunk_len
        self.T = decode_chunk_len + 5
        self.embed = Conv2dSubsampling(d_model)
        self.w_ih = nn.ModuleList([nn.Linear(d_model, 4 * rnn_hidden) for _ in range(layers)])
        self.w_hh = nn.ModuleList([nn.Linear(d_model, 4 * rnn_hidden, bias=False) for _ in range(layers)])
        self.proj = nn.ModuleList([nn.Linear(rnn_hidden, d_model, bias=False) for _ in range(layers)])
        self.encoder_proj = nn.Linear(d_model, JOINER_DIM)

    def init_states(self, n):
        return [torch.zeros(self.layers, n, self.d_model), torch.zeros(self.layers, n, self.rnn_hidden)]

    def forward(self, x, state0, state1):
        y = self.embed(x)
        hs, cs = [], []
        for layer in range(self.layers):
            h, c = state0[layer], state1[layer]
            outs = []
            for t in range(y.shape[1]):
                gates = self.w_ih[layer](y[:, t]) + self.w_hh[layer](h)
                i, f, g, o = gates.chunk(4, dim=-1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = self.proj[layer](torch.sigmoid(o) * torch.tanh(c))
                outs.append(h)
            y = y + torch.stack(outs, dim=1)  # residual, as icefall's RNNEncoderLayer
            hs.append(h)
            cs.append(c)
        return self.encoder_proj(y), torch.stack(hs), torch.stack(cs)

    def export_args(self):
        return dict(input_names=["x", "state0", "state1"], output_names=["encoder_out", "new_state0", "new_state1"],
                    dynamic_axes={"x": {0: "N"}, "state0": {1: "N"}, "state1": {1: "N"}, "encoder_out": {0: "N"},
                                  "new_state0": {1: "N"}, "new_state1": {1: "N"}})

    def metadata(self):
        return {"model_type": "lstm", "version": "1", "model_author": "k2-fsa", "decode_chunk_len": str(self.decode_chunk_len),
                "T": str(self.T), "num_encoder_layers": str(self.layers), "d_model": str(self.d_model),
                "rnn_hidden_size": str(self.rnn_hidden)}

    def run(self, x, states, processed):
        out, h, c = self(x, *states)
        return out, [h, c]


class ConformerLayer(nn.Module):
    def __init__(self, d, heads, kernel):
        super().__init__()
        self.d, self.heads, self.kernel = d, heads, kernel
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.norm_att = nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.norm_conv = nn.LayerNorm(d)
        self.pw1 = nn.Linear(d, 2 * d)
        self.dw = nn.Conv1d(d, d, kernel, groups=d)
        self.pw2 = nn.Linear(d, d)
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.norm_out = nn.LayerNorm(d)

    def forward(self, x, attn_cache, conv_cache, masked):
        # x [N, C, d]; attn_cache [left, N, d]; conv_cache [kernel - 1, N, d]; masked [N, left] (True: no frame there)
        n, chunk, d = x.shape
        x = x + 0.5 * self.ff1(x)
        h = self.norm_att(x)
        kv = torch.cat([attn_cache.transpose(0, 1), h], dim=1)
        new_attn = kv[:, -attn_cache.shape[0]:].transpose(0, 1)
        hd = d // self.heads
        q = self.q(h).view(n, chunk, self.heads, hd).transpose(1, 2)
        k = self.k(kv).view(n, -1, self.heads, hd).transpose(1, 2)
        v = self.v(kv).view(n, -1, self.heads, hd).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd)
        full_mask = torch.cat([masked, torch.zeros(n, chunk, dtype=torch.bool, device=masked.device)], dim=1)
        scores = scores.masked_fill(full_mask.view(n, 1, 1, -1), -10000.0)
        att = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(n, chunk, d)
        x = x + self.o(att)
        h = nn.functional.glu(self.pw1(self.norm_conv(x)), dim=-1)
        hc = torch.cat([conv_cache.transpose(0, 1), h], dim=1)
        new_conv = hc[:, -(self.kernel - 1):].transpose(0, 1)
        h = self.pw2(torch.relu(self.dw(hc.transpose(1, 2)).transpose(1, 2)))
        x = x + h
        x = x + 0.5 * self.ff2(x)
        return self.norm_out(x), new_attn, new_conv


class ConformerEncoder(nn.Module):
    """Conv2d subsampling + streaming Conformer layers with left-context attention and causal convolution
    caches (icefall's stateless5 streaming export: chunk_size 4, left_context 8, right_context 0)."""

    model_type = "conformer"

    def __init__(self, layers=2, d=64, heads=4, kernel=5, chunk_size=4, left_context=8, joiner_dim=JOINER_DIM):
        super().__init__()
        self.num_layers, self.d, self.kernel = layers, d, kernel
        self.chunk_size, self.left_context, self.right_context = chunk_size, left_context, 0
        self.decode_chunk_len = chunk_size * 4
        self.pad_length = (self.right_context + 2) * 4 + 3
        self.T = self.decode_chunk_len + self.pad_length
        self.embed = Conv2dSubsampling(d)
        self.layers = nn.ModuleList([ConformerLayer(d, heads, kernel) for _ in range(layers)])
        self.encoder_proj = nn.Linear(d, joiner_dim)

    def init_states(self, n):
        return [torch.zeros(self.num_layers, self.left_context, n, self.d),
                torch.zeros(self.num_layers, self.kernel - 1, n, self.d)]

    def forward(self, x, cached_attn, cached_conv, processed_lens):
        y = self.embed(x)[:, : self.chunk_size]
        positions = torch.arange(self.left_context, device=x.device).unsqueeze(0)
        masked = positions < (self.left_context - processed_lens).unsqueeze(1)
        new_attn, new_conv = [], []
        for i, layer in enumerate(self.layers):
            y, a, c = layer(y, cached_attn[i], cached_conv[i], masked)
            new_attn.append(a)
            new_conv.append(c)
        return self.encoder_proj(y), torch.stack(new_attn), torch.stack(new_conv)

    def export_args(self):
        return dict(input_names=["x", "cached_attn", "cached_conv", "processed_lens"],
                    output_names=["encoder_out", "new_cached_attn", "new_cached_conv"],
                    dynamic_axes={"x": {0: "N"}, "cached_attn": {2: "N"}, "cached_conv": {2: "N"},
                                  "processed_lens": {0: "N"}, "encoder_out": {0: "N"}, "new_cached_attn": {2: "N"},
                                  "new_cached_conv": {2: "N"}})

    def metadata(self):
        return {"model_type": "conformer", "version": "1", "model_author": "k2-fsa", "comment": "stateless5",
                "pad_length": str(self.pad_length), "decode_chunk_len": str(self.decode_chunk_len),
                "encoder_dim": str(self.d), "num_encoder_layers": str(self.num_layers),
                "cnn_module_kernel": str(self.kernel), "left_context": str(self.left_context),
                "right_context": str(self.right_context), "chunk_size": str(self.chunk_size), "T": str(self.T)}

    def run(self, x, states, processed):
        out, a, c = self(x, states[0], states[1], processed)
        return out, [a, c]


class Zipformer2LikeEncoder(nn.Module):
    """The cache layout of icefall's zipformer/export-onnx-streaming.py (model_type zipformer2): per layer
    cached_key_i [left, N, d] (batch on axis 1) and cached_conv_i [N, d, kernel-1] (axis 0), then
    embed_states [N, 2, d] and processed_lens [N] int64, each returned as new_<name>; processed_lens is
    a cache too (the model counts its frames). The layers are ConformerLayer stand-ins, not Zipformer."""

    model_type = "zipformer2"

    def __init__(self, layers=2, d=64, heads=4, kernel=5, chunk_size=4, left_context=8, joiner_dim=JOINER_DIM):
        super().__init__()
        self.num_layers, self.d, self.kernel = layers, d, kernel
        self.chunk_size, self.left_context = chunk_size, left_context
        self.decode_chunk_len = chunk_size * 4
        self.T = self.decode_chunk_len + 7
        self.embed = Conv2dSubsampling(d)
        self.layers = nn.ModuleList([ConformerLayer(d, heads, kernel) for _ in range(layers)])
        self.encoder_proj = nn.Linear(d, joiner_dim)

    def state_names(self):
        names = []
        for i in range(self.num_layers):
            names += [f"cached_key_{i}", f"cached_conv_{i}"]
        return names + ["embed_states", "processed_lens"]

    def init_states(self, n):
        states = []
        for _ in range(self.num_layers):
            states += [torch.zeros(self.left_context, n, self.d), torch.zeros(n, self.d, self.kernel - 1)]
        return states + [torch.zeros(n, 2, self.d), torch.zeros(n, dtype=torch.int64)]

    def forward(self, x, *states):
        y = self.embed(x)[:, : self.chunk_size]
        embed_states, processed_lens = states[-2], states[-1]
        # A running summary of the chunks seen (what embed_states carries, in spirit).
        y = y + 0.1 * embed_states[:, :1]
        new_embed = torch.stack([0.9 * embed_states[:, 0] + 0.1 * y.mean(1), embed_states[:, 1] + 1.0], dim=1)
        positions = torch.arange(self.left_context, device=x.device).unsqueeze(0)
        masked = positions < (self.left_context - processed_lens // 4).unsqueeze(1)
        new_states = []
        for i, layer in enumerate(self.layers):
            key, conv = states[2 * i], states[2 * i + 1]
            y, new_key, new_conv = layer(y, key, conv.permute(2, 0, 1), masked)
            new_states += [new_key, new_conv.permute(1, 2, 0)]
        new_states += [new_embed, processed_lens + self.decode_chunk_len]
        return (self.encoder_proj(y), *new_states)

    def export_args(self):
        names = self.state_names()
        axes = {"x": {0: "N"}, "encoder_out": {0: "N"}}
        for name in names:
            axis = 1 if name.startswith("cached_key") else 0
            axes[name] = {axis: "N"}
            axes["new_" + name] = {axis: "N"}
        return dict(input_names=["x"] + names, output_names=["encoder_out"] + ["new_" + n for n in names],
                    dynamic_axes=axes)

    def metadata(self):
        return {"model_type": "zipformer2", "version": "1", "model_author": "k2-fsa",
                "comment": "streaming zipformer2", "decode_chunk_len": str(self.decode_chunk_len), "T": str(self.T),
                "num_encoder_layers": str(self.num_layers), "encoder_dims": str(self.d),
                "cnn_module_kernels": str(self.kernel), "left_context_len": str(self.left_context),
                "query_head_dims": "16", "value_head_dims": "16", "num_heads": "4"}

    def run(self, x, states, processed):
        out, *new_states = self(x, *states)
        return out, new_states


class CtcModel(nn.Module):
    """A streaming CTC model as icefall's zipformer/export-onnx-streaming-ctc.py lays it out: the encoder's
    caches, and log_probs (log-softmax over the tokens) in place of encoder_out."""

    def __init__(self, vocab):
        super().__init__()
        self.encoder = LstmEncoder()
        self.T, self.decode_chunk_len = self.encoder.T, self.encoder.decode_chunk_len
        self.ctc_output = nn.Linear(JOINER_DIM, vocab)

    def init_states(self, n):
        return self.encoder.init_states(n)

    def forward(self, x, state0, state1):
        out, h, c = self.encoder(x, state0, state1)
        return self.ctc_output(torch.tanh(out)).log_softmax(-1), h, c

    def export_args(self):
        args = self.encoder.export_args()
        args["output_names"][0] = "log_probs"
        args["dynamic_axes"]["log_probs"] = args["dynamic_axes"].pop("encoder_out")
        return args

    def metadata(self):
        meta = self.encoder.metadata()
        meta["comment"] = "streaming ctc"
        return meta

    def run(self, x, states, processed):
        out, h, c = self(x, *states)
        return out, [h, c]


class Decoder(nn.Module):
    """icefall's stateless decoder (embedding + grouped context Conv1d + ReLU) with the joiner's decoder_proj."""

    def __init__(self, vocab, dim=32, joiner_dim=JOINER_DIM):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.conv = nn.Conv1d(dim, dim, CONTEXT_SIZE, groups=dim // 4, bias=False)
        self.decoder_proj = nn.Linear(dim, joiner_dim)

    def forward(self, y):
        emb = self.embedding(y.clamp(min=0)) * (y >= 0).unsqueeze(-1)
        out = torch.relu(self.conv(emb.permute(0, 2, 1)).permute(0, 2, 1))
        return self.decoder_proj(out.squeeze(1))


class Joiner(nn.Module):
    def __init__(self, vocab, joiner_dim=JOINER_DIM):
        super().__init__()
        self.output_linear = nn.Linear(joiner_dim, vocab)

    def forward(self, encoder_out, decoder_out):
        return self.output_linear(torch.tanh(encoder_out + decoder_out))


def make_models(kind, seed, layers=2, dim=64, vocab=None):
    torch.manual_seed(seed)
    vocab = vocab or len(PIECES)
    if kind == "ctc":
        model = CtcModel(len(PIECES)).eval()
        with torch.no_grad():
            model.ctc_output.weight.mul_(6.0)
            model.ctc_output.bias.zero_()
            model.ctc_output.bias[0] = 1.0
            model.ctc_output.bias[1] = -10.0
            model.encoder.encoder_proj.bias.zero_()
            model.encoder.encoder_proj.weight.mul_(12.0)
        return model, None, None
    if kind == "lstm":
        encoder = LstmEncoder().eval()
    elif kind == "zipformer2":
        encoder = Zipformer2LikeEncoder().eval()
    else:
        encoder = ConformerEncoder(layers=layers, d=dim, heads=max(4, dim // 64)).eval()
    decoder = Decoder(vocab).eval()
    joiner = Joiner(vocab).eval()
    with torch.no_grad():
        # Random weights with decisive logits (so float differences rarely flip a choice) and a
        # blank that wins about half the frames.
        joiner.output_linear.weight.mul_(6.0)
        joiner.output_linear.bias.zero_()
        joiner.output_linear.bias[0] = 0.5
        joiner.output_linear.bias[1] = -10.0  # <sos/eos>: trained models never emit it
        encoder.encoder_proj.bias.zero_()
        encoder.encoder_proj.weight.mul_(12.0 if kind == "lstm" else 0.45)
        decoder.decoder_proj.weight.mul_(0.5)
    return encoder, decoder, joiner


def add_metadata(path, metadata):
    import onnx
    model = onnx.load(path)
    for key, value in metadata.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = key, value
    onnx.save(model, path)


def export(out, kind, seed, layers=2, dim=64, vocab=None):
    """vocab > len(PIECES) (benchmarks only) adds made-up pieces; the reference decoder needs the default."""
    os.makedirs(out, exist_ok=True)
    pieces = PIECES + [f"\u2581X{i}" for i in range(len(PIECES), vocab or len(PIECES))]
    encoder, decoder, joiner = make_models(kind, seed, layers, dim, len(pieces))
    if kind == "ctc":
        path = f"{out}/ctc-epoch-99-avg-1-chunk-16-left-128.onnx"
        x = torch.zeros(1, encoder.T, NUM_BINS)
        onnx_export(encoder, (x, *encoder.init_states(1)), path, opset_version=13, **encoder.export_args())
        add_metadata(path, encoder.metadata())
        write_tokens(out, pieces)
    else:
        export_transducer(out, encoder, decoder, joiner, pieces)
    torch.save({"kind": kind, "seed": seed, "layers": layers, "dim": dim}, f"{out}/weights.pt")
    print("exported", kind, "to", out)


def write_tokens(out, pieces):
    with open(f"{out}/tokens.txt", "w", encoding="utf-8") as f:
        for i, piece in enumerate(pieces):
            f.write(f"{piece} {i}\n")


def export_transducer(out, encoder, decoder, joiner, pieces):
    """The three files and tokens.txt as icefall's export-onnx scripts write them (also used by
    recipes/transducer for trained weights)."""
    os.makedirs(out, exist_ok=True)
    x = torch.zeros(1, encoder.T, NUM_BINS)
    states = encoder.init_states(1)
    args = (x, *states) + ((torch.zeros(1, dtype=torch.int64),) if encoder.model_type == "conformer" else ())
    if encoder.model_type == "zipformer2":
        args = (x, *states)
    enc_path = f"{out}/encoder-epoch-99-avg-1.onnx"
    onnx_export(encoder, args, enc_path, opset_version=13, **encoder.export_args())
    add_metadata(enc_path, encoder.metadata())
    dec_path = f"{out}/decoder-epoch-99-avg-1.onnx"
    onnx_export(decoder, torch.zeros(10, CONTEXT_SIZE, dtype=torch.int64), dec_path, opset_version=13,
                input_names=["y"], output_names=["decoder_out"],
                dynamic_axes={"y": {0: "N"}, "decoder_out": {0: "N"}})
    add_metadata(dec_path, {"context_size": str(CONTEXT_SIZE), "vocab_size": str(len(pieces))})
    join_path = f"{out}/joiner-epoch-99-avg-1.onnx"
    joiner_dim = joiner.output_linear.in_features
    onnx_export(joiner, (torch.rand(11, joiner_dim), torch.rand(11, joiner_dim)), join_path, opset_version=13,
                input_names=["encoder_out", "decoder_out"], output_names=["logit"],
                dynamic_axes={"encoder_out": {0: "N"}, "decoder_out": {0: "N"}, "logit": {0: "N"}})
    add_metadata(join_path, {"joiner_dim": str(joiner_dim)})
    write_tokens(out, pieces)


# ---- the reference decoder ------------------------------------------------------------------

class ContextGraph:
    """Aho-Corasick hotword trie as src/decode/context_graph.cpp: a unit that extends a match earns
    bonus_per_unit; a broken match gives back what it earned; a completed phrase keeps it."""

    def __init__(self, phrases, bonus):
        self.unit, self.score, self.is_end, self.fail, self.children = [-1], [0.0], [False], [0], [{}]
        for phrase in phrases:
            node = 0
            for unit in phrase:
                nxt = self.children[node].get(unit)
                if nxt is None:
                    nxt = len(self.unit)
                    self.unit.append(unit)
                    self.score.append(self.score[node] + bonus)
                    self.is_end.append(False)
                    self.fail.append(0)
                    self.children.append({})
                    self.children[node][unit] = nxt
                node = nxt
            self.is_end[node] = True
        queue = list(self.children[0].values())
        for node in queue:
            self.fail[node] = 0
        i = 0
        while i < len(queue):
            node = queue[i]
            i += 1
            for unit, nxt in sorted(self.children[node].items()):
                fail = self.fail[node]
                while fail != 0 and unit not in self.children[fail]:
                    fail = self.fail[fail]
                target = self.children[fail].get(unit, -1)
                self.fail[nxt] = target if target >= 0 and target != nxt else 0
                queue.append(nxt)

    def forward(self, state, unit):
        nxt = self.children[state].get(unit, -1)
        if nxt < 0:
            nxt = 0
            if state != 0:
                fail = self.fail[state]
                while fail != 0 and unit not in self.children[fail]:
                    fail = self.fail[fail]
                nxt = max(self.children[fail].get(unit, -1), 0)
        delta = self.score[nxt] - self.score[state]
        return delta, (0 if self.is_end[nxt] else nxt)

    def finalize(self, state):
        return -self.score[state]


def encode_hotword(text):
    marked = "".join("\u2581" + w for w in text.split())
    for candidate in (marked, marked.upper(), marked.lower()):
        ids, pos, ok = [], 0, True
        while pos < len(candidate):
            for length in range(min(len(candidate) - pos, max(len(p) for p in PIECES)), 0, -1):
                piece = candidate[pos:pos + length]
                if piece in PIECES and PIECES.index(piece) != 0:
                    ids.append(PIECES.index(piece))
                    pos += length
                    break
            else:
                ok = False
                break
        if ok:
            return ids
    raise ValueError(f"hotword {text!r} has no units")


def detokenize(ids):
    return " ".join("".join(PIECES[i] for i in ids).replace("\u2581", " ").split())


def features(path):
    import torchaudio
    with wave.open(path) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getframerate() == 16000, path
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32)
    wave_t = torch.from_numpy(samples.astype(np.float64)).unsqueeze(0)  # int16 scale, as sherpa-onnx
    feats = torchaudio.compliance.kaldi.fbank(wave_t, num_mel_bins=NUM_BINS, dither=0.0, snip_edges=False,
                                              low_freq=20.0, high_freq=-400.0, sample_frequency=16000.0,
                                              energy_floor=0.0)
    return feats.float()


def chunks(feats, T, shift):
    """(chunk [T, bins], valid output frames) as the Recognizer cuts a stream."""
    out, consumed, total = [], 0, feats.shape[0]
    while total - consumed >= T:
        out.append((feats[consumed:consumed + T], shift // 4))
        consumed += shift
    while consumed < total:
        rest = feats[consumed:]
        pad = torch.full((T - rest.shape[0], NUM_BINS), SILENCE_FEATURE)
        out.append((torch.cat([rest, pad]), -(-min(rest.shape[0], shift) // 4)))
        consumed += shift
    return out


def log_softmax(logits):
    return torch.log_softmax(logits.double(), dim=-1).float()


class Search:
    def __init__(self, decoder, joiner, search, beam, hotwords):
        self.decoder, self.joiner, self.search, self.beam, self.graph = decoder, joiner, search, beam, hotwords
        # (context, tokens [(unit, frame)], log_prob, context_state, last_emit_frame)
        self.hyps = [([-1] * (CONTEXT_SIZE - 1) + [0], [], 0.0, 0, -1)]
        self.frame = 0
        self.max_trailing_blank = 0
        self.cache = {}

    def dec(self, context):
        key = tuple(context)
        if key not in self.cache:
            self.cache[key] = self.decoder(torch.tensor([context], dtype=torch.int64))[0]
        return self.cache[key]

    def step(self, enc_frame):
        blank, unk = 0, PIECES.index("<unk>")
        if self.search == "greedy":
            context, tokens, lp_sum, state, last = self.hyps[0]
            lp = log_softmax(self.joiner(enc_frame.unsqueeze(0), self.dec(context).unsqueeze(0)))[0]
            best, best_score = 0, -math.inf
            for k in range(len(PIECES)):
                score = float(lp[k])
                if self.graph and k not in (blank, unk):
                    score += max(0.0, self.graph.forward(state, k)[0])
                if score > best_score:
                    best, best_score = k, score
            lp_sum += float(lp[best])
            if best not in (blank, unk):
                if self.graph:
                    bonus, state = self.graph.forward(state, best)
                    lp_sum += bonus
                tokens = tokens + [(best, self.frame)]
                context = context[1:] + [best]
                last = self.frame
            self.hyps = [(context, tokens, lp_sum, state, last)]
        else:
            cands = []
            for i, (context, tokens, lp_sum, state, last) in enumerate(self.hyps):
                lp = log_softmax(self.joiner(enc_frame.unsqueeze(0), self.dec(context).unsqueeze(0)))[0]
                for k in range(len(PIECES)):
                    cands.append((lp_sum + float(lp[k]), i, k, float(lp[k])))
            cands.sort(key=lambda c: (-c[0], c[1], c[2]))
            nxt, index = [], {}
            for score, i, k, lpk in cands[: self.beam]:
                context, tokens, _, state, last = self.hyps[i]
                bonus = 0.0
                if k not in (blank, unk):
                    tokens = tokens + [(k, self.frame)]
                    context = context[1:] + [k]
                    last = self.frame
                    if self.graph:
                        bonus, state = self.graph.forward(state, k)
                key = tuple(t for t, _ in tokens)
                if key in index:
                    j = index[key]
                    c, t, old, s, l = nxt[j]
                    hi, lo = max(old, score + bonus), min(old, score + bonus)
                    nxt[j] = (c, t, hi + math.log1p(math.exp(lo - hi)), s, l)
                else:
                    index[key] = len(nxt)
                    nxt.append((context, tokens, score + bonus, state, last))
            self.hyps = nxt
        self.frame += 1
        best = self.best()
        self.max_trailing_blank = max(self.max_trailing_blank, self.frame - (best[4] + 1))

    def best(self):
        if self.search == "greedy":
            return self.hyps[0]
        return max(self.hyps, key=lambda h: h[2] / (len(h[0]) + len(h[1])))


def reference(args):
    meta = torch.load(f"{args.dir}/weights.pt")
    encoder, decoder, joiner = make_models(meta["kind"], meta["seed"], meta.get("layers", 2), meta.get("dim", 64))
    graph = None
    if args.hotwords:
        with open(args.hotwords, encoding="utf-8") as f:
            phrases = [encode_hotword(line.strip()) for line in f if line.strip()]
        graph = ContextGraph(phrases, args.hotword_bonus)
    # voxrt's endpoint rules in output frames (40 ms): rule2 1.2 s of blanks after a unit, rule1 2.4 s.
    rule2_frames, rule1_frames = 30, 60
    with torch.no_grad():
        for path in args.wavs:
            feats = features(path)
            if meta["kind"] == "ctc":
                states, ids, previous, trailing, max_trailing, any_unit = encoder.init_states(1), [], -1, 0, 0, False
                endpoint_free = True
                for chunk, valid in chunks(feats, encoder.T, encoder.decode_chunk_len):
                    log_probs, states = encoder.run(chunk.unsqueeze(0), states, None)
                    for t in range(valid):
                        best = int(log_probs[0, t].argmax())
                        if best == 0:
                            trailing += 1
                        else:
                            trailing, any_unit = 0, True
                            if best != previous:
                                ids.append(best)
                        previous = best
                        if (any_unit and trailing >= rule2_frames) or trailing >= rule1_frames:
                            endpoint_free = False
                print(json.dumps({"file": path, "text": detokenize(ids), "endpoint_free": endpoint_free}))
                continue
            search = Search(decoder, joiner, args.search, args.beam, graph)
            states = encoder.init_states(1)
            processed = 0
            endpoint_free = True
            for chunk, valid in chunks(feats, encoder.T, encoder.decode_chunk_len):
                enc, states = encoder.run(chunk.unsqueeze(0), states, torch.tensor([processed], dtype=torch.int64))
                processed += encoder.decode_chunk_len
                for t in range(valid):
                    search.step(enc[0, t])
                    best = search.best()
                    trailing = search.frame - (best[4] + 1)
                    if (best[1] and trailing >= rule2_frames) or trailing >= rule1_frames:
                        endpoint_free = False
            best = search.best()
            print(json.dumps({"file": path, "text": detokenize([t for t, _ in best[1]]), "endpoint_free": endpoint_free,
                              "frames": search.frame}))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir")
    e.add_argument("--type", choices=["lstm", "conformer", "zipformer2", "ctc"], default="lstm")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--layers", type=int, default=2, help="conformer layers")
    e.add_argument("--dim", type=int, default=64, help="conformer width")
    e.add_argument("--vocab", type=int, default=0, help="tokens (default: the test's 32)")
    r = sub.add_parser("reference")
    r.add_argument("dir")
    r.add_argument("wavs", nargs="+")
    r.add_argument("--search", choices=["greedy", "beam"], default="greedy")
    r.add_argument("--beam", type=int, default=8)
    r.add_argument("--hotwords")
    r.add_argument("--hotword-bonus", type=float, default=1.5)
    args = parser.parse_args()
    if args.command == "export":
        export(args.dir, args.type, args.seed, args.layers, args.dim, args.vocab or None)
    else:
        reference(args)


if __name__ == "__main__":
    main()
