"""NeMo Conformer-CTC exports built from code with random weights (Debian's torch 1.13, /usr/bin/python3),
NeMo's log-mel front end written from NeMo's definitions, and a straightforward reference decoder, for
voxrt's NeMo import tests (tests/models/nemo_ctc_test.cpp).

  export DIR --layout sherpa|nemo|nemo-char [--seed N] [--normalize per_feature|all_features|NA]
             [--subsampling 4|8] [--length-name NAME]
      sherpa: model.onnx with the metadata_props sherpa-onnx's scripts/nemo/*/export-onnx-ctc*.py write
              (vocab_size, normalize_type, subsampling_factor, model_type, ...) and tokens.txt whose last
              line is <blk>
      nemo-char: the same for a character model (EncDecCTCModel): labels in model_config.yaml, no tokenizer
      nemo:   what NeMo's model.export() writes (model.onnx, no metadata) next to the files of the .nemo
              archive as `tar xf` leaves them: model_config.yaml (preprocessor settings, tokenizer section)
              and the SentencePiece tokenizer's files under hashed names (<hash>_tokenizer.vocab,
              <hash>_vocab.txt; the .model file is not made here: no SentencePiece trainer on our machines)
      both: weights.pt (the torch module's state) and frontend.json (the preprocessor settings)
  frontend DIR WAV OUT   NeMo's features of WAV with DIR/frontend.json's settings: OUT gets float32
                         [n_mels, frames] (row-major) after a line-free header of two int32 (n_mels, frames)
  reference DIR [--segment-hops N] [--search greedy|beam] [--beam K] WAV...
                         one JSON line per file: {"file", "text", "ids"}: the front end above, the torch forward of
                         the same module on the whole utterance, greedy CTC (or a CTC prefix beam search with
                         voxrt's default pruning, no LM) with the blank as the LAST id

The export follows NeMo's exporter (read, not copied): inputs audio_signal [B, n_mels, T] float and length [B]
int64, output logprobs [B, T', vocab + 1] (log-softmax inside, the blank last), dynamic axes named
<name>_dynamic_axes_<k> as NeMo's Exportable names them. The module is a small stand-in of a Conformer-CTC of
the same shape (Conv2d subsampling by 4, or by 8 as FastConformer, with NeMo's length rule, one Conformer block whose attention and
convolution mask the frames past `length`, a 1x1 Conv1d decoder), not NeMo's code.

The front end is NeMo's FilterbankFeatures in inference mode: pre-emphasis over the whole signal, torch.stft
centred (n_fft // 2 zeros each side: pad_mode constant, as current NeMo), a symmetric hann window of
window_size samples inside n_fft, power spectrum, Slaney mel filterbank with Slaney area normalisation
(librosa.filters.mel's defaults, written out here from its definition), log(x + 2^-24), then per_feature
(mean and unbiased std + 1e-5 over the utterance's frames per mel bin) or all_features normalisation, then
zero padding up to a multiple of pad_to. The audio is cut to whole hops first, as voxrt's driver hands the
family whole 10 ms hops (docs/model_contract.md).
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

N_MELS = 80
D_MODEL = 64
HEADS = 4
# SentencePiece-style pieces as NeMo's BPE models list them (<unk> first, the word marker U+2581).
PIECES = ["<unk>"] + ["\u2581" + c for c in "ABCDEFGHIJ"] + list("ABCDEFGHIJKL")
BLANK = len(PIECES)  # NeMo: the blank is the last class, after the tokenizer's pieces
# A character model's labels (EncDecCTCModel: decoder.vocabulary), as many as the pieces.
CHARS = [" ", "'"] + list("abcdefghijklmnopqrstu")
assert len(CHARS) == len(PIECES)
FRONTEND = {
    "sample_rate": 16000,
    "window_size": 0.025,
    "window_stride": 0.01,
    "n_fft": 512,
    "features": N_MELS,
    "preemph": 0.97,
    "log_zero_guard_value": 2.0 ** -24,
    "normalize": "per_feature",
    "pad_to": 0,
}


def nemo_length_after_conv(lengths, layers=2):
    # NeMo's ConvSubsampling.calc_length for kernel 3, stride 2, padding 1: floor((L + 2 - 3) / 2 + 1).
    for _ in range(layers):
        lengths = torch.floor((lengths.to(torch.float32) - 1.0) / 2.0 + 1.0).to(torch.int64)
    return lengths


class ConvSubsampling(nn.Module):
    """Stride-2 Conv2d layers: two (Conformer's striding, by 4) or three (FastConformer's factor 8;
    its dw_striding layers are depthwise-separable, with the same length rule)."""

    def __init__(self, factor, channels=8):
        super().__init__()
        layers = [nn.Conv2d(1, channels, 3, 2, 1), nn.ReLU()]
        for _ in range(int(math.log2(factor)) - 1):
            layers += [nn.Conv2d(channels, channels, 3, 2, 1), nn.ReLU()]
        self.conv = nn.Sequential(*layers)
        self.layers = int(math.log2(factor))
        self.out = nn.Linear(channels * (N_MELS // factor), D_MODEL)

    def forward(self, x, lengths):
        # x [B, n_mels, T] -> [B, 1, T, n_mels] as NeMo's pre_encode takes it.
        x = self.conv(x.transpose(1, 2).unsqueeze(1))
        b, c, t, f = x.shape
        x = self.out(x.transpose(1, 2).reshape(b, t, c * f))
        return x, nemo_length_after_conv(lengths, self.layers)


class MultiHeadAttention(nn.Module):
    """Self-attention as NeMo's MultiHeadAttention computes it: scores of masked keys set to -10000
    before the softmax, and the probabilities of masked (query, key) pairs zeroed after it."""

    def __init__(self):
        super().__init__()
        self.linear_q = nn.Linear(D_MODEL, D_MODEL)
        self.linear_k = nn.Linear(D_MODEL, D_MODEL)
        self.linear_v = nn.Linear(D_MODEL, D_MODEL)
        self.linear_out = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x, att_mask):
        # att_mask [B, T, T]: True where the query or the key lies past the utterance's length.
        b, t, _ = x.shape
        d_k = D_MODEL // HEADS
        q = self.linear_q(x).view(b, t, HEADS, d_k).transpose(1, 2)
        k = self.linear_k(x).view(b, t, HEADS, d_k).transpose(1, 2)
        v = self.linear_v(x).view(b, t, HEADS, d_k).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
        mask = att_mask.unsqueeze(1)
        attn = torch.softmax(scores.masked_fill(mask, -10000.0), dim=-1).masked_fill(mask, 0.0)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, t, D_MODEL)
        return self.linear_out(out)


class ConformerBlock(nn.Module):
    def __init__(self, kernel=5):
        super().__init__()
        self.ff1 = nn.Sequential(nn.LayerNorm(D_MODEL), nn.Linear(D_MODEL, 2 * D_MODEL), nn.SiLU(), nn.Linear(2 * D_MODEL, D_MODEL))
        self.norm_att = nn.LayerNorm(D_MODEL)
        self.att = MultiHeadAttention()
        self.norm_conv = nn.LayerNorm(D_MODEL)
        self.pointwise1 = nn.Conv1d(D_MODEL, 2 * D_MODEL, 1)
        self.depthwise = nn.Conv1d(D_MODEL, D_MODEL, kernel, padding=kernel // 2, groups=D_MODEL)
        self.batch_norm = nn.BatchNorm1d(D_MODEL)
        self.pointwise2 = nn.Conv1d(D_MODEL, D_MODEL, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(D_MODEL), nn.Linear(D_MODEL, 2 * D_MODEL), nn.SiLU(), nn.Linear(2 * D_MODEL, D_MODEL))
        self.norm_out = nn.LayerNorm(D_MODEL)

    def forward(self, x, pad_mask):
        # pad_mask [B, T]: True past the utterance's length (NeMo masks attention keys and the
        # convolution's input there, so padded frames never reach valid ones).
        x = x + 0.5 * self.ff1(x)
        h = self.norm_att(x)
        valid = ~pad_mask
        att_mask = ~(valid.unsqueeze(1) & valid.unsqueeze(2))
        x = x + self.att(h, att_mask)
        h = self.norm_conv(x).transpose(1, 2)
        h = nn.functional.glu(self.pointwise1(h), dim=1)
        h = h.masked_fill(pad_mask.unsqueeze(1), 0.0)
        h = self.pointwise2(nn.functional.silu(self.batch_norm(self.depthwise(h))))
        x = x + h.transpose(1, 2)
        x = x + 0.5 * self.ff2(x)
        return self.norm_out(x)


class TinyConformerCtc(nn.Module):
    """audio_signal [B, n_mels, T], length [B] -> logprobs [B, T', len(PIECES) + 1]."""

    def __init__(self, subsampling):
        super().__init__()
        self.pre_encode = ConvSubsampling(subsampling)
        self.block = ConformerBlock()
        self.decoder = nn.Conv1d(D_MODEL, len(PIECES) + 1, 1)

    def forward(self, audio_signal, length):
        x, lengths = self.pre_encode(audio_signal, length)
        steps = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        pad_mask = steps >= lengths.unsqueeze(1)
        x = self.block(x, pad_mask)
        logits = self.decoder(x.transpose(1, 2)).transpose(1, 2)
        return torch.log_softmax(logits, dim=-1)


def make_model(seed, subsampling=4):
    torch.manual_seed(seed)
    model = TinyConformerCtc(subsampling)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm1d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
        # Random weights put every frame's logits on one class (the encoder's output has a large
        # common part); a decoder bias that cancels that part on seeded random features, plus a
        # blank bias, makes the greedy path alternate between blanks and several pieces.
        model.decoder.weight.mul_(6.0)
        g = torch.Generator().manual_seed(1)
        feats = torch.randn(4, N_MELS, 300, generator=g)
        x, _ = model.eval().pre_encode(feats, torch.full((4,), 300))
        common = model.block(x, torch.zeros(4, x.shape[1], dtype=torch.bool)).mean(dim=(0, 1))
        model.decoder.bias.copy_(-(model.decoder.weight[:, :, 0] @ common))
        # (Factor 8 has half the frames: a smaller blank bias keeps several pieces per clip.)
        model.decoder.bias[BLANK] += 2.0 if subsampling == 4 else 0.0
        model.decoder.bias[0] = -100.0  # <unk> never wins
    return model.eval()


# ---- the front end -----------------------------------------------------------------------------


def hz_to_mel_slaney(f):
    f = np.asarray(f, dtype=np.float64)
    f_sp = 200.0 / 3.0
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)


def mel_to_hz_slaney(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp = 200.0 / 3.0
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)


def slaney_mel_filterbank(sample_rate, n_fft, n_mels, fmin=0.0, fmax=None):
    """librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax) with its defaults (htk False, norm 'slaney')."""
    fmax = sample_rate / 2.0 if fmax is None else fmax
    fft_freqs = np.linspace(0.0, sample_rate / 2.0, 1 + n_fft // 2)
    mel_points = mel_to_hz_slaney(np.linspace(hz_to_mel_slaney(fmin), hz_to_mel_slaney(fmax), n_mels + 2))
    widths = np.diff(mel_points)
    ramps = mel_points[:, None] - fft_freqs[None, :]
    weights = np.zeros((n_mels, 1 + n_fft // 2), dtype=np.float32)
    for i in range(n_mels):
        lower = -ramps[i] / widths[i]
        upper = ramps[i + 2] / widths[i + 1]
        weights[i] = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_points[2 : n_mels + 2] - mel_points[:n_mels]))[:, None]
    return weights


def nemo_features(samples, cfg, whole_hops=True):
    """NeMo's FilterbankFeatures.forward (eval: no dither) on one utterance: [n_mels, frames] float32.
    whole_hops: cut the audio to whole hops first (the offline family's driver hands it whole hops;
    a streaming front end sees every sample, as NeMo does)."""
    sr = cfg["sample_rate"]
    hop = int(round(cfg["window_stride"] * sr))
    win = int(round(cfg["window_size"] * sr))
    n_fft = cfg.get("n_fft") or 2 ** math.ceil(math.log2(win))
    if whole_hops:
        samples = samples[: len(samples) // hop * hop]
    x = torch.from_numpy(np.asarray(samples, dtype=np.float32)).unsqueeze(0)
    preemph = cfg.get("preemph")
    if preemph:
        x = torch.cat((x[:, :1], x[:, 1:] - preemph * x[:, :-1]), dim=1)
    window = torch.hann_window(win, periodic=False)
    spec = torch.stft(x, n_fft=n_fft, hop_length=hop, win_length=win, center=True, window=window,
                      return_complex=True, pad_mode="reflect" if cfg.get("reflect_pad") else "constant")
    power = torch.view_as_real(spec).pow(2).sum(-1)
    fb = torch.from_numpy(slaney_mel_filterbank(sr, n_fft, cfg["features"], cfg.get("lowfreq", 0.0), cfg.get("highfreq")))
    mel = torch.matmul(fb, power)
    x = torch.log(mel + cfg["log_zero_guard_value"])[0]
    frames = len(samples) // hop + 1
    x = x[:, :frames]
    if cfg["normalize"] == "per_feature":
        mean = x.mean(dim=1, keepdim=True)
        std = x.std(dim=1, keepdim=True) + 1e-5
        x = (x - mean) / std
    elif cfg["normalize"] == "all_features":
        x = (x - x.mean()) / (x.std() + 1e-5)
    pad_to = cfg.get("pad_to", 0) or 0
    if pad_to > 0 and x.shape[1] % pad_to:
        x = nn.functional.pad(x, (0, pad_to - x.shape[1] % pad_to))
    return x.numpy().astype(np.float32), frames


def log_add(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    m = max(a, b)
    return m + math.log1p(math.exp(-abs(a - b)))


def prefix_beam_search(logprobs, beam, blank, max_units=8, unit_prune=-10.0):
    """CTC prefix beam search without an LM (voxrt's defaults: per frame at most max_units units
    whose log-posterior is at least unit_prune are extended); returns the best prefix's ids."""
    hyps = {(): (0.0, -math.inf)}  # prefix -> (log p ending in blank, log p ending in its last unit)
    for row in logprobs.tolist():
        units = sorted(((lp, u) for u, lp in enumerate(row) if u != blank and lp >= unit_prune), reverse=True)[:max_units]
        nxt = {}

        def add(prefix, pb=-math.inf, pnb=-math.inf):
            ob, onb = nxt.get(prefix, (-math.inf, -math.inf))
            nxt[prefix] = (log_add(ob, pb), log_add(onb, pnb))

        for prefix, (pb, pnb) in hyps.items():
            total = log_add(pb, pnb)
            add(prefix, pb=total + row[blank])
            for lp, u in units:
                if prefix and prefix[-1] == u:
                    add(prefix, pnb=pnb + lp)
                    if pb != -math.inf:
                        add(prefix + (u,), pnb=pb + lp)
                else:
                    add(prefix + (u,), pnb=total + lp)
        hyps = dict(sorted(nxt.items(), key=lambda kv: log_add(*kv[1]), reverse=True)[:beam])
    return list(max(hyps.items(), key=lambda kv: log_add(*kv[1]))[0])


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getframerate() == 16000, path
        data = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    return data.astype(np.float32) / 32768.0


# ---- the two layouts ---------------------------------------------------------------------------


def sentencepiece_model_bytes(pieces):
    """A SentencePiece ModelProto holding only `pieces` (field 1: SentencePiece {1: piece, 2: score,
    3: type}), in protobuf's wire format written by hand (Debian's Python has no protobuf module for
    sentencepiece's schema). The first piece is <unk> (type 2), the others normal (1)."""
    import struct

    def varint(n):
        out = bytearray()
        while True:
            byte, n = n & 0x7F, n >> 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    model = bytearray()
    for i, piece in enumerate(pieces):
        text = piece.encode("utf-8")
        body = b"\x0a" + varint(len(text)) + text + b"\x15" + struct.pack("<f", -float(i))
        body += b"\x18" + varint(2 if i == 0 else 1)
        model += b"\x0a" + varint(len(body)) + body
    return bytes(model)


def write_nemo_tokenizer(folder, prefix="3f9c2a1b7d8e4c5fa0b1c2d3e4f5a6b7_"):
    """The SentencePiece tokenizer's artifacts as a BPE model's .nemo archive holds them (hashed names:
    <hash>_tokenizer.model, <hash>_tokenizer.vocab, <hash>_vocab.txt); returns model_config.yaml's
    tokenizer section."""
    with open(os.path.join(folder, prefix + "tokenizer.model"), "wb") as f:
        f.write(sentencepiece_model_bytes(PIECES))
    with open(os.path.join(folder, prefix + "tokenizer.vocab"), "w", encoding="utf-8") as f:
        for i, piece in enumerate(PIECES):
            f.write(f"{piece}\t{0.0 if i == 0 else -float(i)}\n")
    with open(os.path.join(folder, prefix + "vocab.txt"), "w", encoding="utf-8") as f:
        for piece in PIECES[1:]:
            f.write((piece[1:] if piece.startswith("\u2581") else "##" + piece) + "\n")
    return f"""tokenizer:
  dir: null
  type: bpe
  model_path: nemo:{prefix}tokenizer.model
  vocab_path: nemo:{prefix}vocab.txt
  spe_tokenizer_vocab: nemo:{prefix}tokenizer.vocab
"""


def export(args):
    os.makedirs(args.dir, exist_ok=True)
    model = make_model(args.seed, args.subsampling)
    cfg = dict(FRONTEND, normalize=args.normalize, subsampling=args.subsampling)
    torch.save(model.state_dict(), os.path.join(args.dir, "weights.pt"))
    with open(os.path.join(args.dir, "frontend.json"), "w") as f:
        json.dump(cfg, f)
    path = os.path.join(args.dir, "model.onnx")
    audio_signal = torch.randn(2, N_MELS, 203)
    length = torch.tensor([203, 150], dtype=torch.int64)
    dynamic_axes = {
        "audio_signal": {0: "audio_signal_dynamic_axes_1", 2: "audio_signal_dynamic_axes_2"},
        args.length_name: {0: args.length_name + "_dynamic_axes_1"},
        "logprobs": {0: "logprobs_dynamic_axes_1", 1: "logprobs_dynamic_axes_2"},
    }
    torch.onnx.export(model, (audio_signal, length), path, opset_version=13, input_names=["audio_signal", args.length_name],
                      output_names=["logprobs"], dynamic_axes=dynamic_axes)
    if args.layout == "sherpa":
        import onnx

        m = onnx.load(path)
        meta = {
            "vocab_size": str(len(PIECES) + 1),
            "normalize_type": "" if args.normalize == "NA" else args.normalize,
            "subsampling_factor": str(args.subsampling),
            "model_type": "EncDecCTCModelBPE",
            "version": "1",
            "model_author": "NeMo",
            "comment": "voxrt test stand-in",
        }
        for k, v in meta.items():
            p = m.metadata_props.add()
            p.key, p.value = k, v
        onnx.save(m, path)
        with open(os.path.join(args.dir, "tokens.txt"), "w", encoding="utf-8") as f:
            for i, piece in enumerate(PIECES):
                f.write(f"{piece} {i}\n")
            f.write(f"<blk> {BLANK}\n")
    elif args.layout == "nemo-char":
        def items(indent):
            return "".join(f"\n{indent}- " + (f"'{c}'" if c != "'" else "\"'\"") for c in CHARS)

        # OmegaConf writes a key's list items at the key's own indentation (decoder.vocabulary);
        # the top-level labels are indented further, as hand-edited configs often are.
        yaml_text = f"""# EncDecCTCModel (characters), as OmegaConf writes model_config.yaml
sample_rate: 16000
labels:{items("  ")}
preprocessor:
  _target_: nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor
  sample_rate: 16000
  normalize: {args.normalize}
  window_size: 0.025
  window_stride: 0.01
  window: hann
  features: {N_MELS}
  n_fft: 512
  log: true
  frame_splicing: 1
  dither: 1.0e-05
  pad_to: 0
encoder:
  _target_: nemo.collections.asr.modules.ConformerEncoder
  subsampling: {"striding" if args.subsampling == 4 else "dw_striding"}
  subsampling_factor: {args.subsampling}
decoder:
  _target_: nemo.collections.asr.modules.ConvASRDecoder
  feat_in: {D_MODEL}
  num_classes: {len(CHARS)}
  vocabulary:{items("  ")}
"""
        with open(os.path.join(args.dir, "model_config.yaml"), "w", encoding="utf-8") as f:
            f.write(yaml_text)
    else:
        yaml_text = f"""sample_rate: 16000
log_prediction: true
ctc_reduction: mean_batch
{write_nemo_tokenizer(args.dir)}preprocessor:
  _target_: nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor
  sample_rate: 16000
  normalize: {args.normalize}
  window_size: 0.025
  window_stride: 0.01
  window: hann
  features: {N_MELS}
  n_fft: 512
  log: true
  frame_splicing: 1
  dither: 1.0e-05
  pad_to: 0
  pad_value: 0.0
encoder:
  _target_: nemo.collections.asr.modules.ConformerEncoder
  feat_in: {N_MELS}
  n_layers: 1
  d_model: {D_MODEL}
  subsampling: {"striding" if args.subsampling == 4 else "dw_striding"}
  subsampling_factor: {args.subsampling}
  n_heads: {HEADS}
  conv_kernel_size: 5
decoder:
  _target_: nemo.collections.asr.modules.ConvASRDecoder
  feat_in: {D_MODEL}
  num_classes: {len(PIECES)}
  vocabulary: []
target: nemo.collections.asr.models.ctc_bpe_models.EncDecCTCModelBPE
"""
        with open(os.path.join(args.dir, "model_config.yaml"), "w", encoding="utf-8") as f:
            f.write(yaml_text)


def frontend(args):
    with open(os.path.join(args.dir, "frontend.json")) as f:
        cfg = json.load(f)
    x, _ = nemo_features(read_wav(args.wav), cfg)
    with open(args.out, "wb") as f:
        f.write(np.array(x.shape, dtype=np.int32).tobytes())
        f.write(np.ascontiguousarray(x).tobytes())


def reference(args):
    with open(os.path.join(args.dir, "frontend.json")) as f:
        cfg = json.load(f)
    model = make_model(0, cfg.get("subsampling", 4))
    model.load_state_dict(torch.load(os.path.join(args.dir, "weights.pt")))
    hop = int(round(cfg["window_stride"] * cfg["sample_rate"]))
    for wav in args.wavs:
        samples = read_wav(wav)
        # Audio longer than a segment (voxrt.offline.max_frames hops) runs as consecutive
        # segments, each its own utterance for the front end and the model; their frames are
        # decoded as one sequence.
        step = args.segment_hops * hop if args.segment_hops > 0 else max(len(samples), 1)
        rows = []
        for begin in range(0, len(samples) // hop * hop, step):
            x, frames = nemo_features(samples[begin : begin + step], cfg)
            with torch.no_grad():
                logprobs = model(torch.from_numpy(x).unsqueeze(0), torch.tensor([frames], dtype=torch.int64))[0]
            valid = int(nemo_length_after_conv(torch.tensor([frames]), model.pre_encode.layers)[0])
            rows.append(logprobs[:valid])
        logprobs = torch.cat(rows) if rows else torch.zeros(0, BLANK + 1)
        if args.search == "beam":
            ids = prefix_beam_search(logprobs, args.beam, BLANK)
        else:
            ids, previous = [], -1
            for k in logprobs.argmax(dim=-1).tolist():
                if k != BLANK and k != previous:
                    ids.append(k)
                previous = k
        if os.path.exists(os.path.join(args.dir, "model_config.yaml")) and not any(
                name.endswith("tokenizer.vocab") for name in os.listdir(args.dir)):
            text = "".join(CHARS[i] for i in ids).strip()
        else:
            text = "".join(PIECES[i] for i in ids).replace("\u2581", " ").strip()
        print(json.dumps({"file": wav, "text": text, "ids": ids}))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir")
    e.add_argument("--layout", choices=["sherpa", "nemo", "nemo-char"], required=True)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--normalize", default="per_feature", choices=["per_feature", "all_features", "NA"])
    e.add_argument("--subsampling", type=int, default=4, choices=[4, 8], help="8: FastConformer's factor")
    e.add_argument("--length-name", default="length", help="the length input's name (for the import's error test)")
    fe = sub.add_parser("frontend")
    fe.add_argument("dir")
    fe.add_argument("wav")
    fe.add_argument("out")
    r = sub.add_parser("reference")
    r.add_argument("dir")
    r.add_argument("wavs", nargs="+")
    r.add_argument("--segment-hops", type=int, default=0, help="hops per segment (0: the whole file)")
    r.add_argument("--search", choices=["greedy", "beam"], default="greedy")
    r.add_argument("--beam", type=int, default=8)
    args = parser.parse_args()
    {"export": export, "frontend": frontend, "reference": reference}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
