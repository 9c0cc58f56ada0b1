#!/usr/bin/env python3
"""Carries an FP32 ONNX model to the GPU machine in half the bytes (the device call's working
tree is limited to 64 MiB and the default model alone is 32 MB).

  pack MODEL.onnx OUT.npz     float32 initializers rounded to float16 (the rest kept as is)
  unpack OUT.npz MODEL.onnx   the graph again, with those weights widened back to float32

The unpacked model is the packed one with every float32 weight rounded to float16: fine for
what the device runs from it (FP16 engines, server soaks, deploy timings), not for FP32
accuracy comparisons. Both directions print what they did.
"""
import io
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def pack(model_path, out_path):
    model = onnx.load(model_path)
    arrays = {}
    rounded = 0
    for index, tensor in enumerate(model.graph.initializer):
        value = numpy_helper.to_array(tensor)
        if value.dtype == np.float32:
            arrays[f"w{index}"] = value.astype(np.float16)
            rounded += 1
            tensor.ClearField("raw_data")
            tensor.ClearField("float_data")
    arrays["graph"] = np.frombuffer(model.SerializeToString(), dtype=np.uint8)
    np.savez(out_path, **arrays)
    print(f"packed {model_path}: {rounded} float32 initializers rounded to float16 -> {out_path}")


def unpack(packed_path, model_path):
    data = np.load(packed_path)
    model = onnx.load_model_from_string(data["graph"].tobytes())
    widened = 0
    for index, tensor in enumerate(model.graph.initializer):
        key = f"w{index}"
        if key in data:
            restored = numpy_helper.from_array(data[key].astype(np.float32), tensor.name)
            tensor.CopyFrom(restored)
            widened += 1
    onnx.save(model, model_path)
    print(f"unpacked {packed_path}: {widened} initializers widened to float32 -> {model_path}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("pack", "unpack"):
        sys.exit(__doc__)
    (pack if sys.argv[1] == "pack" else unpack)(sys.argv[2], sys.argv[3])
