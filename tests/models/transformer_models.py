"""Transformer-era speech models, written from code with random weights, exported with each
exporter's conventions (names, dynamic axes, masks, opsets 13-17). Used by
export_transformer_models.py (small sizes, for tests/models) and bench/transformer (bench sizes).

Written for Debian's torch 1.13 / torchaudio 0.13 (/usr/bin/python3). What each export imitates:
- torchaudio's own modules: Conformer, Emformer, the Emformer RNN-T (transcriber, predictor with
  its layer-normed LSTM, joiner), wav2vec2 (group-norm feature extractor: InstanceNormalization)
  and HuBERT-large style (layer-norm extractor, pre-norm encoder). Relative-position tables are
  written with strided index assignments (pe[:, 0::2] = sin): ScatterND in the graph.
- Whisper as Hugging Face optimum exports it: `encoder_model` (input_features ->
  last_hidden_state), `decoder_model` (input_ids, encoder_hidden_states -> logits,
  present.N.{decoder,encoder}.{key,value}) and `decoder_with_past_model` (input_ids,
  past_key_values.N.* -> logits, present.N.decoder.*), HF's attention (q scaled before Q K^T,
  heads folded into the batch for bmm, the causal mask built in-graph from arange with
  finfo.min, positions sliced by the past length).
- An icefall-style streaming Conformer encoder: x [N, T, C], per layer cached_key_i /
  cached_val_i [left, N, D] and cached_conv_i [N, D, kernel - 1], processed_lens [N]
  (masks the cache entries not yet filled), new_* outputs, time-first layers, and optionally
  relative-position attention (pos_bias_u / pos_bias_v, rel_shift).
- A NeMo-style Conformer encoder: audio_signal [B, feat, T], length -> outputs [B, D, T'],
  encoded_lengths; striding Conv2d subsampling, xscaling, relative-position attention with
  masked_fill(-10000) and the probabilities zeroed on padded keys.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio


def randomize(model, seed=0):
    """Random weights (small enough that deep stacks stay well conditioned) and BatchNorm stats."""
    torch.manual_seed(seed)
    for name, p in model.named_parameters():
        if p.dim() > 1:
            nn.init.uniform_(p, -1.0 / math.sqrt(p.shape[-1]), 1.0 / math.sqrt(p.shape[-1]))
        else:
            nn.init.uniform_(p, -0.1, 0.1)
        if "norm" in name and name.endswith("weight") and p.dim() == 1:
            nn.init.uniform_(p, 0.8, 1.2)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval()


# ----------------------------------------------------------------------------------- torchaudio
class TorchaudioConformer(nn.Module):
    """torchaudio.models.Conformer behind a linear input projection: input [B, T, F], lengths [B]."""

    def __init__(self, feat=80, d=64, heads=4, ffn=128, layers=2, kernel=15):
        super().__init__()
        self.inp = nn.Linear(feat, d)
        self.conformer = torchaudio.models.Conformer(d, heads, ffn, layers, kernel)

    def forward(self, input, lengths):
        return self.conformer(self.inp(input), lengths)


class Emformer(nn.Module):
    """torchaudio's Emformer (segments with right context, memory bank), full-utterance forward."""

    def __init__(self, d=64, heads=4, ffn=128, layers=2, segment=4, left=8, right=2, memory=4):
        super().__init__()
        self.emformer = torchaudio.models.Emformer(d, heads, ffn, layers, segment, left_context_length=left,
                                                   right_context_length=right, max_memory_size=memory)

    def forward(self, input, lengths):
        return self.emformer(input, lengths)


class RnntPredictor(nn.Module):
    def __init__(self, rnnt):
        super().__init__()
        self.predictor = rnnt.predictor

    def forward(self, targets, target_lengths, h0, c0, h1, c1):
        output, lengths, states = self.predictor(targets, target_lengths, [[h0, c0], [h1, c1]])
        return output, lengths, states[0][0], states[0][1], states[1][0], states[1][1]


class RnntJoiner(nn.Module):
    def __init__(self, rnnt):
        super().__init__()
        self.joiner = rnnt.joiner

    def forward(self, source, source_lengths, target, target_lengths):
        output, _, _ = self.joiner(source, source_lengths, target, target_lengths)
        return output


def small_rnnt():
    return torchaudio.models.emformer_rnnt_model(
        input_dim=40, encoding_dim=32, num_symbols=50, segment_length=8, right_context_length=2,
        time_reduction_input_dim=32, time_reduction_stride=2, transformer_num_heads=4, transformer_ffn_dim=64,
        transformer_num_layers=2, transformer_dropout=0.0, transformer_activation="gelu",
        transformer_left_context_length=8, transformer_max_memory_size=4,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True, symbol_embedding_dim=32,
        num_lstm_layers=2, lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.0)


def small_wav2vec2(layer_norm_extractor=False):
    """wav2vec2-base style (group norm in the first conv: InstanceNormalization, post-norm layers)
    or HuBERT-large style (layer norm in every conv, pre-norm layers), a few layers."""
    convs = [(32, 10, 5), (32, 3, 2), (32, 3, 2), (32, 2, 2)]
    return torchaudio.models.wav2vec2_model(
        extractor_mode="layer_norm" if layer_norm_extractor else "group_norm",
        extractor_conv_layer_config=convs, extractor_conv_bias=layer_norm_extractor, encoder_embed_dim=64,
        encoder_projection_dropout=0.0, encoder_pos_conv_kernel=16, encoder_pos_conv_groups=4,
        encoder_num_layers=2, encoder_num_heads=4, encoder_attention_dropout=0.0, encoder_ff_interm_features=128,
        encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_norm_first=layer_norm_extractor,
        encoder_layer_drop=0.0, aux_num_out=29)


# -------------------------------------------------------------------- Whisper, the HF way
class WhisperConfig:
    def __init__(self, d=64, heads=4, encoder_layers=2, decoder_layers=2, ffn=256, vocab=100, mels=16,
                 source_positions=20, target_positions=32):
        self.d, self.heads, self.ffn, self.vocab, self.mels = d, heads, ffn, vocab, mels
        self.encoder_layers, self.decoder_layers = encoder_layers, decoder_layers
        self.source_positions, self.target_positions = source_positions, target_positions


WHISPER_BASE = WhisperConfig(d=512, heads=8, encoder_layers=6, decoder_layers=6, ffn=2048, vocab=51865, mels=80,
                             source_positions=1500, target_positions=448)


class HFAttention(nn.Module):
    """Hugging Face's WhisperAttention: q scaled before the product, heads folded into the batch."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d)
        self.q_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)

    def _shape(self, t, seq, bsz):
        return t.view(bsz, seq, self.heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, x, key_value_states=None, past=None, mask=None, cross=False):
        bsz, tgt, d = x.size()
        q = self.q_proj(x) * self.scaling
        if cross and past is not None:
            k, v = past
        elif cross:
            k = self._shape(self.k_proj(key_value_states), -1, bsz)
            v = self._shape(self.v_proj(key_value_states), -1, bsz)
        elif past is not None:
            k = torch.cat([past[0], self._shape(self.k_proj(x), -1, bsz)], dim=2)
            v = torch.cat([past[1], self._shape(self.v_proj(x), -1, bsz)], dim=2)
        else:
            k = self._shape(self.k_proj(x), -1, bsz)
            v = self._shape(self.v_proj(x), -1, bsz)
        present = (k, v)
        proj = (bsz * self.heads, -1, self.head_dim)
        q = self._shape(q, tgt, bsz).view(*proj)
        k = k.reshape(*proj)
        v = v.reshape(*proj)
        src = k.size(1)
        w = torch.bmm(q, k.transpose(1, 2))
        if mask is not None:
            w = w.view(bsz, self.heads, tgt, src) + mask
            w = w.view(bsz * self.heads, tgt, src)
        w = F.softmax(w, dim=-1)
        o = torch.bmm(w, v).view(bsz, self.heads, tgt, self.head_dim).transpose(1, 2).reshape(bsz, tgt, d)
        return self.out_proj(o), present


class WhisperEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = HFAttention(c.d, c.heads)
        self.self_attn_layer_norm = nn.LayerNorm(c.d)
        self.fc1, self.fc2 = nn.Linear(c.d, c.ffn), nn.Linear(c.ffn, c.d)
        self.final_layer_norm = nn.LayerNorm(c.d)

    def forward(self, x):
        x = x + self.self_attn(self.self_attn_layer_norm(x))[0]
        return x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))


class WhisperEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv1d(c.mels, c.d, 3, padding=1)
        self.conv2 = nn.Conv1d(c.d, c.d, 3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(c.source_positions, c.d)
        self.layers = nn.ModuleList([WhisperEncoderLayer(c) for _ in range(c.encoder_layers)])
        self.layer_norm = nn.LayerNorm(c.d)

    def forward(self, input_features):
        x = F.gelu(self.conv2(F.gelu(self.conv1(input_features)))).permute(0, 2, 1)
        x = x + self.embed_positions.weight
        for layer in self.layers:
            x = layer(x)
        return self.layer_norm(x)


def causal_mask(bsz, tgt, past, dtype, device=None):
    """HF's _make_causal_mask: finfo.min above the diagonal, zeros for the past, [B, 1, tgt, past+tgt].
    On `device` (the decoder's input's: recipes/whisper trains on a GPU)."""
    mask = torch.full((tgt, tgt), torch.finfo(dtype).min, dtype=dtype, device=device)
    cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(cond < (cond + 1).view(mask.size(-1), 1), 0)
    if past > 0:
        mask = torch.cat([torch.zeros(tgt, past, dtype=dtype, device=device), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt, tgt + past)


class WhisperDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = HFAttention(c.d, c.heads)
        self.self_attn_layer_norm = nn.LayerNorm(c.d)
        self.encoder_attn = HFAttention(c.d, c.heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(c.d)
        self.fc1, self.fc2 = nn.Linear(c.d, c.ffn), nn.Linear(c.ffn, c.d)
        self.final_layer_norm = nn.LayerNorm(c.d)

    def forward(self, x, encoder_hidden_states, mask, self_past, cross_past):
        a, self_present = self.self_attn(self.self_attn_layer_norm(x), past=self_past, mask=mask)
        x = x + a
        a, cross_present = self.encoder_attn(self.encoder_attn_layer_norm(x), encoder_hidden_states,
                                             past=cross_past, cross=True)
        x = x + a
        x = x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))
        return x, self_present, cross_present


class WhisperDecoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab, c.d)
        self.embed_positions = nn.Parameter(torch.zeros(c.target_positions, c.d))
        self.layers = nn.ModuleList([WhisperDecoderLayer(c) for _ in range(c.decoder_layers)])
        self.layer_norm = nn.LayerNorm(c.d)

    def forward(self, input_ids, encoder_hidden_states, past):
        bsz, tgt = input_ids.shape
        past_len = past[0][0].shape[2] if past is not None else 0
        x = self.embed_tokens(input_ids) + self.embed_positions[past_len:past_len + tgt]
        mask = causal_mask(bsz, tgt, past_len, x.dtype, x.device) if tgt > 1 else None
        presents = []
        for i, layer in enumerate(self.layers):
            self_past = past[i][:2] if past is not None else None
            cross_past = past[i][2:] if past is not None else None
            x, sp, cp = layer(x, encoder_hidden_states, mask, self_past, cross_past)
            presents.append((*sp, *cp))
        logits = F.linear(self.layer_norm(x), self.embed_tokens.weight)  # proj_out, tied
        return logits, presents


class OptimumDecoder(nn.Module):
    """decoder_model.onnx: input_ids, encoder_hidden_states -> logits, present.N.*"""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids, encoder_hidden_states):
        logits, presents = self.decoder(input_ids, encoder_hidden_states, None)
        return (logits, *[t for p in presents for t in p])


class OptimumDecoderWithPast(nn.Module):
    """decoder_with_past_model.onnx: input_ids, past_key_values.N.* -> logits, present.N.decoder.*"""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids, *past_flat):
        past = [past_flat[4 * i:4 * i + 4] for i in range(len(past_flat) // 4)]
        logits, presents = self.decoder(input_ids, None, past)
        return (logits, *[t for p in presents for t in p[:2]])


def whisper_past_names(layers, prefix, sides=("decoder", "encoder")):
    return [f"{prefix}.{i}.{side}.{kv}" for i in range(layers) for side in sides for kv in ("key", "value")]


# ------------------------------------------------------ icefall-style streaming Conformer
def rel_shift(x, keys):
    """Transformer-XL relative shift as ESPnet/icefall/NeMo write it: pad one zero column, fold,
    drop the first row, keep `keys` columns. x [B, H, T1, n] -> [B, H, T1, keys] with
    out[i, j] = x[i, j + T1 - 1 - i]: with positions ordered from the largest distance down, the
    score of key j for query i at distance (keys - T1 + i) - j."""
    b, h, t1, n = x.shape
    x = F.pad(x, (1, 0))
    x = x.view(b, h, n + 1, t1)[:, :, 1:].reshape(b, h, t1, n)
    return x[:, :, :, :keys]


def rel_positions(length, d):
    """Sinusoidal embeddings of relative positions length-1 .. -(length-1), [1, 2*length-1, d]."""
    pos = torch.arange(length - 1, -length, -1.0).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * -(math.log(10000.0) / d))
    pe = torch.zeros(2 * length - 1, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.unsqueeze(0)


class StreamingConformerLayer(nn.Module):
    """One layer, time-first like icefall's: x [T, N, D]; attention keys are the cached left
    context followed by the chunk; a causal depthwise conv whose left padding is the conv cache."""

    def __init__(self, d, heads, ffn, kernel, rel_pos):
        super().__init__()
        self.d, self.heads, self.head_dim, self.kernel, self.rel_pos = d, heads, d // heads, kernel, rel_pos
        self.norm_ff_macaron = nn.LayerNorm(d)
        self.ff_macaron = nn.Sequential(nn.Linear(d, ffn), nn.SiLU(), nn.Linear(ffn, d))
        self.norm_mha = nn.LayerNorm(d)
        self.in_proj = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)
        if rel_pos:
            self.linear_pos = nn.Linear(d, d, bias=False)
            self.pos_bias_u = nn.Parameter(torch.zeros(heads, self.head_dim))
            self.pos_bias_v = nn.Parameter(torch.zeros(heads, self.head_dim))
        self.norm_conv = nn.LayerNorm(d)
        self.pointwise_conv1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise_conv = nn.Conv1d(d, d, kernel, groups=d)
        self.norm = nn.BatchNorm1d(d)
        self.pointwise_conv2 = nn.Conv1d(d, d, 1)
        self.norm_ff = nn.LayerNorm(d)
        self.feed_forward = nn.Sequential(nn.Linear(d, ffn), nn.SiLU(), nn.Linear(ffn, d))
        self.norm_final = nn.LayerNorm(d)

    def attention(self, x, cached_key, cached_val, mask, pos_emb):
        t, n, d = x.shape
        left = cached_key.shape[0]
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        k = torch.cat([cached_key, k], dim=0)
        v = torch.cat([cached_val, v], dim=0)
        new_key, new_val = k[k.shape[0] - left:], v[v.shape[0] - left:]
        q = q.reshape(t, n, self.heads, self.head_dim).permute(1, 2, 0, 3)        # N, H, T, hd
        kh = k.reshape(left + t, n, self.heads, self.head_dim).permute(1, 2, 3, 0)  # N, H, hd, L+T
        vh = v.reshape(left + t, n, self.heads, self.head_dim).permute(1, 2, 0, 3)  # N, H, L+T, hd
        if self.rel_pos:
            p = self.linear_pos(pos_emb).view(1, -1, self.heads, self.head_dim).permute(0, 2, 3, 1)
            ac = torch.matmul(q + self.pos_bias_u.unsqueeze(1), kh)
            bd = rel_shift(torch.matmul(q + self.pos_bias_v.unsqueeze(1), p), left + t)
            scores = (ac + bd) / math.sqrt(self.head_dim)
        else:
            scores = torch.matmul(q, kh) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(mask, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        o = torch.matmul(w, vh).permute(2, 0, 1, 3).reshape(t, n, d)
        return self.out_proj(o), new_key, new_val

    def forward(self, x, cached_key, cached_val, cached_conv, mask, pos_emb):
        x = x + 0.5 * self.ff_macaron(self.norm_ff_macaron(x))
        a, new_key, new_val = self.attention(self.norm_mha(x), cached_key, cached_val, mask, pos_emb)
        x = x + a
        y = F.glu(self.pointwise_conv1(self.norm_conv(x).permute(1, 2, 0)), dim=1)  # N, D, T
        y = torch.cat([cached_conv, y], dim=2)
        new_conv = y[:, :, -(self.kernel - 1):]
        y = self.pointwise_conv2(F.silu(self.norm(self.depthwise_conv(y))))
        x = x + y.permute(2, 0, 1)
        x = x + 0.5 * self.feed_forward(self.norm_ff(x))
        return self.norm_final(x), new_key, new_val, new_conv


class StreamingConformer(nn.Module):
    """icefall-style streaming encoder: one chunk of `chunk` frames against `left` cached frames.

    forward(x [N, T, feat], cached_key_0, cached_val_0, cached_conv_0, ..., processed_lens [N])
      -> encoder_out [N, T, out], new_cached_key_0, ..., new_processed_lens
    The left-context entries not yet filled (processed_lens < left) are masked, so the chunks of an
    utterance give what the whole utterance gives with a block mask (WholeUtterance)."""

    def __init__(self, feat=40, d=64, heads=4, ffn=128, kernel=15, layers=2, chunk=8, left=16, out=50,
                 rel_pos=True):
        super().__init__()
        self.d, self.heads, self.kernel, self.layers_count = d, heads, kernel, layers
        self.chunk, self.left, self.rel_pos = chunk, left, rel_pos
        self.embed = nn.Linear(feat, d)
        self.layers = nn.ModuleList([StreamingConformerLayer(d, heads, ffn, kernel, rel_pos) for _ in range(layers)])
        self.output = nn.Linear(d, out)

    def forward(self, x, *states):
        processed_lens = states[-1]
        n, t, _ = x.shape
        # Cache slot s (of `left`) holds frame processed - left + s: valid when that is >= 0.
        slots = torch.arange(self.left, device=x.device).unsqueeze(0).expand(n, self.left)
        cache_invalid = slots < (self.left - processed_lens).unsqueeze(1)
        key_mask = torch.cat([cache_invalid, torch.zeros(n, t, dtype=torch.bool)], dim=1)
        out, new_states = self.run_layers(x, states[:-1], key_mask[:, None, None, :], self.left)
        return (out, *new_states, processed_lens + t)

    def run_layers(self, x, states, mask, left):
        t = x.shape[1]
        pos_emb = rel_positions(left + t, self.d)[:, : left + 2 * t - 1] if self.rel_pos else None
        h = self.embed(x).permute(1, 0, 2)
        new_states = []
        for i, layer in enumerate(self.layers):
            h, k, v, c = layer(h, states[3 * i], states[3 * i + 1], states[3 * i + 2], mask, pos_emb)
            new_states += [k, v, c]
        return self.output(h.permute(1, 0, 2)).log_softmax(-1), new_states

    def initial_states(self, n):
        states = []
        for _ in range(self.layers_count):
            states += [torch.zeros(self.left, n, self.d), torch.zeros(self.left, n, self.d),
                       torch.zeros(n, self.d, self.kernel - 1)]
        return states + [torch.zeros(n, dtype=torch.int64)]

    def whole_utterance(self, x):
        """The same layers over a whole utterance: frame i sees the frames of its own chunk and the
        `left` frames before the chunk, as the chunks do."""
        n, t, _ = x.shape
        frames = torch.arange(t)
        chunk_start = torch.div(frames, self.chunk, rounding_mode="floor") * self.chunk
        visible = (frames.unsqueeze(0) < (chunk_start + self.chunk).unsqueeze(1)) & \
                  (frames.unsqueeze(0) >= (chunk_start - self.left).unsqueeze(1))
        states = []
        for _ in range(self.layers_count):
            states += [torch.zeros(0, n, self.d), torch.zeros(0, n, self.d), torch.zeros(n, self.d, self.kernel - 1)]
        out, _ = self.run_layers(x, states, ~visible[None, None], 0)
        return out

    def state_names(self):
        names = []
        for i in range(self.layers_count):
            names += [f"cached_key_{i}", f"cached_val_{i}", f"cached_conv_{i}"]
        return names + ["processed_lens"]


# ------------------------------------------------------------------- NeMo-style Conformer
class NemoRelAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.d_k = heads, d // heads
        self.linear_q, self.linear_k, self.linear_v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.linear_out = nn.Linear(d, d)
        self.linear_pos = nn.Linear(d, d, bias=False)
        self.pos_bias_u = nn.Parameter(torch.zeros(heads, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.zeros(heads, self.d_k))

    def forward(self, x, pad_mask, pos_emb):
        b = x.size(0)
        q = self.linear_q(x).view(b, -1, self.heads, self.d_k)  # B, T, H, dk (NeMo keeps q here)
        k = self.linear_k(x).view(b, -1, self.heads, self.d_k).transpose(1, 2)
        v = self.linear_v(x).view(b, -1, self.heads, self.d_k).transpose(1, 2)
        p = self.linear_pos(pos_emb).view(1, -1, self.heads, self.d_k).transpose(1, 2)
        q_u = (q + self.pos_bias_u).transpose(1, 2)
        q_v = (q + self.pos_bias_v).transpose(1, 2)
        ac = torch.matmul(q_u, k.transpose(-2, -1))
        bd = rel_shift(torch.matmul(q_v, p.transpose(-2, -1)), k.shape[2])
        scores = (ac + bd) / math.sqrt(self.d_k)
        mask = pad_mask.unsqueeze(1)  # B, 1, T, T: True = padded
        scores = scores.masked_fill(mask, -10000.0)
        attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
        o = torch.matmul(attn, v).transpose(1, 2).reshape(b, -1, self.heads * self.d_k)
        return self.linear_out(o)


class NemoConformerLayer(nn.Module):
    def __init__(self, d, heads, ffn, kernel):
        super().__init__()
        self.norm_feed_forward1 = nn.LayerNorm(d)
        self.feed_forward1 = nn.Sequential(nn.Linear(d, ffn), nn.SiLU(), nn.Linear(ffn, d))
        self.norm_self_att = nn.LayerNorm(d)
        self.self_attn = NemoRelAttention(d, heads)
        self.norm_conv = nn.LayerNorm(d)
        self.pointwise_conv1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise_conv = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.batch_norm = nn.BatchNorm1d(d)
        self.pointwise_conv2 = nn.Conv1d(d, d, 1)
        self.norm_feed_forward2 = nn.LayerNorm(d)
        self.feed_forward2 = nn.Sequential(nn.Linear(d, ffn), nn.SiLU(), nn.Linear(ffn, d))
        self.norm_out = nn.LayerNorm(d)

    def forward(self, x, att_mask, pad_mask, pos_emb):
        x = x + 0.5 * self.feed_forward1(self.norm_feed_forward1(x))
        x = x + self.self_attn(self.norm_self_att(x), att_mask, pos_emb)
        y = F.glu(self.pointwise_conv1(self.norm_conv(x).transpose(1, 2)), dim=1)
        y = y.masked_fill(pad_mask.unsqueeze(1), 0.0)
        y = self.pointwise_conv2(F.silu(self.batch_norm(self.depthwise_conv(y))))
        x = x + y.transpose(1, 2)
        x = x + 0.5 * self.feed_forward2(self.norm_feed_forward2(x))
        return self.norm_out(x)


class NemoConformerEncoder(nn.Module):
    """audio_signal [B, feat, T], length [B] -> outputs [B, D, T/4], encoded_lengths [B]."""

    def __init__(self, feat=40, d=64, heads=4, ffn=128, kernel=9, layers=2, channels=16):
        super().__init__()
        self.d = d
        self.conv = nn.Sequential(nn.Conv2d(1, channels, 3, 2, 1), nn.ReLU(),
                                  nn.Conv2d(channels, channels, 3, 2, 1), nn.ReLU())
        freq = ((feat - 1) // 2 + 1 - 1) // 2 + 1
        self.out = nn.Linear(channels * freq, d)
        self.xscale = math.sqrt(d)
        self.layers = nn.ModuleList([NemoConformerLayer(d, heads, ffn, kernel) for _ in range(layers)])

    def forward(self, audio_signal, length):
        x = self.conv(audio_signal.transpose(1, 2).unsqueeze(1))  # B, C, T/4, F/4
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).reshape(b, t, c * f)) * self.xscale
        for _ in range(2):
            length = torch.div(length + 2 - 3, 2, rounding_mode="floor") + 1
        pos_emb = rel_positions(t, self.d)
        valid = torch.arange(t, device=x.device).expand(b, t) < length.unsqueeze(-1)
        pad_mask = ~valid
        att_mask = ~(valid.unsqueeze(1) & valid.unsqueeze(2))
        for layer in self.layers:
            x = layer(x, att_mask, pad_mask, pos_emb)
        return x.transpose(1, 2), length


class WholeUtterance(nn.Module):
    def __init__(self, streaming):
        super().__init__()
        self.streaming = streaming

    def forward(self, x):
        return self.streaming.whole_utterance(x)
