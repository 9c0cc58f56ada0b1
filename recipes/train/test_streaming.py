#!/usr/bin/env python3
"""Streaming == offline: chunk-by-chunk log-probs with carried states equal one whole-utterance
call, for random weights (BatchNorm statistics randomised too), odd chunk sizes mixed, batch rows
independent of each other. Exits non-zero on a mismatch.  Run: /usr/bin/python3 test_streaming.py
"""
import sys

import torch

from model import StreamingDS2


def main():
    torch.manual_seed(7)
    model = StreamingDS2(hidden=96, layers=3)
    for bn in (model.bn1, model.bn2):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.2, 0.2)
    model.eval()
    worst = 0.0
    with torch.no_grad():
        for frames, chunk_sizes in [(96, [32]), (100, [2, 10, 24, 8, 56]), (64, [64]),
                                    (70, [16, 6, 30, 18])]:
            features = torch.randn(3, frames, 80)
            full = model.offline(features)
            states = model.initial_states(3)
            pieces, start = [], 0
            while start < frames:
                for size in chunk_sizes:
                    if start >= frames:
                        break
                    chunk = features[:, start:start + size]
                    log_probs, *states = model(chunk, *states)
                    pieces.append(log_probs)
                    start += size
            streamed = torch.cat(pieces, dim=1)
            diff = (streamed - full).abs().max().item()
            worst = max(worst, diff)
            # Batch independence: row 1 alone must give row 1's outputs.
            alone = model.offline(features[1:2])
            diff_row = (alone - full[1:2]).abs().max().item()
            worst = max(worst, diff_row)
            print(f"frames {frames} chunks {chunk_sizes}: stream vs offline {diff:.2e}, "
                  f"row alone vs batch {diff_row:.2e}")
    ok = worst < 1e-4
    print("PASS" if ok else "FAIL", f"worst {worst:.2e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
