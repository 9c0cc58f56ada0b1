"""Rewrites an ONNX model into the form onnxruntime's dynamic quantization produces, so that
onnxruntime can run "its own INT8" on this machine, where Python onnxruntime (which holds the
quantization tool, onnxruntime.quantization.quantize_dynamic) cannot be installed.

This is our re-implementation of that tool's output format with its default settings
(per-tensor weights, weight type int8, no reduced range, MatMul only with a constant B), written
from onnxruntime's documented operator set, not its code:
  - MatMul with an initializer B: DynamicQuantizeLinear on A (uint8, per tensor, asymmetric, its
    range taken at run time), B quantized once to int8 (symmetric, zero point 0, scale
    max|B| / 127), MatMulInteger, Cast to float, Mul by a_scale * b_scale. A bias Add after it
    stays as it is (onnxruntime fuses the chain into DynamicQuantizeMatMul when it loads it);
  - Conv with an initializer W: the same with ConvInteger, the bias added afterwards;
  - LSTM with initializer W and R: com.microsoft DynamicQuantizeLSTM with W and R in int8,
    transposed to [directions, input, 4 * hidden] and [directions, hidden, 4 * hidden], one scale
    per direction;
  - everything else stays FP32. onnxruntime's tool quantizes Conv, MatMul, LSTM and Attention
    (the contrib op) dynamically; Gemm and GRU are not in its dynamic set, so they stay FP32
    here too.
An activation that feeds several quantized nodes is quantized once.

  ort_dynamic_quantize.py IN.onnx OUT.onnx
prints what it quantized (one line per kind) and fails when nothing was.
/usr/bin/python3 (Debian's onnx and numpy).
"""
import argparse
import collections
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS_DOMAIN = "com.microsoft"


class Rewriter:
    def __init__(self, model):
        self.model = model
        self.graph = model.graph
        self.initializers = {t.name: t for t in self.graph.initializer}
        self.quantized_activations = {}  # name -> (quantized, scale, zero point)
        self.new_initializers = []
        self.used_names = {t.name for t in self.graph.initializer}
        self.used_names.update(v for n in self.graph.node for v in list(n.input) + list(n.output))
        self.used_names.update(i.name for i in self.graph.input)
        self.counts = collections.Counter()

    def unique(self, name):
        candidate, k = name, 1
        while candidate in self.used_names:
            candidate, k = f"{name}_{k}", k + 1
        self.used_names.add(candidate)
        return candidate

    def constant(self, name, array):
        name = self.unique(name)
        self.new_initializers.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, name):
        t = self.initializers.get(name)
        if t is None or t.data_type != TensorProto.FLOAT:
            return None
        return numpy_helper.to_array(t)

    def quantize_activation(self, name, nodes):
        """DynamicQuantizeLinear once per activation: uint8 values, scale, zero point."""
        if name not in self.quantized_activations:
            q, s, z = (self.unique(name + suffix) for suffix in ("_quantized", "_scale", "_zero_point"))
            nodes.append(helper.make_node("DynamicQuantizeLinear", [name], [q, s, z],
                                          self.unique(name + "_QuantizeLinear")))
            self.quantized_activations[name] = (q, s, z)
        return self.quantized_activations[name]

    @staticmethod
    def symmetric_int8(w):
        """Per-tensor symmetric int8: q = round(w / scale), scale = max|w| / 127 (1 when all zero)."""
        peak = float(np.max(np.abs(w))) if w.size else 0.0
        scale = np.float32(peak / 127.0 if peak > 0 else 1.0)
        q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        return q, scale

    def integer_product(self, node, op_type, weight_name, extra_attrs, nodes, out):
        """op_type (MatMulInteger / ConvInteger) of the quantized A and W, back to float into
        `out`."""
        w = self.weight(weight_name)
        wq, w_scale = self.symmetric_int8(w)
        wq_name = self.constant(weight_name + "_quantized", wq)
        w_scale_name = self.constant(weight_name + "_scale", np.array(w_scale, dtype=np.float32))
        w_zero_name = self.constant(weight_name + "_zero_point", np.array(0, dtype=np.int8))
        aq, a_scale, a_zero = self.quantize_activation(node.input[0], nodes)
        base = node.name or node.output[0]
        integer = self.unique(node.output[0] + "_output_quantized")
        nodes.append(helper.make_node(op_type, [aq, wq_name, a_zero, w_zero_name], [integer],
                                      self.unique(base + "_quant"), **extra_attrs))
        as_float = self.unique(integer + "_cast_output")
        nodes.append(helper.make_node("Cast", [integer], [as_float], self.unique(integer + "_cast"),
                                      to=TensorProto.FLOAT))
        scales = self.unique(base + "_quant_scales_mul:0")
        nodes.append(helper.make_node("Mul", [a_scale, w_scale_name], [scales],
                                      self.unique(base + "_quant_scales_mul")))
        nodes.append(helper.make_node("Mul", [as_float, scales], [out],
                                      self.unique(base + "_quant_output_scale_mul")))

    def matmul(self, node, nodes):
        w = self.weight(node.input[1])
        if w is None or w.ndim != 2:
            return False
        self.integer_product(node, "MatMulInteger", node.input[1], {}, nodes, node.output[0])
        self.counts["MatMul -> MatMulInteger"] += 1
        return True

    def conv(self, node, nodes):
        w = self.weight(node.input[1])
        if w is None:
            return False
        bias = self.weight(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if len(node.input) > 2 and node.input[2] and bias is None:
            return False  # a bias that is not a float initializer: leave the node alone
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        scaled = node.output[0] if bias is None else self.unique(node.output[0] + "_before_bias")
        self.integer_product(node, "ConvInteger", node.input[1], attrs, nodes, scaled)
        if bias is not None:
            # [C] -> [C, 1, ...] so that it broadcasts over [N, C, spatial...].
            shaped = bias.reshape((-1,) + (1,) * (w.ndim - 2)).astype(np.float32)
            bias_name = self.constant(node.input[2] + "_reshaped", shaped)
            nodes.append(helper.make_node("Add", [scaled, bias_name], [node.output[0]],
                                          self.unique((node.name or node.output[0]) + "_quant_bias_add")))
        self.counts["Conv -> ConvInteger"] += 1
        return True

    def lstm(self, node, nodes):
        w = self.weight(node.input[1])
        r = self.weight(node.input[2])
        if w is None or r is None or w.ndim != 3 or r.ndim != 3:
            return False
        quantized = []
        for name, array in ((node.input[1], w), (node.input[2], r)):
            per_direction = [self.symmetric_int8(array[d]) for d in range(array.shape[0])]
            q = np.stack([np.ascontiguousarray(p[0].T) for p in per_direction])  # [dir, in, 4H]
            scales = np.array([p[1] for p in per_direction], dtype=np.float32)
            quantized.append((self.constant(name + "_quantized", q), self.constant(name + "_scale", scales),
                              self.constant(name + "_zero_point", np.zeros(array.shape[0], dtype=np.int8))))
        (wq, ws, wz), (rq, rs, rz) = quantized
        optional = [node.input[i] if len(node.input) > i else "" for i in range(3, 8)]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        nodes.append(helper.make_node("DynamicQuantizeLSTM", [node.input[0], wq, rq, *optional, ws, wz, rs, rz],
                                      list(node.output), self.unique((node.name or node.output[0]) + "_quant"),
                                      domain=MS_DOMAIN, **attrs))
        self.counts["LSTM -> com.microsoft DynamicQuantizeLSTM"] += 1
        return True

    def run(self):
        rewritten = []
        for node in self.graph.node:
            nodes = []
            done = False
            if node.domain in ("", "ai.onnx"):
                if node.op_type == "MatMul":
                    done = self.matmul(node, nodes)
                elif node.op_type == "Conv":
                    done = self.conv(node, nodes)
                elif node.op_type == "LSTM":
                    done = self.lstm(node, nodes)
                elif node.op_type in ("Gemm", "GRU"):
                    self.counts[f"{node.op_type} left in FP32 (not in the dynamic set)"] += 1
            rewritten.extend(nodes if done else [node])
        del self.graph.node[:]
        self.graph.node.extend(rewritten)
        # Weights no node reads any more (the FP32 originals of quantized weights) are dropped.
        read = {i for n in self.graph.node for i in n.input}
        kept = [t for t in self.graph.initializer if t.name in read]
        del self.graph.initializer[:]
        self.graph.initializer.extend(kept + self.new_initializers)
        if any(n.domain == MS_DOMAIN for n in self.graph.node) and not any(
                o.domain == MS_DOMAIN for o in self.model.opset_import):
            self.model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
        return self.counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input")
    parser.add_argument("output")
    args = parser.parse_args()
    model = onnx.load(args.input)
    counts = Rewriter(model).run()
    onnx.save(model, args.output)
    for kind, n in sorted(counts.items()):
        print(f"{n:4d} x {kind}")
    if not any("->" in k for k in counts):
        sys.exit(f"error: {args.input}: no MatMul with a constant 2-D B, Conv with constant weights or LSTM "
                 "with constant W/R: nothing was quantized")


if __name__ == "__main__":
    main()
