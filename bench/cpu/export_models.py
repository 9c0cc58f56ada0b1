"""Exports the models of the CPU benchmark to ONNX with Debian's PyTorch (/usr/bin/python3).

DS2 definitions follow shared/bench/torch_ds2_baseline.py (deepspeech.pytorch): two Conv2d
(41x11 / 21x11, 32 channels) + BatchNorm + Hardtanh(0, 20), an RNN stack, FC to 29, log_softmax;
input is 161 frequency bins x T frames of 10 ms. Weights are random (timing does not depend on
training), seeded for reproducibility.
"""
import sys

import torch
import torch.nn as nn


class DS2(nn.Module):
    def __init__(self, bidir=True, hidden=1024, layers=5, rnn=nn.LSTM, nfreq=161, nclass=29):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 32, (41, 11), (2, 2), (20, 5)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20),
            nn.Conv2d(32, 32, (21, 11), (2, 1), (10, 5)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20))
        f = (nfreq + 2 * 20 - 41) // 2 + 1
        f = (f + 2 * 10 - 21) // 2 + 1
        self.rnn = rnn(32 * f, hidden, layers, batch_first=True, bidirectional=bidir)
        self.fc = nn.Linear(hidden * (2 if bidir else 1), nclass)

    def forward(self, x):  # x: B, 1, F, T
        y = self.conv(x)
        b, c, f, t = y.shape
        y = y.view(b, c * f, t).transpose(1, 2)
        y, _ = self.rnn(y)
        return self.fc(y).log_softmax(-1)


def export(model, path):
    torch.manual_seed(0)
    for p in model.parameters():
        nn.init.uniform_(p, -0.05, 0.05)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    model.eval()
    x = torch.randn(1, 1, 161, 200)
    torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch", 3: "T"}, "y": {0: "batch", 1: "T2"}}, opset_version=17)


if __name__ == "__main__":
    out = sys.argv[1]
    export(DS2(bidir=False, hidden=512, rnn=nn.GRU), f"{out}/ds2_gru_uni512x5.onnx")
    export(DS2(), f"{out}/ds2_bilstm1024x5.onnx")
    print("exported to", out)
