#!/usr/bin/env python3
"""The streaming Conformer (conformer.py), random weights, small sizes, both norms, on the CPU:

- chunk by chunk with carried states == one offline call on the whole utterance (the last chunk
  shorter and padded to a multiple of 4, as the runtime does), for several lengths;
- a batch of rows of different lengths, padded, == each row alone (offline with lengths), and
  streamed rows of one batch == each streamed alone;
- a long stream (many chunks, far past the attention window) stays equal to offline, and the
  states keep their shapes (bounded memory).
Exits non-zero on a mismatch.  Run: /usr/bin/python3 test_conformer.py
"""
import sys

import torch

from conformer import StreamingConformer, output_lengths


def small_model(norm):
    torch.manual_seed(3)
    model = StreamingConformer(vocab=40, d_model=64, d_ff=128, heads=4, layers=3, conv_kernel=7,
                               subsampling_channels=8, chunk_frames=8, left_frames=16, norm=norm)
    with torch.no_grad():
        model.position_bias.normal_(0, 0.5)
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return model.eval()


def stream(model, features):
    """features [B, T, bins] in chunks of chunk_feature_frames (last one padded to 4)."""
    states = model.initial_states(features.shape[0])
    chunk = model.chunk_feature_frames
    pieces, shapes = [], [s.shape for s in states]
    for start in range(0, features.shape[1], chunk):
        piece = features[:, start:start + chunk]
        if piece.shape[1] % 4:
            piece = torch.nn.functional.pad(piece, (0, 0, 0, 4 - piece.shape[1] % 4))
        log_probs, *states = model(piece, *states)
        assert [s.shape for s in states] == shapes, "state shapes changed"
        pieces.append(log_probs)
    return torch.cat(pieces, dim=1)


def main():
    worst = 0.0

    def check(name, a, b):
        nonlocal worst
        diff = (a - b).abs().max().item()
        worst = max(worst, diff)
        print(f"{name}: max |diff| {diff:.2e}")

    for norm in StreamingConformer.NORMS:
        print(f"norm {norm}:")
        check_model(small_model(norm), check)
    ok = worst < 2e-4
    print("PASS" if ok else "FAIL", f"worst {worst:.2e}")
    return 0 if ok else 1


def check_model(model, check):
    with torch.no_grad():
        for frames in (32, 96, 150, 7, 419):
            features = torch.randn(2, frames, 80)
            full = model.offline(features)
            assert full.shape[1] == int(output_lengths(torch.tensor(frames))), full.shape
            check(f"{frames} frames, streamed vs offline", stream(model, features), full)
            check(f"{frames} frames, row 1 streamed alone vs in batch",
                  stream(model, features[1:2]), full[1:2])
        lengths = torch.tensor([150, 61, 97])
        features = torch.randn(3, 150, 80)
        for row in range(3):
            features[row, lengths[row]:] = 7.0  # padding that must not matter
        batch = model.offline(features, lengths)
        for row in range(3):
            alone = model.offline(features[row:row + 1, :lengths[row]])
            out = alone.shape[1]
            check(f"padded batch row {row} ({int(lengths[row])} frames) vs alone",
                  batch[row:row + 1, :out], alone)
        # A long stream: 2000 frames (20 s, 63 chunks) against offline.
        features = torch.randn(1, 2000, 80)
        check("20 s stream vs offline", stream(model, features), model.offline(features))


if __name__ == "__main__":
    sys.exit(main())
