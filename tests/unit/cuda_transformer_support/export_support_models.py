"""Exports the models tests/unit/cuda_transformer_support checks (argv[1]: output folder), batch
dynamic, opset 17: the benchmark's modules (bench/gpu/transformer_models.py, from the reference
shared/bench/torch_transformer_baseline.py) two layers deep and, for Whisper, narrow; torchaudio's
Conformer (lengths -> padding masks), Emformer and a small wav2vec2. A model whose export fails is
reported in export.log and left out; the test then fails on the missing file."""
import os
import sys

import torch
import torchaudio

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "gpu"))
import transformer_models as tm  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


def attempt(name, fn):
    try:
        fn(os.path.join(out, name))
        print("exported", name, flush=True)
    except Exception as e:  # noqa: BLE001 - report and go on with the other models
        print("FAILED", name, repr(e), flush=True)


ns = tm.load_reference(device="cpu")


def conformer(path):
    model, inputs, names = tm.conformer_chunk(ns, batch=2, layers=2)
    tm.export(model, inputs, names, ["logp"], path, dynamic_batch=True)


def encoder(path):
    model, inputs, names = tm.whisper_encoder(ns, batch=1, layers=2, d=64, heads=4, frames=200)
    tm.export(model, inputs, names, ["h"], path, dynamic_batch=True)


def decoder(path):
    model, inputs, names = tm.whisper_decoder_step(ns, batch=2, layers=2, d=64, heads=4, past=4,
                                                   frames=10, vocab=100)
    tm.export(model, inputs, names, ["logits"], path, dynamic_batch=True)


def ta_conformer(path):
    m = torchaudio.models.Conformer(input_dim=80, num_heads=4, ffn_dim=128, num_layers=2,
                                    depthwise_conv_kernel_size=31).eval()
    x, lengths = torch.randn(2, 50, 80), torch.tensor([50, 40])
    torch.onnx.export(m, (x, lengths), path, opset_version=17, input_names=["x", "lengths"],
                      output_names=["y", "y_lengths"],
                      dynamic_axes={"x": {0: "b", 1: "t"}, "lengths": {0: "b"}})


def ta_emformer(path):
    m = torchaudio.models.Emformer(input_dim=80, num_heads=4, ffn_dim=128, num_layers=2,
                                   segment_length=4, right_context_length=1,
                                   left_context_length=8, max_memory_size=4).eval()
    x, lengths = torch.randn(2, 5, 80), torch.tensor([5, 5])
    torch.onnx.export(m, (x, lengths), path, opset_version=17, input_names=["x", "lengths"],
                      output_names=["y", "y_lengths"], dynamic_axes={"x": {0: "b"}, "lengths": {0: "b"}})


def wav2vec2(path):
    m = torchaudio.models.wav2vec2_model(
        extractor_mode="group_norm", extractor_conv_layer_config=[(32, 10, 5), (32, 3, 2)],
        extractor_conv_bias=False, encoder_embed_dim=64, encoder_projection_dropout=0.0,
        encoder_pos_conv_kernel=16, encoder_pos_conv_groups=4, encoder_num_layers=2,
        encoder_num_heads=4, encoder_attention_dropout=0.0, encoder_ff_interm_features=128,
        encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_norm_first=False,
        encoder_layer_drop=0.0, aux_num_out=32).eval()
    torch.onnx.export(m, (torch.randn(1, 4000),), path, opset_version=17, input_names=["wav"],
                      output_names=["logits"], dynamic_axes={"wav": {0: "b", 1: "n"}})


for name, fn in [("conformer_chunk.onnx", conformer), ("whisper_encoder.onnx", encoder),
                 ("whisper_decoder_step.onnx", decoder), ("ta_conformer.onnx", ta_conformer),
                 ("ta_emformer.onnx", ta_emformer), ("wav2vec2.onnx", wav2vec2)]:
    attempt(name, fn)
