"""Exports the torch-made models of tests/models at test time (Debian's torch, /usr/bin/python3):
a small DS2-style model (Conv2d+BN+Hardtanh, GRU, FC, log_softmax) and a small Conformer block
stack (LayerNorm, MHSA, depthwise conv, GELU-free SiLU/GLU feed-forward), opset 17."""
import sys

import torch
import torch.nn as nn


class SmallDS2(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 8, (11, 5), (2, 2), (5, 2)), nn.BatchNorm2d(8), nn.Hardtanh(0, 20))
        self.rnn = nn.GRU(8 * 20, 64, 2, batch_first=True)
        self.fc = nn.Linear(64, 29)

    def forward(self, x):  # B, 1, 40, T
        y = self.conv(x)
        b, c, f, t = y.shape
        y = y.view(b, c * f, t).transpose(1, 2)
        y, _ = self.rnn(y)
        return self.fc(y).log_softmax(-1)


class ConformerBlock(nn.Module):
    def __init__(self, d=64, heads=4, kernel=15):
        super().__init__()
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.norm_att = nn.LayerNorm(d)
        self.att = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm_conv = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.norm_out = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        h = self.norm_att(x)
        x = x + self.att(h, h, h, need_weights=False)[0]
        h = self.norm_conv(x).transpose(1, 2)
        h = nn.functional.glu(self.pw1(h), dim=1)
        h = self.pw2(torch.relu(self.bn(self.dw(h))))
        x = x + h.transpose(1, 2)
        x = x + 0.5 * self.ff2(x)
        return self.norm_out(x)


class SmallConformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(80, 64)
        self.blocks = nn.Sequential(ConformerBlock(), ConformerBlock())
        self.out = nn.Linear(64, 29)

    def forward(self, x):  # B, T, 80
        return self.out(self.blocks(self.inp(x))).log_softmax(-1)


def randomize(model):
    torch.manual_seed(0)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval()


if __name__ == "__main__":
    out = sys.argv[1]
    torch.manual_seed(0)
    torch.onnx.export(randomize(SmallDS2()), (torch.randn(1, 1, 40, 50),), f"{out}/small_ds2.onnx", input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch", 3: "T"}}, opset_version=17)
    torch.onnx.export(randomize(SmallConformer()), (torch.randn(1, 30, 80),), f"{out}/small_conformer.onnx",
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch", 1: "T"}}, opset_version=17)
    print("exported", out)
