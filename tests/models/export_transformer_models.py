"""Exports the Transformer-era models of transformer_models.py to ONNX (Debian's torch 1.13,
/usr/bin/python3), each with its exporter's names, dynamic axes and opset.

  export_transformer_models.py OUT_DIR            small models for tests/models (a few layers)
  export_transformer_models.py OUT_DIR --bench    the bench sizes: streaming Conformer 12 x 256 chunk,
                                                  Whisper-base encoder and decoder step
"""
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_models as tm  # noqa: E402

warnings.filterwarnings("ignore")


def export(model, args, path, input_names, output_names, dynamic_axes, opset):
    with torch.no_grad():
        torch.onnx.export(model, tuple(args), path, input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=opset, do_constant_folding=True)
    print("exported", os.path.basename(path), "opset", opset, flush=True)


def export_torchaudio(out):
    conformer = tm.randomize(tm.TorchaudioConformer(), 1)
    export(conformer, (torch.randn(2, 30, 80), torch.tensor([30, 22])), f"{out}/ta_conformer.onnx",
           ["input", "lengths"], ["output", "output_lengths"],
           {"input": {0: "batch", 1: "T"}, "lengths": {0: "batch"}, "output": {0: "batch", 1: "T"},
            "output_lengths": {0: "batch"}}, 17)

    # Emformer and the RNN-T transcriber in their full-utterance forward (the mask is built for the
    # traced length, so the export takes 18 frames). Their streaming `infer` does not export for
    # onnxruntime with torch 1.13: the int32 past-length state makes Slice nodes with mixed
    # int32/int64 indices, which onnxruntime refuses, and opset 17 crashes the exporter (SIGFPE).
    emformer = tm.randomize(tm.Emformer(), 2)
    export(emformer, (torch.randn(2, 18, 64), torch.tensor([18, 14])), f"{out}/emformer.onnx",
           ["input", "lengths"], ["output", "output_lengths"],
           {"input": {0: "batch"}, "lengths": {0: "batch"}, "output": {0: "batch"},
            "output_lengths": {0: "batch"}}, 14)

    rnnt = tm.randomize(tm.small_rnnt(), 3)
    export(rnnt.transcriber, (torch.randn(2, 18, 40), torch.tensor([18, 12])), f"{out}/rnnt_transcriber.onnx",
           ["input", "lengths"], ["output", "output_lengths"],
           {"input": {0: "batch"}, "lengths": {0: "batch"}, "output": {0: "batch"},
            "output_lengths": {0: "batch"}}, 13)
    # The joiner's lengths pass through unused: the exported graph has source and target only.
    # The predictor's layer-normed LSTM loops over tokens in Python: the trace unrolls it, so the
    # export takes one token per call, as streaming decoders call it.
    hidden = [torch.zeros(1, 32) for _ in range(4)]
    export(tm.RnntPredictor(rnnt).eval(), (torch.tensor([[3]]), torch.tensor([1]), *hidden),
           f"{out}/rnnt_predictor.onnx", ["targets", "target_lengths", "h0", "c0", "h1", "c1"],
           ["output", "output_lengths", "new_h0", "new_c0", "new_h1", "new_c1"],
           {"targets": {0: "batch"}, "target_lengths": {0: "batch"},
            **{n: {0: "batch"} for n in ["h0", "c0", "h1", "c1"]}}, 13)
    export(tm.RnntJoiner(rnnt).eval(), (torch.randn(1, 5, 32), torch.tensor([5]), torch.randn(1, 3, 32),
                                        torch.tensor([3])),
           f"{out}/rnnt_joiner.onnx", ["source", "source_lengths", "target", "target_lengths"], ["logits"],
           {"source": {0: "batch", 1: "T"}, "target": {0: "batch", 1: "U"}, "source_lengths": {0: "batch"},
            "target_lengths": {0: "batch"}}, 13)

    # Without lengths: torch 1.13 exports torchaudio's padding mask (x[mask] = 0 with a [B, T] mask
    # over [B, T, D]) as a Where that does not broadcast, which onnxruntime refuses too.
    for name, layer_norm, opset in (("wav2vec2", False, 14), ("hubert", True, 17)):
        model = tm.randomize(tm.small_wav2vec2(layer_norm), 4)
        export(model, (torch.randn(2, 1600),), f"{out}/{name}.onnx", ["waveforms"], ["logits"],
               {"waveforms": {0: "batch", 1: "samples"}, "logits": {0: "batch", 1: "T"}}, opset)


def export_whisper(out, c, prefix, opset=14, past_tokens=5):
    torch.manual_seed(5)
    encoder = tm.randomize(tm.WhisperEncoder(c), 5)
    decoder = tm.randomize(tm.WhisperDecoder(c), 6)
    nn_init = torch.nn.init
    nn_init.uniform_(decoder.embed_positions, -0.5, 0.5)
    frames = 2 * c.source_positions
    export(encoder, (torch.randn(1, c.mels, frames),), f"{out}/{prefix}encoder_model.onnx", ["input_features"],
           ["last_hidden_state"], {"input_features": {0: "batch_size"}, "last_hidden_state": {0: "batch_size"}},
           opset)
    hidden = torch.randn(1, c.source_positions, c.d)
    present = tm.whisper_past_names(c.decoder_layers, "present")
    present_axes = {n: {0: "batch_size", 2: "past_decoder_sequence_length + 1" if ".decoder." in n
                        else "encoder_sequence_length_out"} for n in present}
    export(tm.OptimumDecoder(decoder), (torch.tensor([[1, 2, 3, 4]]), hidden), f"{out}/{prefix}decoder_model.onnx",
           ["input_ids", "encoder_hidden_states"], ["logits", *present],
           {"input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
            "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length / 2"},
            "logits": {0: "batch_size", 1: "decoder_sequence_length"}, **present_axes}, opset)
    past_names = tm.whisper_past_names(c.decoder_layers, "past_key_values")
    hd = c.d // c.heads
    past = [torch.randn(1, c.heads, past_tokens if ".decoder." in n else c.source_positions, hd) for n in past_names]
    present_decoder = tm.whisper_past_names(c.decoder_layers, "present", ("decoder",))
    export(tm.OptimumDecoderWithPast(decoder), (torch.tensor([[7]]), *past),
           f"{out}/{prefix}decoder_with_past_model.onnx", ["input_ids", *past_names], ["logits", *present_decoder],
           {"input_ids": {0: "batch_size"},
            **{n: {0: "batch_size", 2: "past_decoder_sequence_length" if ".decoder." in n
                   else "encoder_sequence_length_out"} for n in past_names},
            "logits": {0: "batch_size"},
            **{n: {0: "batch_size", 2: "past_decoder_sequence_length + 1"} for n in present_decoder}}, opset)


def export_streaming_conformer(out, model, name, opset=13):
    states = model.initial_states(1)
    names = model.state_names()
    axes = {}
    for n in names:
        batch_axis = 0 if n.startswith("cached_conv") or n == "processed_lens" else 1
        axes[n] = {batch_axis: "N"}
        axes["new_" + n] = {batch_axis: "N"}
    export(model, (torch.randn(1, model.chunk, model.embed.in_features), *states), f"{out}/{name}.onnx",
           ["x", *names], ["encoder_out", *["new_" + n for n in names]],
           {"x": {0: "N"}, "encoder_out": {0: "N"}, **axes}, opset)


def export_small(out):
    export_torchaudio(out)
    export_whisper(out, tm.WhisperConfig(), "whisper_")
    streaming = tm.randomize(tm.StreamingConformer(), 7)
    export_streaming_conformer(out, streaming, "icefall_conformer_streaming")
    export(tm.WholeUtterance(streaming), (torch.randn(1, 32, 40),), f"{out}/icefall_conformer_whole.onnx", ["x"],
           ["encoder_out"], {"x": {0: "N", 1: "T"}, "encoder_out": {0: "N", 1: "T"}}, 13)
    nemo = tm.randomize(tm.NemoConformerEncoder(), 8)
    export(nemo, (torch.randn(2, 40, 64), torch.tensor([64, 50])), f"{out}/nemo_conformer.onnx",
           ["audio_signal", "length"], ["outputs", "encoded_lengths"],
           {"audio_signal": {0: "B", 2: "T"}, "length": {0: "B"}, "outputs": {0: "B", 2: "D"},
            "encoded_lengths": {0: "B"}}, 16)


def export_bench(out):
    conformer = tm.randomize(tm.StreamingConformer(feat=80, d=256, heads=4, ffn=1024, kernel=31, layers=12,
                                                   chunk=16, left=64, out=500, rel_pos=False), 9)
    export_streaming_conformer(out, conformer, "conformer_chunk", 17)
    export_whisper(out, tm.WHISPER_BASE, "whisper_base_", 14, past_tokens=64)


if __name__ == "__main__":
    target = sys.argv[1]
    os.makedirs(target, exist_ok=True)
    if "--bench" in sys.argv:
        export_bench(target)
    else:
        export_small(target)
