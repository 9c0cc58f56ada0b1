"""The default model, version 2: a streaming Conformer encoder with a CTC head over BPE units.

One forward() is both the streaming and the offline interface, and streaming is exact:

- Front end: two Conv2d (3x3, stride 2 in time and frequency) that are causal in time. They have
  no time padding; each takes its last 2 input frames of the previous chunk as a state (zeros for
  a fresh stream, which equals zero left padding offline). 4x subsampling: output frame j reads
  feature frames <= 4j, so a 32-frame chunk (320 ms) gives 8 output frames of 40 ms.
- Attention: chunked. A query in chunk c sees the frames of its own chunk and the `left_frames`
  frames before the chunk, never later chunks (no lookahead beyond the chunk). Streaming keeps
  the keys and values of the last `left_frames` frames of every layer as a state, and a state
  `key_mask` that says which of them are real (zeros for a fresh stream: nothing cached yet).
  Offline, the same rule is a block mask over the whole utterance (chunk_mask()).
- Positions: a learned bias per head and relative distance (query - key, clamped), so nothing
  depends on the absolute time: a stream of any length runs the same computation as a short
  utterance, with a bounded state (no drift over long streams).
- Convolution module: a causal depthwise Conv1d (kernel `conv_kernel`) whose last kernel-1 input
  frames are a state; LayerNorm instead of BatchNorm (no batch statistics, no padding effects).

States are batch-first (docs/model_contract.md). Tested in test_conformer.py: chunk by chunk ==
whole utterance, rows independent of their batch, and padding in a batch changes nothing.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

STATE_NAMES = [("sub1_state", "sub1_state_out"), ("sub2_state", "sub2_state_out"),
               ("attn_cache", "attn_cache_out"), ("conv_cache", "conv_cache_out"),
               ("key_mask", "key_mask_out")]
MASK_VALUE = -1.0e4  # added to scores of keys a query must not see (fp16 safe)


class CausalSubsampling(nn.Module):
    """[B, T, bins] (T a multiple of 4) -> [B, T/4, d_model]."""

    CONTEXT = 2  # kernel 3 - 1 frames of left context per conv

    def __init__(self, num_bins, channels, d_model):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, (3, 3), (2, 2), (0, 1))
        self.conv2 = nn.Conv2d(channels, channels, (3, 3), (2, 2), (0, 1))
        self.freq1 = (num_bins + 2 - 3) // 2 + 1
        self.freq2 = (self.freq1 + 2 - 3) // 2 + 1
        self.out = nn.Linear(channels * self.freq2, d_model)

    def forward(self, x, state1, state2):
        context = self.CONTEXT
        x = torch.cat([state1, x], dim=1)
        state1_out = x[:, x.shape[1] - context:, :]
        y = F.relu(self.conv1(x.unsqueeze(1)))
        y = torch.cat([state2, y], dim=2)
        state2_out = y[:, :, y.shape[2] - context:, :]
        y = F.relu(self.conv2(y))
        batch, channels, frames, freq = y.shape
        y = y.permute(0, 2, 1, 3).reshape(batch, frames, channels * freq)
        return self.out(y), state1_out, state2_out


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        y = self.up(self.norm(x))
        y = y * torch.sigmoid(y)  # Swish, written out: exports as Sigmoid + Mul
        return self.dropout(self.down(self.dropout(y)))


class ChunkedSelfAttention(nn.Module):
    """Multi-head attention over [cached keys/values of left frames; this chunk]."""

    def __init__(self, d_model, heads, dropout):
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.norm = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, cache, bias):
        """x [B, T, D]; cache [B, L, 2D] (keys | values of the L frames before x);
        bias [B or 1, H, T, L+T] (position bias + mask) -> output [B, T, D], new cache."""
        batch, frames, d_model = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        kv = torch.cat([cache, torch.cat([k, v], dim=-1)], dim=1)
        left = cache.shape[1]
        cache_out = kv[:, kv.shape[1] - left:, :]
        k, v = kv.chunk(2, dim=-1)
        q = q.reshape(batch, frames, self.heads, self.d_head).transpose(1, 2)
        k = k.reshape(batch, -1, self.heads, self.d_head).permute(0, 2, 3, 1)
        v = v.reshape(batch, -1, self.heads, self.d_head).transpose(1, 2)
        scores = torch.matmul(q * (1.0 / math.sqrt(self.d_head)), k) + bias
        weights = self.dropout(torch.softmax(scores, dim=-1))
        y = torch.matmul(weights, v).transpose(1, 2).reshape(batch, frames, d_model)
        return self.dropout(self.out(y)), cache_out


class CausalConvModule(nn.Module):
    def __init__(self, d_model, kernel, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.pointwise_in = nn.Linear(d_model, 2 * d_model)
        self.depthwise = nn.Conv1d(d_model, d_model, kernel, groups=d_model)
        self.depthwise_norm = nn.LayerNorm(d_model)
        self.pointwise_out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.context = kernel - 1

    def forward(self, x, cache):
        """x [B, T, D], cache [B, D, kernel-1] -> [B, T, D], new cache. Causal, so the padding
        at the end of a shorter row of a batch never reaches its real frames."""
        a, b = self.pointwise_in(self.norm(x)).chunk(2, dim=-1)
        y = a * torch.sigmoid(b)  # GLU
        y = torch.cat([cache, y.transpose(1, 2)], dim=2)
        cache_out = y[:, :, y.shape[2] - self.context:]
        y = self.depthwise_norm(self.depthwise(y).transpose(1, 2))
        y = y * torch.sigmoid(y)
        return self.dropout(self.pointwise_out(y)), cache_out


class ConformerLayer(nn.Module):
    """Macaron FFN, attention, convolution, FFN; every module normalises its own input.
    block_norm: a LayerNorm on the block's output too (the original Conformer), so every block
    restarts the residual stream at unit scale; without it the stream runs through all blocks
    and one LayerNorm follows the last (StreamingConformer's norm="pre")."""

    def __init__(self, d_model, d_ff, heads, kernel, dropout, block_norm=True):
        super().__init__()
        self.ff1 = FeedForward(d_model, d_ff, dropout)
        self.attention = ChunkedSelfAttention(d_model, heads, dropout)
        self.conv = CausalConvModule(d_model, kernel, dropout)
        self.ff2 = FeedForward(d_model, d_ff, dropout)
        self.norm = nn.LayerNorm(d_model) if block_norm else nn.Identity()

    def forward(self, x, attn_cache, conv_cache, bias):
        x = x + 0.5 * self.ff1(x)
        y, attn_cache = self.attention(x, attn_cache, bias)
        x = x + y
        y, conv_cache = self.conv(x, conv_cache)
        x = x + y
        x = x + 0.5 * self.ff2(x)
        return self.norm(x), attn_cache, conv_cache


class StreamingConformer(nn.Module):
    STATE_NAMES = STATE_NAMES

    NORMS = ("block", "pre")

    def __init__(self, vocab, num_bins=80, d_model=256, d_ff=1024, heads=4, layers=10,
                 conv_kernel=15, subsampling_channels=64, chunk_frames=8, left_frames=32,
                 dropout=0.1, norm="block"):
        """norm: "block" (a LayerNorm closes every block: the original Conformer, and every
        checkpoint made before the option existed) or "pre" (pre-norm blocks, one LayerNorm
        after the last block: the input reaches the head through the identity path)."""
        super().__init__()
        if norm not in self.NORMS:
            raise ValueError(f"norm: expected one of {self.NORMS}, found {norm!r}")
        self.norm_style = norm
        self.num_bins, self.d_model, self.layers_count = num_bins, d_model, layers
        self.heads, self.vocab = heads, vocab
        self.chunk_frames, self.left_frames = chunk_frames, left_frames  # in output frames
        self.conv_context = conv_kernel - 1
        self.subsampling = 4
        self.subsampling_channels = subsampling_channels
        self.front = CausalSubsampling(num_bins, subsampling_channels, d_model)
        self.input_dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            ConformerLayer(d_model, d_ff, heads, conv_kernel, dropout, block_norm=norm == "block")
            for _ in range(layers))
        self.final_norm = nn.LayerNorm(d_model) if norm == "pre" else nn.Identity()
        # Relative distances query - key run from -(chunk-1) to left+chunk-1 inside the window.
        self.max_distance = left_frames + chunk_frames - 1
        self.min_distance = -(chunk_frames - 1)
        self.position_bias = nn.Parameter(
            torch.zeros(layers, heads, self.max_distance - self.min_distance + 1))
        self.head = nn.Linear(d_model, vocab)

    @property
    def chunk_feature_frames(self):
        return self.chunk_frames * self.subsampling

    def initial_states(self, batch, device=None):
        context = CausalSubsampling.CONTEXT
        return (torch.zeros(batch, context, self.num_bins, device=device),
                torch.zeros(batch, self.subsampling_channels, context, self.front.freq1,
                            device=device),
                torch.zeros(batch, self.layers_count, self.left_frames, 2 * self.d_model,
                            device=device),
                torch.zeros(batch, self.layers_count, self.d_model, self.conv_context,
                            device=device),
                torch.zeros(batch, self.left_frames, device=device))

    def _distance_index(self, frames, keys, device):
        """[frames, keys] index into position_bias for query i and key j, where key j sits
        at position j - (keys - frames) relative to the first query."""
        query = torch.arange(frames, device=device).unsqueeze(1)
        key = torch.arange(keys, device=device).unsqueeze(0)
        distance = query + (keys - frames) - key
        return distance.clamp(self.min_distance, self.max_distance) - self.min_distance

    def _encode(self, x, attn_cache, conv_cache, mask_bias):
        """Runs the layers: mask_bias [B or 1, 1, T, L+T]."""
        frames, keys = x.shape[1], x.shape[1] + attn_cache.shape[2]
        index = self._distance_index(frames, keys, x.device)
        attn_out, conv_out = [], []
        for n, layer in enumerate(self.layers):
            bias = self.position_bias[n][:, index].unsqueeze(0) + mask_bias
            x, a, c = layer(x, attn_cache[:, n], conv_cache[:, n], bias)
            attn_out.append(a)
            conv_out.append(c)
        return self.final_norm(x), torch.stack(attn_out, 1), torch.stack(conv_out, 1)

    def forward(self, features, sub1_state, sub2_state, attn_cache, conv_cache, key_mask):
        """One chunk: features [B, T, bins] (T a multiple of 4, normally chunk_feature_frames),
        states as initial_states() -> log_probs [B, T/4, vocab] and the five new states."""
        x, sub1_out, sub2_out = self.front(features, sub1_state, sub2_state)
        x = self.input_dropout(x)
        batch, frames = x.shape[0], x.shape[1]
        # Every key of this chunk is visible to every query of it; cached keys by key_mask.
        keys_valid = torch.cat([key_mask, torch.ones(batch, frames, device=x.device)], dim=1)
        mask_bias = ((1.0 - keys_valid) * MASK_VALUE).reshape(batch, 1, 1, -1)
        x, attn_out, conv_out = self._encode(x, attn_cache, conv_cache, mask_bias)
        key_mask_out = keys_valid[:, keys_valid.shape[1] - self.left_frames:]
        log_probs = self.head(x).log_softmax(-1)
        return log_probs, sub1_out, sub2_out, attn_out, conv_out, key_mask_out

    def chunk_mask(self, frames, device):
        """[frames, left+frames] bias for the whole utterance as one 'chunk' with an empty
        cache of left_frames: query i sees key j (position j - left) when j - left lies in
        [chunk_start(i) - left_frames, chunk_end(i))."""
        left = self.left_frames
        query = torch.arange(frames, device=device).unsqueeze(1)
        position = torch.arange(left + frames, device=device).unsqueeze(0) - left
        chunk_start = (query // self.chunk_frames) * self.chunk_frames
        visible = (position >= chunk_start - left) & (position < chunk_start + self.chunk_frames)
        visible = visible & (position >= 0)
        return (~visible).float() * MASK_VALUE

    def offline(self, features, lengths=None):
        """Whole utterances [B, T, bins] from fresh states, with the streaming chunk rule as a
        mask; lengths [B] (feature frames) masks padding so rows equal themselves alone.
        T is padded with zero frames to a multiple of 4 (as the runtime pads a last chunk).
        -> log_probs [B, ceil(T/4), vocab]."""
        batch, frames = features.shape[0], features.shape[1]
        if frames % self.subsampling:
            features = F.pad(features, (0, 0, 0, self.subsampling - frames % self.subsampling))
        states = self.initial_states(batch, features.device)
        x, _, _ = self.front(features, states[0], states[1])
        x = self.input_dropout(x)
        out_frames = x.shape[1]
        mask_bias = self.chunk_mask(out_frames, x.device).reshape(1, 1, out_frames, -1)
        if lengths is not None:
            out_lengths = output_lengths(lengths, self.subsampling)
            valid_frames = torch.arange(out_frames, device=x.device)[None, :] < out_lengths[:, None]
            padding_keys = torch.cat([torch.zeros(batch, self.left_frames, dtype=torch.bool,
                                                  device=x.device), ~valid_frames], dim=1)
            mask_bias = mask_bias + (padding_keys.float() * MASK_VALUE).reshape(batch, 1, 1, -1)
        x, _, _ = self._encode(x, states[2], states[3], mask_bias)
        return self.head(x).log_softmax(-1)


def output_lengths(frame_lengths, subsampling=4):
    """Output frames of utterances of these feature lengths (the runtime pads the last chunk to
    a multiple of the subsampling; output j reads frames <= subsampling * j)."""
    return (frame_lengths + subsampling - 1) // subsampling


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())
