"""The Transformer-era models of issue 26 as PyTorch modules and ONNX exports.

The module definitions are the reference's own (shared/bench/torch_transformer_baseline.py: the
streaming Conformer chunk, the Whisper-small encoder and decoder step), loaded from that file
without running its benchmark, so voxrt and PyTorch run the very same modules. Used by
bench/gpu/bench_transformer.py on the GPU machine (PyTorch 2.x) and by the unit test
tests/unit/cuda_transformer_support (Debian's torch 1.13, which has no
F.scaled_dot_product_attention: a math form of it is put in its place there, the pattern
torch's own exporter writes for it).

The reference file is looked for in $VOXRT_SHARED_DIR/bench, <repo>/shared/bench,
<repo>/../shared/bench and <repo>/.device/shared/bench.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REFERENCE = "torch_transformer_baseline.py"


def reference_path():
    dirs = [os.environ.get("VOXRT_SHARED_DIR", ""), os.path.join(REPO, "shared"),
            os.path.join(REPO, "..", "shared"), os.path.join(REPO, ".device", "shared")]
    for d in dirs:
        p = os.path.join(d, "bench", REFERENCE) if d else ""
        if p and os.path.exists(p):
            return p
    raise FileNotFoundError(f"{REFERENCE} not found under {dirs} (bench/ of each); set "
                            "VOXRT_SHARED_DIR to the folder that holds bench/" + REFERENCE)


def _math_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    s = (q @ k.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if is_causal:
        sq, sk = q.shape[-2], k.shape[-2]
        keep = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(sk - sq)
        s = s.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
    return torch.softmax(s, -1) @ v


def load_reference(device="cuda"):
    """The reference's classes (Block, WhisperEncoder, DecLayer, WhisperDecoderStep, ConfLayer,
    ConformerChunk) in a namespace: the file's text up to its timing code, executed."""
    if not hasattr(F, "scaled_dot_product_attention"):
        F.scaled_dot_product_attention = _math_sdpa
    with open(reference_path()) as f:
        text = f.read()
    definitions = text.split("\ndef timeit(")[0]
    namespace = {"__name__": "torch_transformer_baseline"}
    exec(compile(definitions, reference_path(), "exec"), namespace)
    namespace["dev"] = device
    return namespace


class ConformerChunkFlat(nn.Module):
    """ConformerChunk with its per-layer caches as separate tensors (x, k0..kL-1, v0.., c0..): the
    reference takes Python lists, which the exporter flattens the same way."""

    def __init__(self, chunk):
        super().__init__()
        self.chunk = chunk
        self.layers = len(chunk.layers)

    def forward(self, x, *caches):
        n = self.layers
        return self.chunk(x, list(caches[:n]), list(caches[n:2 * n]), list(caches[2 * n:]))


class DecoderStepFlat(nn.Module):
    """WhisperDecoderStep with past and cross K/V as separate tensors, as ConformerChunkFlat."""

    def __init__(self, step):
        super().__init__()
        self.step = step
        self.layers = len(step.layers)

    def forward(self, tok, *kv):
        n = self.layers
        return self.step(tok, list(kv[:n]), list(kv[n:2 * n]), list(kv[2 * n:3 * n]),
                         list(kv[3 * n:]))


def conformer_chunk(ns, batch, layers=12, d=256, heads=4, chunk=16, left=64, conv_cache=30,
                    dtype=torch.float32):
    """(model, inputs, input names): the reference's streaming Conformer chunk, 16 frames of
    256 features with 64 cached key/value frames and 30 cached convolution frames per layer."""
    model = ConformerChunkFlat(ns["ConformerChunk"](d=d, L=layers)).eval()
    hd = d // heads
    x = torch.randn(batch, chunk, d, dtype=dtype)
    kc = [torch.randn(batch, heads, left, hd, dtype=dtype) for _ in range(layers)]
    vc = [torch.randn(batch, heads, left, hd, dtype=dtype) for _ in range(layers)]
    cc = [torch.randn(batch, d, conv_cache, dtype=dtype) for _ in range(layers)]
    names = (["x"] + [f"k{i}" for i in range(layers)] + [f"v{i}" for i in range(layers)] +
             [f"c{i}" for i in range(layers)])
    return model, [x, *kc, *vc, *cc], names


def whisper_encoder(ns, batch, layers=12, d=768, heads=12, frames=3000, dtype=torch.float32):
    model = ns["WhisperEncoder"](d=d, h=heads, L=layers).eval()
    return model, [torch.randn(batch, 80, frames, dtype=dtype)], ["mel"]


def whisper_decoder_step(ns, batch, layers=12, d=768, heads=12, past=64, frames=1500,
                         vocab=51865, dtype=torch.float32):
    model = DecoderStepFlat(ns["WhisperDecoderStep"](d=d, h=heads, L=layers, vocab=vocab)).eval()
    hd = d // heads
    tok = torch.randint(0, vocab, (batch, 1))
    pk = [torch.randn(batch, heads, past, hd, dtype=dtype) for _ in range(layers)]
    pv = [torch.randn(batch, heads, past, hd, dtype=dtype) for _ in range(layers)]
    ck = [torch.randn(batch, heads, frames, hd, dtype=dtype) for _ in range(layers)]
    cv = [torch.randn(batch, heads, frames, hd, dtype=dtype) for _ in range(layers)]
    names = (["tok"] + [f"pk{i}" for i in range(layers)] + [f"pv{i}" for i in range(layers)] +
             [f"ck{i}" for i in range(layers)] + [f"cv{i}" for i in range(layers)])
    return model, [tok, *pk, *pv, *ck, *cv], names


def export(model, inputs, names, out_names, path, dynamic_batch=False):
    """The TorchScript exporter at opset 17 (torch >= 2.9 defaults to dynamo: asked off)."""
    kw = dict(input_names=names, output_names=out_names, opset_version=17)
    if dynamic_batch:
        kw["dynamic_axes"] = {n: {0: "batch"} for n in list(names) + list(out_names)}
    args = (model.cpu(), tuple(x.cpu() for x in inputs), path)
    try:
        torch.onnx.export(*args, **kw, dynamo=False)
    except TypeError:
        torch.onnx.export(*args, **kw)
