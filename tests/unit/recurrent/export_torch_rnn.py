"""Writes reference cases for unit_recurrent: small torch nn.GRU / nn.LSTM / nn.RNN modules are
exported to ONNX, and the exported node's attributes and W/R/B initializers are written together
with an input, initial states and torch's outputs. The C++ test then runs voxrt's reference
kernel on the ONNX weights, so it checks our reading of the ONNX semantics (gate order,
linear_before_reset, bidirectional layout) against torch itself.

Usage: /usr/bin/python3 export_torch_rnn.py OUT_FILE
"""
import io
import sys
import zlib

import numpy as np
import onnx
import torch
from onnx import numpy_helper


def onnx_node_and_weights(module, args):
    buffer = io.BytesIO()
    torch.onnx.export(module, args, buffer, opset_version=14)
    model = onnx.load_from_string(buffer.getvalue())
    tensors = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            tensors[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    for node in model.graph.node:
        if node.op_type in ("GRU", "LSTM", "RNN"):
            return node, tensors
    raise RuntimeError("no recurrent node in the export")


def write_tensor(out, name, array):
    array = np.ascontiguousarray(array, dtype=np.float32)
    out.write(f"tensor {name} {array.ndim} {' '.join(str(d) for d in array.shape)}\n")
    out.write(" ".join(repr(float(v)) for v in array.reshape(-1)) + "\n")


def write_case(out, name, kind, hidden, input_size, seq, batch, bidirectional, **extra):
    torch.manual_seed(zlib.crc32(name.encode()))
    cls = {"GRU": torch.nn.GRU, "LSTM": torch.nn.LSTM, "RNN": torch.nn.RNN}[kind]
    module = cls(input_size, hidden, bidirectional=bidirectional, **extra).eval()
    dirs = 2 if bidirectional else 1
    x = torch.randn(seq, batch, input_size)
    h0 = torch.randn(dirs, batch, hidden) * 0.5
    c0 = torch.randn(dirs, batch, hidden) * 0.5
    with torch.no_grad():
        if kind == "LSTM":
            y, (h_n, c_n) = module(x, (h0, c0))
            node, tensors = onnx_node_and_weights(module, (x, (h0, c0)))
        else:
            y, h_n = module(x, h0)
            node, tensors = onnx_node_and_weights(module, (x, h0))
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    out.write(f"case {name}\nop {kind}\n")
    out.write(f"direction {attrs.get('direction', b'forward').decode()}\n")
    out.write(f"hidden {attrs['hidden_size']}\n")
    out.write(f"linear_before_reset {attrs.get('linear_before_reset', 0)}\n")
    acts = [a.decode() for a in attrs.get("activations", [])]
    out.write(f"activations {len(acts)} {' '.join(acts)}\n")
    write_tensor(out, "W", tensors[node.input[1]])
    write_tensor(out, "R", tensors[node.input[2]])
    write_tensor(out, "B", tensors[node.input[3]])
    write_tensor(out, "X", x.numpy())
    write_tensor(out, "initial_h", h0.numpy())
    if kind == "LSTM":
        write_tensor(out, "initial_c", c0.numpy())
    # torch: y [seq, batch, dirs*hidden] -> ONNX Y [seq, dirs, batch, hidden]
    y_onnx = y.numpy().reshape(seq, batch, dirs, hidden).transpose(0, 2, 1, 3)
    write_tensor(out, "Y", y_onnx)
    write_tensor(out, "Y_h", h_n.numpy())
    if kind == "LSTM":
        write_tensor(out, "Y_c", c_n.numpy())
    out.write("end\n")


def main():
    with open(sys.argv[1], "w") as out:
        write_case(out, "gru_forward", "GRU", 5, 3, 4, 2, False)
        write_case(out, "gru_bidirectional", "GRU", 6, 4, 5, 3, True)
        write_case(out, "lstm_forward", "LSTM", 5, 3, 4, 2, False)
        write_case(out, "lstm_bidirectional", "LSTM", 7, 4, 5, 3, True)
        write_case(out, "rnn_tanh_bidirectional", "RNN", 4, 3, 5, 2, True)
        write_case(out, "rnn_relu_forward", "RNN", 6, 5, 4, 1, False, nonlinearity="relu")


if __name__ == "__main__":
    main()
