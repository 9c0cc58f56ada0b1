#!/usr/bin/env python3
"""Exports a checkpoint to the voxrt streaming ONNX contract (docs/model_contract.md).

Conformer (version 2): inputs features [batch, T, 80] (normalised; T a multiple of 4, 32
nominal), sub1_state [batch, 2, 80], sub2_state [batch, C, 2, 40], attn_cache [batch, layers,
left, 2 d_model], conv_cache [batch, layers, d_model, kernel-1], key_mask [batch, left];
outputs log_probs [batch, T/4, vocab] and the five states (`_out`). BPE units: the
SentencePiece .model is written beside the ONNX file (voxrt.sentencepiece_model names it; the
engine looks for it beside the engine file).
DS2 (version 1): features, conv1_state, conv2_state, gru_state -> log_probs [batch, T/2, 29].
The time axis is dynamic. For the DS2 model one call on a whole utterance with zero states is
the offline interface; for the Conformer the whole utterance must go in chunks (its attention
sees one chunk and the cache). Metadata: every voxrt.* key, feature settings and normalisation.

    /usr/bin/python3 export_onnx.py --checkpoint CKPT --out models/default/model.onnx
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoint  # noqa: E402
import units as units_module  # noqa: E402
from features import FEATURE_METADATA  # noqa: E402

DS2_CHUNK_FRAMES = 32  # 320 ms of features per call, 16 output frames
DS2_STATE_NAMES = [("conv1_state", "conv1_state_out"), ("conv2_state", "conv2_state_out"),
                   ("gru_state", "gru_state_out")]


def chunk_frames(model):
    return getattr(model, "chunk_feature_frames", DS2_CHUNK_FRAMES)


def state_names(model):
    return getattr(model, "STATE_NAMES", DS2_STATE_NAMES)


def model_name(config):
    if config.get("arch") == "conformer":
        return (f"voxrt-default-conformer-d{config.get('d_model', 256)}-l{config.get('layers', 10)}"
                f"-{config['units'].replace(':', '')}")
    return "voxrt-default-ds2-gru5x512"


def metadata(info, model, engine_unit="char"):
    entries = dict(FEATURE_METADATA)
    units = units_module.from_config(info["config"], engine_unit)
    entries.update({
        "voxrt.model_family": "ctc_streaming",
        "voxrt.feature.mean": ",".join(f"{v:.7g}" for v in info["mean"]),
        "voxrt.feature.inv_std": ",".join(f"{v:.7g}" for v in info["inv_std"]),
        "voxrt.chunk_frames": str(chunk_frames(model)),
        "voxrt.shift_frames": str(chunk_frames(model)),
        "voxrt.subsampling": str(model.subsampling),
        "voxrt.state_pairs": ",".join(f"{a}:{b}" for a, b in state_names(model)),
        "voxrt.model_name": model_name(info["config"]),
        "voxrt.training_steps": str(info["progress"].get("steps", 0)),
    })
    entries.update(units.metadata())
    return entries


def store_weights_fp16(proto, min_elements=1024):
    """Float initializers of at least min_elements values are stored as float16, each read
    through a Cast to float (voxrt folds the Cast at build time: the engine computes in fp32
    with weights rounded to fp16). Halves the file: the 18.7 M parameter model is 37 MB."""
    graph = proto.graph
    casts = []
    for initializer in graph.initializer:
        if initializer.data_type != onnx.TensorProto.FLOAT:
            continue
        array = numpy_helper.to_array(initializer)
        if array.size < min_elements:
            continue
        name = initializer.name
        initializer.CopyFrom(numpy_helper.from_array(array.astype(np.float16), name + "_fp16"))
        casts.append(onnx.helper.make_node("Cast", [name + "_fp16"], [name],
                                           to=onnx.TensorProto.FLOAT, name=name + "_to_fp32"))
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    return len(casts)


def export(checkpoint_dir, out_path, opset=17, engine_unit="char", fp16_weights=False):
    model, info = checkpoint.load(checkpoint_dir)
    states = model.initial_states(1)
    features = torch.zeros(1, chunk_frames(model), model.num_bins)
    names = state_names(model)
    input_names = ["features"] + [a for a, _ in names]
    output_names = ["log_probs"] + [b for _, b in names]
    dynamic_axes = {"features": {0: "batch", 1: "frames"}, "log_probs": {0: "batch", 1: "out_frames"}}
    for a, b in names:
        dynamic_axes[a] = {0: "batch"}
        dynamic_axes[b] = {0: "batch"}
    torch.onnx.export(model, (features, *states), out_path, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic_axes, opset_version=opset,
                      do_constant_folding=True)
    proto = onnx.load(out_path)
    # The exporter names the state outputs' sliced dims symbolically; they equal the inputs'.
    inputs = {i.name: i for i in proto.graph.input}
    for output in proto.graph.output:
        for a, b in names:
            if output.name == b:
                output.type.tensor_type.shape.CopyFrom(inputs[a].type.tensor_type.shape)
    if fp16_weights:
        store_weights_fp16(proto)
    for key, value in metadata(info, model, engine_unit).items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    proto.producer_name = "voxrt recipes/train/export_onnx.py (torch " + torch.__version__ + ")"
    onnx.checker.check_model(proto)
    onnx.save(proto, out_path)
    for name, source in units_module.from_config(info["config"], engine_unit).files().items():
        shutil.copy(source, os.path.join(os.path.dirname(os.path.abspath(out_path)), name))
    return model, info


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--vocabulary-out")
    parser.add_argument("--reference-out", help="write a .npz of inputs/outputs of 3 chunks")
    parser.add_argument("--engine-unit", default="char", choices=["char", "sentencepiece", "pieces"],
                        help="how the engine reads BPE units (units.py BpeUnits)")
    parser.add_argument("--fp16-weights", action="store_true",
                        help="store weights as float16 read through Cast (half the file)")
    args = parser.parse_args()
    model, info = export(args.checkpoint, args.out, engine_unit=args.engine_unit,
                         fp16_weights=args.fp16_weights)
    size_mb = os.path.getsize(args.out) / 1e6
    proto = onnx.load(args.out)
    ops = sorted({n.op_type for n in proto.graph.node})
    print(f"{args.out}: {size_mb:.1f} MB, opset {proto.opset_import[0].version}, ops {ops}")
    if args.vocabulary_out:
        with open(args.vocabulary_out, "w") as f:
            f.write("\n".join(units_module.from_config(info["config"]).vocabulary) + "\n")
    if args.reference_out:
        write_reference(model, args.reference_out)


def write_reference(model, path, chunks=3, streams=2):
    """Reference streaming run (fixed seed): `chunks` chunks for `streams` streams, so a runtime
    (or onnxruntime) can check the graph against PyTorch. offline_log_probs is the whole input
    through model.offline, for the DS2 model only (the Conformer's offline() is a chunk mask, not
    one ONNX call). first_call_* are the outputs of one ONNX call, the first chunk from zero
    states (the inputs: features[:, :chunk] and zeros), so a test_data_set of the model can be
    made without PyTorch (tests/e2e/docs_examples.sh)."""
    chunk = chunk_frames(model)
    generator = torch.Generator().manual_seed(11)
    features = torch.randn(streams, chunks * chunk, model.num_bins, generator=generator)
    states = model.initial_states(streams)
    outputs = []
    extra = {}
    with torch.no_grad():
        for k in range(chunks):
            log_probs, *states = model(features[:, k * chunk:(k + 1) * chunk], *states)
            outputs.append(log_probs)
            if k == 0:
                extra["first_call_log_probs"] = log_probs.numpy()
                extra.update({f"first_call_{b}": s.numpy()
                              for (_, b), s in zip(state_names(model), states)})
        offline = model.offline(features)
    if not hasattr(model, "chunk_feature_frames"):
        # DS2: one ONNX call on the whole input with zero states is its offline interface.
        extra["offline_log_probs"] = offline.numpy()
    np.savez(path, features=features.numpy(), log_probs=torch.cat(outputs, 1).numpy(), **extra,
             **{b: s.numpy() for (_, b), s in zip(state_names(model), states)})
    print("reference written to", path)


if __name__ == "__main__":
    main()
