"""Small FP32 models and their onnxruntime-INT8 form by bench/cpu/ort_dynamic_quantize.py, for
ort_dynamic_quantize_test.cpp (which runs both in onnxruntime):

  matmul.onnx  x [2, 6, 40] -> MatMul (constant [40, 24]) -> Add bias
  conv.onnx    x [1, 8, 30] -> Conv (constant [12, 8, 5], bias, pads 2, stride 2)
  lstm.onnx    x [7, 1, 20] -> bidirectional LSTM, hidden 16 (constant W, R, B)
each as NAME.onnx, NAME_int8.onnx, NAME_x.pb (the input); and matmul_expected_int8.pb, the
MatMul model's output computed here with numpy from the quantized form's own definition
(DynamicQuantizeLinear of x, the int8 weights, exact int32 sums, times the two scales, plus the
bias), which onnxruntime must reproduce to float rounding. Fails when the rewrite did not produce
the expected operators.

  ort_quantize_models.py OUT_DIR          (/usr/bin/python3: onnx, numpy)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench/cpu"))
import ort_dynamic_quantize  # noqa: E402

rng = np.random.default_rng(29)


def save_model(out, name, nodes, inputs, outputs, initializers, x):
    graph = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    quantized = onnx.load(os.path.join(out, name + ".onnx"))
    counts = ort_dynamic_quantize.Rewriter(quantized).run()
    onnx.save(quantized, os.path.join(out, name + "_int8.onnx"))
    with open(os.path.join(out, name + "_x.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    return quantized, counts


def expect_ops(model, wanted, absent):
    ops = {n.op_type for n in model.graph.node}
    missing = [o for o in wanted if o not in ops]
    left = [o for o in absent if o in ops]
    if missing or left:
        sys.exit(f"error: {model.graph.name}: quantized form has ops {sorted(ops)}; expected {wanted}, "
                 f"none of {absent}")


def dynamic_quantize_linear(x):
    """ONNX DynamicQuantizeLinear: uint8 over [min(0, x), max(0, x)], round half to even."""
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / 255.0)
    zero_point = np.uint8(np.clip(np.rint(-lo / scale), 0, 255))
    q = np.clip(np.rint(x / scale) + zero_point, 0, 255).astype(np.uint8)
    return q, scale, zero_point


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    f32 = TensorProto.FLOAT

    # MatMul + bias.
    x = rng.normal(0, 1, (2, 6, 40)).astype(np.float32)
    w = rng.normal(0, 0.2, (40, 24)).astype(np.float32)
    b = rng.normal(0, 0.1, (24,)).astype(np.float32)
    model, _ = save_model(
        out, "matmul",
        [helper.make_node("MatMul", ["x", "w"], ["xw"], "mm"), helper.make_node("Add", ["xw", "b"], ["y"], "bias")],
        [helper.make_tensor_value_info("x", f32, [2, 6, 40])], [helper.make_tensor_value_info("y", f32, [2, 6, 24])],
        [("w", w), ("b", b)], x)
    expect_ops(model, ["DynamicQuantizeLinear", "MatMulInteger", "Cast"], ["MatMul"])
    wq, w_scale = ort_dynamic_quantize.Rewriter.symmetric_int8(w)
    xq, x_scale, x_zero = dynamic_quantize_linear(x)
    sums = (xq.astype(np.int32) - np.int32(x_zero)) @ wq.astype(np.int32)
    expected = sums.astype(np.float32) * np.float32(x_scale * w_scale) + b
    with open(os.path.join(out, "matmul_expected_int8.pb"), "wb") as f:
        f.write(numpy_helper.from_array(expected.astype(np.float32), "y").SerializeToString())

    # Conv with a bias.
    x = rng.normal(0, 1, (1, 8, 30)).astype(np.float32)
    w = rng.normal(0, 0.2, (12, 8, 5)).astype(np.float32)
    b = rng.normal(0, 0.1, (12,)).astype(np.float32)
    model, _ = save_model(
        out, "conv", [helper.make_node("Conv", ["x", "w", "b"], ["y"], "conv", pads=[2, 2], strides=[2])],
        [helper.make_tensor_value_info("x", f32, [1, 8, 30])], [helper.make_tensor_value_info("y", f32, [1, 12, 15])],
        [("w", w), ("b", b)], x)
    expect_ops(model, ["DynamicQuantizeLinear", "ConvInteger"], ["Conv"])

    # Bidirectional LSTM.
    hidden, inputs = 16, 20
    x = rng.normal(0, 1, (7, 1, inputs)).astype(np.float32)
    w = rng.normal(0, 0.2, (2, 4 * hidden, inputs)).astype(np.float32)
    r = rng.normal(0, 0.2, (2, 4 * hidden, hidden)).astype(np.float32)
    b = rng.normal(0, 0.1, (2, 8 * hidden)).astype(np.float32)
    model, _ = save_model(
        out, "lstm", [helper.make_node("LSTM", ["x", "w", "r", "b"], ["y"], "lstm", hidden_size=hidden,
                                       direction="bidirectional")],
        [helper.make_tensor_value_info("x", f32, [7, 1, inputs])],
        [helper.make_tensor_value_info("y", f32, [7, 2, 1, hidden])], [("w", w), ("r", r), ("b", b)], x)
    expect_ops(model, ["DynamicQuantizeLSTM"], ["LSTM"])
    print("wrote", out)


if __name__ == "__main__":
    main()
