#!/usr/bin/env python3
"""Writes a streaming CTC model with the default model's interface and almost no compute.

Serving it measures the server's own cost per stream (network threads, queues, features,
decoding, replies) without the engine hiding it: on the 2-core development machine the default
model saturates the one compute worker at about 32 streams, long before the server's
bookkeeping shows. The features, metadata and vocabulary are the default model's; the network is
one 80 -> vocabulary projection of every `voxrt.subsampling`-th frame (the default model's output
rate) and a one-layer state update.

Usage: /usr/bin/python3 bench/server/make_null_model.py OUT.onnx [models/default/model.onnx]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main() -> None:
    out_path = sys.argv[1]
    default_path = sys.argv[2] if len(sys.argv) > 2 else "models/default/model.onnx"
    default = onnx.load(default_path, load_external_data=False)
    metadata = {prop.key: prop.value for prop in default.metadata_props}
    for key in ("voxrt.subsampling", "voxrt.vocabulary"):
        if key not in metadata:
            sys.exit(f"make_null_model: expected {key} in the metadata of {default_path}, found "
                     f"only {sorted(metadata)}")
    subsampling = int(metadata["voxrt.subsampling"])
    classes = len(metadata["voxrt.vocabulary"].split("\n"))
    rng = np.random.default_rng(1)
    projection = rng.standard_normal((80, classes)).astype(np.float32) * 0.1
    initializers = [
        numpy_helper.from_array(projection, "projection"),
        numpy_helper.from_array(np.array([0], np.int64), "slice_start"),
        numpy_helper.from_array(np.array([1 << 30], np.int64), "slice_end"),
        numpy_helper.from_array(np.array([1], np.int64), "slice_axis"),
        numpy_helper.from_array(np.array([subsampling], np.int64), "slice_step"),
    ]
    nodes = [
        helper.make_node("Slice", ["features", "slice_start", "slice_end", "slice_axis",
                                   "slice_step"], ["output_frames"]),
        helper.make_node("MatMul", ["output_frames", "projection"], ["logits"]),
        helper.make_node("LogSoftmax", ["logits"], ["log_probs"], axis=-1),
        helper.make_node("Tanh", ["state"], ["state_out"]),
    ]
    graph = helper.make_graph(
        nodes, "null_streaming_ctc",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", "frames", 80]),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, ["batch", 1, 8])],
        [helper.make_tensor_value_info("log_probs", TensorProto.FLOAT,
                                       ["batch", "out_frames", classes]),
         helper.make_tensor_value_info("state_out", TensorProto.FLOAT, ["batch", 1, 8])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    for prop in default.metadata_props:
        value = prop.value
        if prop.key == "voxrt.state_pairs":
            value = "state:state_out"
        elif prop.key == "voxrt.model_name":
            value = "voxrt-null-server-bench"
        model.metadata_props.append(onnx.StringStringEntryProto(key=prop.key, value=value))
    onnx.checker.check_model(model)
    onnx.save(model, out_path)


if __name__ == "__main__":
    main()
