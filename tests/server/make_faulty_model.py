#!/usr/bin/env python3
"""Writes a model that passes every deploy step but fails on live speech.

It is the null model (bench/server/make_null_model.py) with one more path: a chunk of one stream
(batch 1) whose feature frames change over time (speech) reads element 1000 of a two-element
table, where the engine's Gather reports an index out of range; anything else reads element 0.
What deploy runs never trips it: the build's profiling run (batch 8 of random numbers), the
warm-up (digital silence: every frame the same) and the latency gate (zeros at batch 8). The
element read is 0, so the outputs are the null model's wherever it runs. The lifecycle test
deploys it as a new version and expects the server to retire it for live errors and go back to
the previous version.

Usage: /usr/bin/python3 tests/server/make_faulty_model.py NULL_MODEL.onnx OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main() -> None:
    model = onnx.load(sys.argv[1])
    graph = model.graph
    softmax = next(n for n in graph.node if n.op_type == "LogSoftmax")
    logits = softmax.input[0]
    graph.initializer.extend([
        numpy_helper.from_array(np.zeros(2, np.float32), "fault_table"),
        numpy_helper.from_array(np.array(0, np.int64), "fault_zero_index"),
        numpy_helper.from_array(np.array(1, np.int64), "fault_one"),
        numpy_helper.from_array(np.array([0], np.int64), "fault_first"),
        numpy_helper.from_array(np.array([1], np.int64), "fault_second"),
        numpy_helper.from_array(np.array(0.5, np.float32), "fault_change_limit"),
        numpy_helper.from_array(np.array(1000, np.int64), "fault_index_step"),
    ])
    added = [
        # batch == 1
        helper.make_node("Shape", ["features"], ["fault_shape"]),
        helper.make_node("Gather", ["fault_shape", "fault_zero_index"], ["fault_batch"], axis=0),
        helper.make_node("Equal", ["fault_batch", "fault_one"], ["fault_single"]),
        # the frames differ from the first one by more than the limit somewhere
        helper.make_node("Slice", ["features", "fault_first", "fault_second", "fault_second"],
                         ["fault_frame0"]),
        helper.make_node("Sub", ["features", "fault_frame0"], ["fault_change"]),
        helper.make_node("Abs", ["fault_change"], ["fault_abs_change"]),
        helper.make_node("ReduceMax", ["fault_abs_change"], ["fault_max_change"], keepdims=0),
        helper.make_node("Greater", ["fault_max_change", "fault_change_limit"], ["fault_varies"]),
        helper.make_node("And", ["fault_single", "fault_varies"], ["fault_trips"]),
        helper.make_node("Cast", ["fault_trips"], ["fault_flag"], to=TensorProto.INT64),
        helper.make_node("Mul", ["fault_flag", "fault_index_step"], ["fault_index"]),
        helper.make_node("Gather", ["fault_table", "fault_index"], ["fault_zero"], axis=0),
        helper.make_node("Add", [logits, "fault_zero"], ["fault_logits"]),
    ]
    # The warm-up's last, shorter chunk is padded (to a multiple of the subsampling: 4 frames for
    # the default model version 2); padded with the silence frame, a chunk of digital silence
    # stays one frame repeated, as the trip condition above assumes (the zero frame would differ).
    pads = [p for p in model.metadata_props if p.key == "voxrt.chunk_pad"]
    if pads:
        pads[0].value = "silence"
    else:
        model.metadata_props.append(onnx.StringStringEntryProto(key="voxrt.chunk_pad",
                                                                value="silence"))
    softmax.input[0] = "fault_logits"
    position = list(graph.node).index(softmax)
    for offset, node in enumerate(added):
        graph.node.insert(position + offset, node)
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])


if __name__ == "__main__":
    main()
