"""A NeMo cache-aware streaming FastConformer-CTC built from code with random weights (Debian's torch
1.13, /usr/bin/python3), exported as sherpa-onnx's scripts/nemo/fast-conformer-hybrid-transducer-ctc/
export-onnx-ctc.py exports NeMo's streaming models, and a reference decoder that streams it chunk by
chunk as NeMo's cache-aware streaming loop does, for voxrt's import tests
(tests/models/nemo_cache_aware_test.cpp, tests/e2e/cli_nemo_cache_aware.sh).

  export DIR [--seed N]
      model.onnx: NeMo's export with cache support (set_export_config cache_support: the encoder's
              forward_for_export followed by the CTC decoder): inputs audio_signal [B, n_mels, T],
              length [B] int64, cache_last_channel [B, layers, cache, d_model], cache_last_time
              [B, layers, d_model, kernel - 1], cache_last_channel_len [B] int64; outputs logprobs
              [B, T', vocab + 1], encoded_lengths, cache_last_channel_next, cache_last_time_next,
              cache_last_channel_next_len; dynamic axes named <name>_dynamic_axes_<k> on the axes
              NeMo's port types call B and T; sherpa-onnx's metadata_props (vocab_size without the
              blank, window_size, chunk_shift, normalize_type "" for NA, cache_last_channel_dim1..3,
              cache_last_time_dim1..3, subsampling_factor 8, model_type, version, model_author, comment)
      tokens.txt (pieces, <blk> last), weights.pt, frontend.json
  export DIR --layout nemo [--model rnnt] [--config-override KEY=VALUE]
      the same model (same seed, same weights) as NeMo's own model.export() with cache support writes it,
      without metadata_props: fastconformer_streaming_ctc.onnx, or for rnnt
      encoder-fastconformer_streaming_rnnt.onnx and decoder_joint-fastconformer_streaming_rnnt.onnx
      (RNNTDecoderJoint: encoder_outputs, targets, target_length, input_states_1/2 -> outputs,
      prednet_lengths, output_states_1/2), beside the .nemo archive's model_config.yaml (the encoder,
      preprocessor, tokenizer and decoder/joint sections as OmegaConf writes them) and the tokenizer's
      <hash>_tokenizer.vocab and <hash>_vocab.txt; weights.pt and frontend.json for the reference
  frontend DIR WAV OUT   NeMo's features of every sample of WAV (normalize NA): OUT gets two int32 (n_mels,
                         frames) then float32 [n_mels, frames] row-major
  reference DIR [--zero-caches] [--search greedy|beam] [--beam K] WAV...
      one JSON line per file: {"file", "text", "ids"}

The module is a small stand-in of NeMo's ConformerEncoder in its cache-aware configuration, written from
NeMo's definitions (read, not copied): dw_striding subsampling by 8 with causal (CausalConv2D) convolutions
and the length mask between its layers (MaskedConvSequential), xscaled relative positional encoding,
RelPositionMultiHeadAttention with pos_bias_u / pos_bias_v and rel_shift, att_context_style
chunked_limited with att_context_size [12, 3] (chunks of 4 encoder frames, 3 chunks of left context: the
last-channel cache holds 12 frames), a causal depthwise convolution (kernel 9, conv_norm_type layer_norm:
the last-time cache holds 8 frames), NeMo's masks (_create_masks with the cache offset), cache updates and
streaming_post_process(keep_all_outputs=False); ConvASRDecoder (1x1 Conv1d, log-softmax) on top.
setup_streaming_params gives chunk_size [25, 32], shift_size [25, 32], pre_encode_cache_size [0, 9],
drop_extra_pre_encoded 2, valid_out_len 4; the export bakes in the steady-state values (32 new frames,
9 frames of pre-encode cache, 2 pre-encoded frames dropped), so sherpa-onnx writes window_size 41 and
chunk_shift 32.

The reference is NeMo's streaming loop (CacheAwareStreamingAudioBuffer with pad_and_drop_preencoded, the
mode whose every step is the exported graph's: conformer_stream_step then drops drop_extra_pre_encoded
frames on the first step too): the features of the whole file as NeMo's preprocessor computes them
(normalize NA, no pad_to), each step's chunk the 9 feature frames before it (zeros before the start) and
its 32 frames, length = 9 + the frames the chunk holds; the stream's last chunk zero-padded to 32
frames with that length (what NeMo's buffer does for a stream shorter than the batch's longest), the caches
carried from step to step starting from zeros, and greedy CTC (blank last) over each step's
encoded_lengths frames. It runs the torch module (the graph that was exported), not onnxruntime: Debian's
Python has no onnxruntime (the C++ test compares the engine with onnxruntime-node instead).
--zero-caches starts every step from zero caches (a broken cache), for the tests' negative check.
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
import nemo_transducer  # noqa: E402
from nemo_ctc import BLANK, PIECES, nemo_features, prefix_beam_search, read_wav  # noqa: E402

N_MELS = 80
D_MODEL = 32
HEADS = 4
LAYERS = 2
CONV_KERNEL = 9
SUB_CHANNELS = 8
SUBSAMPLING = 8
ATT_CONTEXT = [12, 3]  # [left, right] encoder frames
CHUNK_OUT = ATT_CONTEXT[1] + 1  # encoder frames per chunk
CACHE_CHANNEL = ATT_CONTEXT[0]  # last_channel_cache_size
CACHE_TIME = CONV_KERNEL - 1  # conv_context_size[0]
# setup_streaming_params with sampling_frames [1, 8] and pre_encode cache [0, 9]:
CHUNK_FRAMES = SUBSAMPLING + SUBSAMPLING * ATT_CONTEXT[1]  # chunk_size[1] = shift_size[1]
PRE_ENCODE_CACHE = SUBSAMPLING + 1
DROP_EXTRA = 1 + (PRE_ENCODE_CACHE - 1) // SUBSAMPLING
VALID_OUT_LEN = (CHUNK_FRAMES - SUBSAMPLING) // SUBSAMPLING + 1
FRONTEND = {
    "sample_rate": 16000,
    "window_size": 0.025,
    "window_stride": 0.01,
    "n_fft": 512,
    "features": N_MELS,
    "preemph": 0.97,
    "log_zero_guard_value": 2.0 ** -24,
    "normalize": "NA",
    "pad_to": 0,
}


class CausalConv2d(nn.Conv2d):
    """CausalConv2D: kernel - 1 zeros before and stride - 1 after, on time and frequency."""

    def forward(self, x):
        k, s = self.kernel_size[0], self.stride[0]
        return super().forward(nn.functional.pad(x, (k - 1, s - 1, k - 1, s - 1)))


class CausalDwStridingSubsampling(nn.Module):
    """ConvSubsampling('dw_striding', factor 8, is_causal) with MaskedConvSequential's length mask:
    x [B, T, n_mels] -> [B, T', d_model]; each stride-2 layer maps a length L to L // 2 + 1."""

    def __init__(self):
        super().__init__()
        c = SUB_CHANNELS
        self.conv = nn.ModuleList([CausalConv2d(1, c, 3, 2), nn.ReLU()])
        for _ in range(int(math.log2(SUBSAMPLING)) - 1):
            self.conv.extend([CausalConv2d(c, c, 3, 2, groups=c), nn.Conv2d(c, c, 1), nn.ReLU()])
        freq = N_MELS
        for _ in range(int(math.log2(SUBSAMPLING))):
            freq = freq // 2 + 1
        self.out = nn.Linear(c * freq, D_MODEL)

    @staticmethod
    def mask(x, lengths):
        steps = torch.arange(x.shape[2], device=x.device).unsqueeze(0)
        return (steps < lengths.unsqueeze(1)).to(x.dtype).unsqueeze(1).unsqueeze(-1)

    def forward(self, x, lengths):
        x = x.unsqueeze(1)
        for layer in self.conv:
            x = x * self.mask(x, lengths)
            x = layer(x)
            if isinstance(layer, CausalConv2d):
                lengths = torch.div(lengths, 2, rounding_mode="floor") + 1
        x = x * self.mask(x, lengths)
        b, c, t, f = x.shape
        return self.out(x.transpose(1, 2).reshape(b, t, c * f)), lengths


class RelPositionalEncoding(nn.Module):
    """Positions input_len - 1 down to -(input_len - 1) over the cache and the chunk; x scaled by
    sqrt(d_model) (xscaling)."""

    def __init__(self, max_len=512):
        super().__init__()
        positions = torch.arange(max_len - 1, -max_len, -1, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, D_MODEL, 2, dtype=torch.float32) * -(math.log(10000.0) / D_MODEL))
        pe = torch.zeros(positions.shape[0], D_MODEL)
        pe[:, 0::2] = torch.sin(positions * div)
        pe[:, 1::2] = torch.cos(positions * div)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)
        self.max_len = max_len

    def forward(self, x, cache_len):
        input_len = x.size(1) + cache_len
        center = self.max_len - 1  # the index of position 0
        return x * math.sqrt(D_MODEL), self.pe[:, center - input_len + 1 : center + input_len]


class RelPositionMultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.d_k = D_MODEL // HEADS
        self.linear_q = nn.Linear(D_MODEL, D_MODEL)
        self.linear_k = nn.Linear(D_MODEL, D_MODEL)
        self.linear_v = nn.Linear(D_MODEL, D_MODEL)
        self.linear_out = nn.Linear(D_MODEL, D_MODEL)
        self.linear_pos = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.pos_bias_u = nn.Parameter(torch.randn(HEADS, self.d_k) * 0.1)
        self.pos_bias_v = nn.Parameter(torch.randn(HEADS, self.d_k) * 0.1)

    @staticmethod
    def rel_shift(x):
        b, h, qlen, pos_len = x.size()
        x = nn.functional.pad(x, pad=(1, 0))
        x = x.view(b, h, -1, qlen)
        return x[:, :, 1:].view(b, h, qlen, pos_len)

    def forward(self, x, mask, pos_emb, cache):
        # update_cache (cache_drop_size 0): keys and values see the cache; the next cache is the
        # last CACHE_CHANNEL frames of cache + this chunk's queries.
        key = torch.cat([cache, x], dim=1)
        q_keep = x.shape[1]
        next_cache = torch.cat([cache[:, q_keep:, :], x[:, :q_keep, :]], dim=1)
        b, t1, _ = x.shape
        t2 = key.shape[1]
        q = self.linear_q(x).view(b, t1, HEADS, self.d_k)
        k = self.linear_k(key).view(b, t2, HEADS, self.d_k).transpose(1, 2)
        v = self.linear_v(key).view(b, t2, HEADS, self.d_k).transpose(1, 2)
        p = self.linear_pos(pos_emb).view(pos_emb.size(0), -1, HEADS, self.d_k).transpose(1, 2)
        q_u = (q + self.pos_bias_u).transpose(1, 2)
        q_v = (q + self.pos_bias_v).transpose(1, 2)
        matrix_bd = self.rel_shift(torch.matmul(q_v, p.transpose(-2, -1)))
        matrix_ac = torch.matmul(q_u, k.transpose(-2, -1))
        matrix_bd = matrix_bd[:, :, :, : matrix_ac.size(-1)]
        scores = (matrix_ac + matrix_bd) / math.sqrt(self.d_k)
        m = mask.unsqueeze(1)
        attn = torch.softmax(scores.masked_fill(m, -10000.0), dim=-1).masked_fill(m, 0.0)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, t1, D_MODEL)
        return self.linear_out(out), next_cache


class CausalConvolutionModule(nn.Module):
    """ConformerConvolution with conv_context_size causal and conv_norm_type layer_norm."""

    def __init__(self):
        super().__init__()
        self.pointwise_conv1 = nn.Conv1d(D_MODEL, 2 * D_MODEL, 1)
        self.depthwise_conv = nn.Conv1d(D_MODEL, D_MODEL, CONV_KERNEL, groups=D_MODEL)
        self.norm = nn.LayerNorm(D_MODEL)
        self.pointwise_conv2 = nn.Conv1d(D_MODEL, D_MODEL, 1)

    def forward(self, x, pad_mask, cache):
        x = nn.functional.glu(self.pointwise_conv1(x.transpose(1, 2)), dim=1)
        x = x.masked_fill(pad_mask.unsqueeze(1), 0.0)
        # CausalConv1D.update_cache: the cache replaces the left padding; the next cache is the
        # last kernel - 1 frames of cache + chunk.
        x = torch.cat([cache, x], dim=-1)
        next_cache = x[:, :, -cache.size(-1) :]
        x = self.depthwise_conv(x)
        x = self.norm(x.transpose(1, 2)).transpose(1, 2)
        x = self.pointwise_conv2(nn.functional.silu(x))
        return x.transpose(1, 2), next_cache


def feed_forward():
    return nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.SiLU(), nn.Linear(4 * D_MODEL, D_MODEL))


class ConformerLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_feed_forward1 = nn.LayerNorm(D_MODEL)
        self.feed_forward1 = feed_forward()
        self.norm_self_att = nn.LayerNorm(D_MODEL)
        self.self_attn = RelPositionMultiHeadAttention()
        self.norm_conv = nn.LayerNorm(D_MODEL)
        self.conv = CausalConvolutionModule()
        self.norm_feed_forward2 = nn.LayerNorm(D_MODEL)
        self.feed_forward2 = feed_forward()
        self.norm_out = nn.LayerNorm(D_MODEL)

    def forward(self, x, att_mask, pos_emb, pad_mask, cache_channel, cache_time):
        residual = x + 0.5 * self.feed_forward1(self.norm_feed_forward1(x))
        h, cache_channel = self.self_attn(self.norm_self_att(residual), att_mask, pos_emb, cache_channel)
        residual = residual + h
        h, cache_time = self.conv(self.norm_conv(residual), pad_mask, cache_time)
        residual = residual + h
        residual = residual + 0.5 * self.feed_forward2(self.norm_feed_forward2(residual))
        return self.norm_out(residual), cache_channel, cache_time


class CacheAwareConformerCtc(nn.Module):
    """forward = ExportableEncDecModel.forward_for_export with cache support: the encoder's
    forward_for_export (caches batch-first outside, layer-first inside), then the CTC decoder;
    ctc=False: the encoder's forward_for_export alone (outputs [B, D, T'], as the transducer
    export's encoder.onnx)."""

    def __init__(self, ctc=True):
        super().__init__()
        self.pre_encode = CausalDwStridingSubsampling()
        self.pos_enc = RelPositionalEncoding()
        self.layers = nn.ModuleList([ConformerLayer() for _ in range(LAYERS)])
        self.decoder = nn.Conv1d(D_MODEL, len(PIECES) + 1, 1) if ctc else None

    @staticmethod
    def masks(padding_length, max_audio_length, offset):
        # _create_masks for chunked_limited attention with the cache's offset.
        idx = torch.arange(0, max_audio_length, device=padding_length.device)
        chunk_idx = torch.div(idx, CHUNK_OUT, rounding_mode="trunc")
        diff = chunk_idx.unsqueeze(1) - chunk_idx.unsqueeze(0)
        att_mask = torch.logical_and(torch.le(diff, ATT_CONTEXT[0] // CHUNK_OUT), torch.ge(diff, 0)).unsqueeze(0)
        steps = idx.expand(padding_length.size(0), -1)
        pad_mask = torch.logical_and(steps < padding_length.unsqueeze(-1), steps >= offset.unsqueeze(-1))
        pad_for_att = pad_mask.unsqueeze(1).repeat([1, max_audio_length, 1])
        pad_for_att = torch.logical_and(pad_for_att, pad_for_att.transpose(1, 2))
        att_mask = ~torch.logical_and(pad_for_att, att_mask)
        return ~pad_mask, att_mask

    def forward(self, audio_signal, length, cache_last_channel, cache_last_time, cache_last_channel_len):
        cache_last_channel = cache_last_channel.transpose(0, 1)
        cache_last_time = cache_last_time.transpose(0, 1)
        x, length = self.pre_encode(audio_signal.transpose(1, 2), length)
        x = x[:, DROP_EXTRA:, :]
        length = (length - DROP_EXTRA).clamp(min=0)
        t = x.size(1)
        cache_keep_size = t
        max_audio_length = t + CACHE_CHANNEL
        padding_length = length + CACHE_CHANNEL
        offset = torch.neg(cache_last_channel_len) + CACHE_CHANNEL
        x, pos_emb = self.pos_enc(x, CACHE_CHANNEL)
        pad_mask, att_mask = self.masks(padding_length, max_audio_length, offset)
        pad_mask = pad_mask[:, CACHE_CHANNEL:]
        att_mask = att_mask[:, CACHE_CHANNEL:]
        next_channel, next_time = [], []
        for i, layer in enumerate(self.layers):
            x, c, k = layer(x, att_mask, pos_emb, pad_mask, cache_last_channel[i], cache_last_time[i])
            next_channel.append(c)
            next_time.append(k)
        next_channel = torch.stack(next_channel, dim=0)[:, :, -CACHE_CHANNEL:, :]
        next_time = torch.stack(next_time, dim=0)
        next_len = torch.clamp(cache_last_channel_len + cache_keep_size, max=CACHE_CHANNEL)
        # streaming_post_process(keep_all_outputs=False): valid_out_len frames at most.
        encoded = x.transpose(1, 2)[:, :, :VALID_OUT_LEN]
        encoded_len = torch.clamp(length, max=VALID_OUT_LEN)
        if self.decoder is None:
            return encoded, encoded_len, next_channel.transpose(0, 1), next_time.transpose(0, 1), next_len
        logprobs = torch.log_softmax(self.decoder(encoded).transpose(1, 2), dim=-1)
        return logprobs, encoded_len, next_channel.transpose(0, 1), next_time.transpose(0, 1), next_len


class LayerFirstCaches(nn.Module):
    """The model with its caches layer-first outside too ([layers, B, ...]): what an export without
    forward_for_export's transposes would take."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, audio_signal, length, cache_last_channel, cache_last_time, cache_last_channel_len):
        out, lengths, c, k, n = self.model(audio_signal, length, cache_last_channel.transpose(0, 1),
                                           cache_last_time.transpose(0, 1), cache_last_channel_len)
        return out, lengths, c.transpose(0, 1), k.transpose(0, 1), n


def zero_caches(batch):
    return (torch.zeros(batch, LAYERS, CACHE_CHANNEL, D_MODEL), torch.zeros(batch, LAYERS, D_MODEL, CACHE_TIME),
            torch.zeros(batch, dtype=torch.int64))


def stream_logprobs(model, features, zero_each_step=False):
    """NeMo's cache-aware streaming loop over [n_mels, N] features: the valid rows of each step's
    first output (log-probs [T, classes]; the encoder's frames [T, D] for ctc=False)."""
    frames = features.shape[1]
    caches = zero_caches(1)
    rows = []
    for start in range(0, frames, CHUNK_FRAMES):
        chunk = torch.zeros(1, N_MELS, PRE_ENCODE_CACHE + CHUNK_FRAMES)
        begin = max(0, start - PRE_ENCODE_CACHE)
        chunk[0, :, PRE_ENCODE_CACHE - (start - begin) : PRE_ENCODE_CACHE] = torch.from_numpy(features[:, begin:start])
        held = min(CHUNK_FRAMES, frames - start)
        chunk[0, :, PRE_ENCODE_CACHE : PRE_ENCODE_CACHE + held] = torch.from_numpy(features[:, start : start + held])
        length = torch.tensor([PRE_ENCODE_CACHE + held], dtype=torch.int64)
        if zero_each_step:
            caches = zero_caches(1)
        with torch.no_grad():
            logprobs, encoded_len, c, k, n = model(chunk, length, *caches)
        caches = (c, k, n)
        frames_first = logprobs[0] if model.decoder is not None else logprobs[0].transpose(0, 1)
        rows.append(frames_first[: int(encoded_len[0])])
    width = BLANK + 1 if model.decoder is not None else D_MODEL
    return torch.cat(rows) if rows else torch.zeros(0, width)


def synthetic_features(seed):
    """NeMo features of seeded noise bursts and tones: what make_model calibrates the decoder on."""
    rng = np.random.default_rng(seed)
    t = np.arange(16000 * 3) / 16000.0
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 1.3 * t)
    audio = 0.1 * envelope * (np.sin(2 * np.pi * 220 * t * (1 + t)) + 0.5 * rng.standard_normal(t.shape))
    return nemo_features(audio.astype(np.float32), FRONTEND, whole_hops=False)[0]


def make_model(seed):
    torch.manual_seed(seed)
    model = CacheAwareConformerCtc().eval()
    with torch.no_grad():
        # Random weights put every frame on one class (the encoder's output has a large common
        # part): a decoder bias that cancels that part over calibration audio makes the greedy path
        # alternate between blanks and several pieces.
        model.decoder.weight.mul_(8.0)
        model.decoder.bias.zero_()
        feats = synthetic_features(1)
        encoded = []
        hook = model.decoder.register_forward_hook(lambda m, i, o: encoded.append(i[0]))
        stream_logprobs(model, feats)
        hook.remove()
        common = torch.cat([e[0].transpose(0, 1) for e in encoded]).mean(dim=0)
        model.decoder.bias.copy_(-(model.decoder.weight[:, :, 0] @ common))
        model.decoder.bias[0] = -100.0  # <unk> never wins
    return model


def make_transducer(seed):
    """The encoder (ctc=False) with NeMo's RNNTDecoder and RNNTJoint stand-ins (nemo_transducer.py), the
    joint's bias calibrated on the streamed encoder's frames of the calibration audio."""
    torch.manual_seed(seed)
    encoder = CacheAwareConformerCtc(ctc=False).eval()
    decoder, joint = nemo_transducer.Decoder().eval(), nemo_transducer.Joint(False, encoder_dim=D_MODEL).eval()
    with torch.no_grad():
        joint.out.weight.mul_(20.0)
        frames = stream_logprobs(encoder, synthetic_features(1))  # [T, D]
        # (The blank's bias below is set on the repository's sample recording: on the synthetic audio
        # alone it stays too low for speech-like input.)
        sample = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../samples/play_music.wav")
        speech = stream_logprobs(encoder, nemo_features(read_wav(sample), FRONTEND, whole_hops=False)[0])
        nemo_transducer.calibrate_joint(joint, decoder, frames.t().unsqueeze(0))
        # The zero-state calibration above leaves this small encoder emitting max_symbols units per frame
        # (the prediction network's state after a unit favours more units): raise the blank's bias until
        # greedy search on the calibration audio emits fewer units than frames.
        zeros = torch.zeros(nemo_transducer.PRED_LAYERS, 1, nemo_transducer.PRED_HIDDEN)
        for _ in range(200):
            ids = nemo_transducer.greedy(speech, decoder, joint, False, 10, (BLANK, zeros, zeros, [], 0))[3]
            if len(ids) < 0.6 * speech.shape[0]:
                break
            joint.out.bias[BLANK] += 0.25
    return encoder, decoder, joint


NEMO_RNNT_FILE = "fastconformer_streaming_rnnt.onnx"


class DecoderJoint(nn.Module):
    """RNNTDecoderJoint: the prediction network, then the joint over its output and the encoder's."""

    def __init__(self, decoder, joint):
        super().__init__()
        self.decoder, self.joint = decoder, joint

    def forward(self, encoder_outputs, targets, target_length, input_states_1, input_states_2):
        g, lengths, h, c = self.decoder(targets, target_length, input_states_1, input_states_2)
        return self.joint(encoder_outputs, g), lengths, h, c


def export_decoder_joint(decoder, joint, path):
    """decoder_joint-<file>: RNNTDecoderJoint's names, and dynamic axes <name>_dynamic_axes_<k> on the axes
    its port types call B and T (the states' ('D', 'B', 'D'): the batch)."""
    layers, hidden = nemo_transducer.PRED_LAYERS, nemo_transducer.PRED_HIDDEN
    example = (torch.randn(2, D_MODEL, 1), torch.full((2, 1), BLANK, dtype=torch.int32),
               torch.ones(2, dtype=torch.int32), torch.zeros(layers, 2, hidden), torch.zeros(layers, 2, hidden))
    inputs = ["encoder_outputs", "targets", "target_length", "input_states_1", "input_states_2"]
    outputs = ["outputs", "prednet_lengths", "output_states_1", "output_states_2"]
    axes = {"encoder_outputs": [0, 2], "targets": [0, 1], "target_length": [0], "input_states_1": [1],
            "input_states_2": [1], "outputs": [0, 1, 2], "prednet_lengths": [0], "output_states_1": [1],
            "output_states_2": [1]}
    dynamic_axes = {name: {a: f"{name}_dynamic_axes_{k + 1}" for k, a in enumerate(dims)} for name, dims in axes.items()}
    torch.onnx.export(DecoderJoint(decoder, joint).eval(), example, path, opset_version=13, input_names=inputs,
                      output_names=outputs, dynamic_axes=dynamic_axes)


def export_transducer(args):
    import onnx

    encoder, decoder, joint = make_transducer(args.seed)
    torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict(), "joint": joint.state_dict()},
               os.path.join(args.dir, "weights.pt"))
    window = CHUNK_FRAMES + PRE_ENCODE_CACHE
    g = torch.Generator().manual_seed(3)
    example = (torch.randn(2, N_MELS, window, generator=g), torch.tensor([window, 20], dtype=torch.int64),
               torch.randn(2, LAYERS, CACHE_CHANNEL, D_MODEL, generator=g),
               torch.randn(2, LAYERS, D_MODEL, CACHE_TIME, generator=g), torch.tensor([5, 12], dtype=torch.int64))
    inputs = ["audio_signal", "length", "cache_last_channel", "cache_last_time", "cache_last_channel_len"]
    outputs = ["outputs", "encoded_lengths", "cache_last_channel_next", "cache_last_time_next",
               "cache_last_channel_next_len"]
    axes = {"audio_signal": [0, 2], "length": [0], "cache_last_channel": [0, 2], "cache_last_time": [0, 3],
            "cache_last_channel_len": [0], "outputs": [0, 2], "encoded_lengths": [0],
            "cache_last_channel_next": [0, 2], "cache_last_time_next": [0, 3], "cache_last_channel_next_len": [0]}
    dynamic_axes = {name: {a: f"{name}_dynamic_axes_{k + 1}" for k, a in enumerate(dims)} for name, dims in axes.items()}
    if args.layout == "nemo":
        # EncDecRNNTModel.export(NEMO_RNNT_FILE): one file per list_export_subnets() entry, named
        # <subnet>-<file>, no metadata; the .nemo archive's files beside them.
        torch.onnx.export(encoder, example, os.path.join(args.dir, "encoder-" + NEMO_RNNT_FILE), opset_version=13,
                          input_names=inputs, output_names=outputs, dynamic_axes=dynamic_axes)
        export_decoder_joint(decoder, joint, os.path.join(args.dir, "decoder_joint-" + NEMO_RNNT_FILE))
        write_nemo_archive_files(args)
        return
    enc_path = os.path.join(args.dir, "encoder.onnx")
    torch.onnx.export(encoder, example, enc_path, opset_version=13, input_names=inputs, output_names=outputs,
                      dynamic_axes=dynamic_axes)
    nemo_transducer.export_prediction_networks(decoder, joint, args.dir)
    m = onnx.load(enc_path)
    meta = sherpa_metadata(window)
    meta["pred_rnn_layers"] = str(nemo_transducer.PRED_LAYERS)
    meta["pred_hidden"] = str(nemo_transducer.PRED_HIDDEN)
    meta["comment"] = "Only the transducer branch is exported (voxrt test stand-in, random weights)"
    if args.drop_key:
        meta.pop(args.drop_key)
    del m.metadata_props[:]
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.save(m, enc_path)


def sherpa_metadata(window):
    return {
        "vocab_size": str(len(PIECES)),  # NeMo's vocab_size: without the blank
        "window_size": str(window),
        "chunk_shift": str(CHUNK_FRAMES),
        "normalize_type": "",  # NeMo's "NA", as the script writes it
        "cache_last_channel_dim1": str(LAYERS),
        "cache_last_channel_dim2": str(CACHE_CHANNEL),
        "cache_last_channel_dim3": str(D_MODEL),
        "cache_last_time_dim1": str(LAYERS),
        "cache_last_time_dim2": str(D_MODEL),
        "cache_last_time_dim3": str(CACHE_TIME),
        "subsampling_factor": "8",
        "model_type": "EncDecHybridRNNTCTCBPEModel",
        "version": "1",
        "model_author": "NeMo",
        "comment": "Only the CTC branch is exported (voxrt test stand-in, random weights)",
    }


NEMO_CTC_FILE = "fastconformer_streaming_ctc.onnx"


def nemo_model_config(args):
    """model_config.yaml as OmegaConf writes a cache-aware FastConformer-CTC's (EncDecCTCModelBPE) or, for
    --model rnnt, transducer's (EncDecRNNTBPEModel: RNNTDecoder and RNNTJoint sections): the
    settings this stand-in is built with (lists in block style at the key's indentation, as OmegaConf
    writes them). --config-override KEY=VALUE replaces one encoder setting (the import's error tests)."""
    encoder = {
        "_target_": "nemo.collections.asr.modules.ConformerEncoder",
        "feat_in": N_MELS,
        "feat_out": -1,
        "n_layers": LAYERS,
        "d_model": D_MODEL,
        "subsampling": "dw_striding",
        "subsampling_factor": SUBSAMPLING,
        "subsampling_conv_channels": SUB_CHANNELS,
        "causal_downsampling": "true",
        "ff_expansion_factor": 4,
        "self_attention_model": "rel_pos",
        "n_heads": HEADS,
        # A multi-lookahead model's list of [left, right] choices, as OmegaConf writes a list of lists;
        # the first is the encoder's default and the one the export uses (this stand-in's).
        "att_context_size": f"\n  - - {ATT_CONTEXT[0]}\n    - {ATT_CONTEXT[1]}\n  - - {ATT_CONTEXT[0]}\n    - 0",
        "att_context_style": "chunked_limited",
        "xscaling": "true",
        "conv_kernel_size": CONV_KERNEL,
        "conv_norm_type": "layer_norm",
        "conv_context_size": "causal",
    }
    for override in args.config_override:
        key, value = override.split("=", 1)
        encoder[key] = value
    lines = "".join(f"  {k}:{'' if str(v).startswith(chr(10)) else ' '}{v}\n" for k, v in encoder.items())
    from nemo_ctc import write_nemo_tokenizer

    if args.model == "rnnt":
        heads = f"""decoder:
  _target_: nemo.collections.asr.modules.RNNTDecoder
  normalization_mode: null
  random_state_sampling: false
  blank_as_pad: true
  vocab_size: {len(PIECES)}
  prednet:
    pred_hidden: {nemo_transducer.PRED_HIDDEN}
    pred_rnn_layers: {nemo_transducer.PRED_LAYERS}
    t_max: null
    dropout: 0.2
joint:
  _target_: nemo.collections.asr.modules.RNNTJoint
  log_softmax: null
  preserve_memory: false
  fuse_loss_wer: true
  fused_batch_size: 4
  jointnet:
    joint_hidden: {nemo_transducer.JOINT_DIM}
    activation: relu
    dropout: 0.2
  num_classes: {len(PIECES)}
  vocabulary: []
target: nemo.collections.asr.models.rnnt_bpe_models.EncDecRNNTBPEModel
"""
    else:
        heads = f"""decoder:
  _target_: nemo.collections.asr.modules.ConvASRDecoder
  feat_in: {D_MODEL}
  num_classes: {len(PIECES)}
  vocabulary: []
target: nemo.collections.asr.models.ctc_bpe_models.EncDecCTCModelBPE
"""
    return f"""sample_rate: 16000
log_prediction: true
{write_nemo_tokenizer(args.dir)}preprocessor:
  _target_: nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor
  sample_rate: {FRONTEND["sample_rate"]}
  normalize: {FRONTEND["normalize"]}
  window_size: {FRONTEND["window_size"]}
  window_stride: {FRONTEND["window_stride"]}
  window: hann
  features: {N_MELS}
  n_fft: {FRONTEND["n_fft"]}
  log: true
  frame_splicing: 1
  dither: 1.0e-05
  pad_to: 0
  pad_value: 0.0
encoder:
{lines}{heads}"""


def write_nemo_archive_files(args):
    with open(os.path.join(args.dir, "model_config.yaml"), "w", encoding="utf-8") as f:
        f.write(nemo_model_config(args))


def export(args):
    os.makedirs(args.dir, exist_ok=True)
    with open(os.path.join(args.dir, "frontend.json"), "w") as f:
        json.dump(dict(FRONTEND, seed=args.seed, model=args.model), f)
    if args.layout == "sherpa":
        with open(os.path.join(args.dir, "tokens.txt"), "w", encoding="utf-8") as f:
            for i, piece in enumerate(PIECES):
                f.write(f"{piece} {i}\n")
            f.write(f"<blk> {BLANK}\n")
    if args.model == "rnnt":
        export_transducer(args)
        return
    model = make_model(args.seed)
    torch.save(model.state_dict(), os.path.join(args.dir, "weights.pt"))
    # NeMo's input_example: a window of chunk + pre-encode cache frames, random lengths and caches.
    window = CHUNK_FRAMES + PRE_ENCODE_CACHE
    g = torch.Generator().manual_seed(3)
    example = (torch.randn(2, N_MELS, window, generator=g), torch.tensor([window, 20], dtype=torch.int64),
               torch.randn(2, LAYERS, CACHE_CHANNEL, D_MODEL, generator=g),
               torch.randn(2, LAYERS, D_MODEL, CACHE_TIME, generator=g), torch.tensor([5, 12], dtype=torch.int64))
    inputs = ["audio_signal", "length", "cache_last_channel", "cache_last_time", "cache_last_channel_len"]
    outputs = ["logprobs", "encoded_lengths", "cache_last_channel_next", "cache_last_time_next",
               "cache_last_channel_next_len"]
    # Exportable names each dynamic axis <name>_dynamic_axes_<k> over the axes its port types call
    # B or T (the caches: ('B', 'D', 'T', 'D') and ('B', 'D', 'D', 'T')).
    axes = {"audio_signal": [0, 2], "length": [0], "cache_last_channel": [0, 2], "cache_last_time": [0, 3],
            "cache_last_channel_len": [0], "logprobs": [0, 1], "encoded_lengths": [0],
            "cache_last_channel_next": [0, 2], "cache_last_time_next": [0, 3], "cache_last_channel_next_len": [0]}
    dynamic_axes = {name: {a: f"{name}_dynamic_axes_{k + 1}" for k, a in enumerate(dims)} for name, dims in axes.items()}
    if args.layout == "nemo":
        # NeMo's own model.export(): the same graph, no metadata_props, under the file name the user
        # gives; the .nemo archive's model_config.yaml and tokenizer beside it.
        exported = model
        if args.layer_first_caches:
            # Not NeMo's export: the caches as the module keeps them inside, [layers, B, ...] (the
            # import's test that a cache whose batch is not axis 0 is refused, not misread).
            exported = LayerFirstCaches(model)
            example = example[:2] + (example[2].transpose(0, 1), example[3].transpose(0, 1), example[4])
            for name, dims in (("cache_last_channel", {1: "b", 2: "t"}), ("cache_last_time", {1: "b", 3: "t"})):
                for io in (name, name + "_next"):
                    dynamic_axes[io] = {a: f"{io}_dynamic_axes_{k + 1}" for k, a in enumerate(dims)}
        torch.onnx.export(exported, example, os.path.join(args.dir, NEMO_CTC_FILE), opset_version=13,
                          input_names=inputs, output_names=outputs, dynamic_axes=dynamic_axes)
        write_nemo_archive_files(args)
        return
    path = os.path.join(args.dir, "model.onnx")
    torch.onnx.export(model, example, path, opset_version=13, input_names=inputs, output_names=outputs,
                      dynamic_axes=dynamic_axes)
    import onnx

    m = onnx.load(path)
    meta = sherpa_metadata(window)
    if args.drop_key:
        meta.pop(args.drop_key)
    del m.metadata_props[:]
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.save(m, path)


def frontend(args):
    with open(os.path.join(args.dir, "frontend.json")) as f:
        cfg = json.load(f)
    x, _ = nemo_features(read_wav(args.wav), cfg, whole_hops=False)
    with open(args.out, "wb") as f:
        f.write(np.array(x.shape, dtype=np.int32).tobytes())
        f.write(np.ascontiguousarray(x).tobytes())


def reference(args):
    with open(os.path.join(args.dir, "frontend.json")) as f:
        cfg = json.load(f)
    if cfg.get("model") == "rnnt":
        return reference_transducer(args, cfg)
    model = make_model(cfg.get("seed", 0))
    model.load_state_dict(torch.load(os.path.join(args.dir, "weights.pt")))
    for wav in args.wavs:
        features, _ = nemo_features(read_wav(wav), cfg, whole_hops=False)
        logprobs = stream_logprobs(model, features, zero_each_step=args.zero_caches)
        if args.search == "beam":
            ids = prefix_beam_search(logprobs, args.beam, BLANK)
        else:
            ids, previous = [], -1
            for k in logprobs.argmax(dim=-1).tolist():
                if k != BLANK and k != previous:
                    ids.append(k)
                previous = k
        text = "".join(PIECES[i] for i in ids).replace("\u2581", " ").strip()
        print(json.dumps({"file": wav, "text": text, "ids": ids, "frames": int(logprobs.shape[0])}))


def reference_transducer(args, cfg):
    """The streamed encoder's frames of every step, then NeMo's greedy RNN-T rules (nemo_transducer.greedy,
    max_symbols 10: NeMo's greedy default) with the prediction network's state and last unit carried across
    steps (NeMo's streaming loop passes its previous hypotheses on), starting from the blank and zero states."""
    encoder, decoder, joint = make_transducer(cfg.get("seed", 0))
    weights = torch.load(os.path.join(args.dir, "weights.pt"))
    encoder.load_state_dict(weights["encoder"])
    decoder.load_state_dict(weights["decoder"])
    joint.load_state_dict(weights["joint"])
    zeros = torch.zeros(nemo_transducer.PRED_LAYERS, 1, nemo_transducer.PRED_HIDDEN)
    for wav in args.wavs:
        features, _ = nemo_features(read_wav(wav), cfg, whole_hops=False)
        with torch.no_grad():
            frames = stream_logprobs(encoder, features, zero_each_step=args.zero_caches)
            state = nemo_transducer.greedy(frames, decoder, joint, False, 10, (BLANK, zeros, zeros, [], 0))
        ids = state[3]
        text = "".join(PIECES[i] for i in ids).replace("\u2581", " ").strip()
        print(json.dumps({"file": wav, "text": text, "ids": ids, "frames": int(frames.shape[0])}))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--model", choices=["ctc", "rnnt"], default="ctc",
                   help="ctc: model.onnx (export-onnx-ctc.py); rnnt: encoder.onnx, decoder.onnx, joiner.onnx "
                        "(export-onnx-transducer.py)")
    e.add_argument("--drop-key", default="", help="leave this metadata key out (the import's error test)")
    e.add_argument("--layout", choices=["sherpa", "nemo"], default="sherpa",
                   help="sherpa: sherpa-onnx's files and metadata; nemo: NeMo's own model.export() (no "
                        "metadata) beside the .nemo archive's model_config.yaml and tokenizer files")
    e.add_argument("--layer-first-caches", action="store_true",
                   help="nemo CTC layout: export the caches layer-first (not NeMo's export; an error test)")
    e.add_argument("--config-override", action="append", default=[],
                   help="KEY=VALUE: one encoder setting of the nemo layout's model_config.yaml")
    fe = sub.add_parser("frontend")
    fe.add_argument("dir")
    fe.add_argument("wav")
    fe.add_argument("out")
    r = sub.add_parser("reference")
    r.add_argument("dir")
    r.add_argument("wavs", nargs="+")
    r.add_argument("--zero-caches", action="store_true", help="zero the caches before every step")
    r.add_argument("--search", choices=["greedy", "beam"], default="greedy",
                   help="CTC: beam is nemo_ctc.py's prefix beam search (voxrt's default pruning, no LM)")
    r.add_argument("--beam", type=int, default=8)
    args = parser.parse_args()
    {"export": export, "frontend": frontend, "reference": reference}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
