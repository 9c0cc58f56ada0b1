#!/usr/bin/env python3
"""Exports a checkpoint to the voxrt streaming ONNX contract (docs/model_contract.md).

Inputs:  features [batch, T, 80] (normalised; T even, CHUNK_FRAMES nominal), conv1_state
         [batch, 4, 80], conv2_state [batch, 32, 4, 40], gru_state [batch, 5, 512]
Outputs: log_probs [batch, T/2, 29], conv1_state_out, conv2_state_out, gru_state_out
The time axis is dynamic, so one call on a whole utterance with zero states is the offline
interface. Metadata: every voxrt.* key, feature settings and normalisation included.

    /usr/bin/python3 export_onnx.py --checkpoint CKPT --out models/default/model.onnx
"""
import argparse
import os
import sys

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoint  # noqa: E402
from features import FEATURE_METADATA  # noqa: E402
from model import BLANK_ID, VOCABULARY  # noqa: E402

CHUNK_FRAMES = 32  # 320 ms of features per call, 16 output frames
STATE_NAMES = [("conv1_state", "conv1_state_out"), ("conv2_state", "conv2_state_out"),
               ("gru_state", "gru_state_out")]


def metadata(info, model):
    entries = dict(FEATURE_METADATA)
    entries.update({
        "voxrt.model_family": "ctc_streaming",
        "voxrt.feature.mean": ",".join(f"{v:.7g}" for v in info["mean"]),
        "voxrt.feature.inv_std": ",".join(f"{v:.7g}" for v in info["inv_std"]),
        "voxrt.chunk_frames": str(CHUNK_FRAMES),
        "voxrt.shift_frames": str(CHUNK_FRAMES),
        "voxrt.subsampling": str(model.subsampling),
        "voxrt.vocabulary": "\n".join(VOCABULARY),
        "voxrt.unit": "char",
        "voxrt.blank_id": str(BLANK_ID),
        "voxrt.word_boundary": " ",
        "voxrt.state_pairs": ",".join(f"{a}:{b}" for a, b in STATE_NAMES),
        "voxrt.model_name": "voxrt-default-ds2-gru5x512",
        "voxrt.training_steps": str(info["progress"].get("steps", 0)),
    })
    return entries


def export(checkpoint_dir, out_path, opset=17):
    model, info = checkpoint.load(checkpoint_dir)
    states = model.initial_states(1)
    features = torch.zeros(1, CHUNK_FRAMES, model.num_bins)
    input_names = ["features"] + [a for a, _ in STATE_NAMES]
    output_names = ["log_probs"] + [b for _, b in STATE_NAMES]
    dynamic_axes = {"features": {0: "batch", 1: "frames"}, "log_probs": {0: "batch", 1: "out_frames"}}
    for a, b in STATE_NAMES:
        dynamic_axes[a] = {0: "batch"}
        dynamic_axes[b] = {0: "batch"}
    torch.onnx.export(model, (features, *states), out_path, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic_axes, opset_version=opset,
                      do_constant_folding=True)
    proto = onnx.load(out_path)
    # The exporter names the state outputs' sliced dims symbolically; they equal the inputs'.
    inputs = {i.name: i for i in proto.graph.input}
    for output in proto.graph.output:
        for a, b in STATE_NAMES:
            if output.name == b:
                output.type.tensor_type.shape.CopyFrom(inputs[a].type.tensor_type.shape)
    for key, value in metadata(info, model).items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    proto.producer_name = "voxrt recipes/train/export_onnx.py (torch " + torch.__version__ + ")"
    onnx.checker.check_model(proto)
    onnx.save(proto, out_path)
    return model, info


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--vocabulary-out")
    parser.add_argument("--reference-out", help="write a .npz of inputs/outputs of 3 chunks")
    args = parser.parse_args()
    model, info = export(args.checkpoint, args.out)
    size_mb = os.path.getsize(args.out) / 1e6
    proto = onnx.load(args.out)
    ops = sorted({n.op_type for n in proto.graph.node})
    print(f"{args.out}: {size_mb:.1f} MB, opset {proto.opset_import[0].version}, ops {ops}")
    if args.vocabulary_out:
        with open(args.vocabulary_out, "w") as f:
            f.write("\n".join(VOCABULARY) + "\n")
    if args.reference_out:
        # Reference streaming run (fixed seed): 3 chunks of CHUNK_FRAMES for 2 streams, so a
        # runtime (or onnxruntime) can check the graph against PyTorch.
        generator = torch.Generator().manual_seed(11)
        features = torch.randn(2, 3 * CHUNK_FRAMES, model.num_bins, generator=generator)
        states = model.initial_states(2)
        outputs = []
        with torch.no_grad():
            for k in range(3):
                log_probs, *states = model(features[:, k * CHUNK_FRAMES:(k + 1) * CHUNK_FRAMES],
                                           *states)
                outputs.append(log_probs)
            offline = model.offline(features)
        np.savez(args.reference_out, features=features.numpy(),
                 log_probs=torch.cat(outputs, 1).numpy(), offline_log_probs=offline.numpy(),
                 **{b: s.numpy() for (_, b), s in zip(STATE_NAMES, states)})
        print("reference written to", args.reference_out)


if __name__ == "__main__":
    main()
