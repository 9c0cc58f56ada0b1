"""The default voxrt model: a causal DeepSpeech2-class network (2-D conv front end, unidirectional
GRU stack, character CTC) whose one forward() is both the offline and the streaming interface.

Streaming is exact by construction: the convolutions have no time padding; instead each takes its
last (kernel_time - 1) input frames from the previous chunk as a state (zeros for a fresh stream,
which equals zero left-padding offline). So running chunks of any even length with carried states
gives the same log-probs as one call on the whole utterance (tested in test_streaming.py).
States are batch-first, as docs/model_contract.md requires.
"""
import torch
import torch.nn as nn

VOCABULARY = ["_", " ", "'"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]  # 0 is blank
BLANK_ID = 0
CHAR_TO_ID = {c: i for i, c in enumerate(VOCABULARY) if i != BLANK_ID}


class StreamingDS2(nn.Module):
    def __init__(self, num_bins=80, channels=32, kernel_time=5, kernel_freq=11, hidden=512,
                 layers=5, vocab=len(VOCABULARY)):
        super().__init__()
        self.num_bins, self.channels, self.kernel_time = num_bins, channels, kernel_time
        self.hidden, self.layers = hidden, layers
        self.subsampling = 2
        pad_freq = kernel_freq // 2
        self.conv1 = nn.Conv2d(1, channels, (kernel_time, kernel_freq), (2, 2), (0, pad_freq))
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, (kernel_time, kernel_freq), (1, 2), (0, pad_freq))
        self.bn2 = nn.BatchNorm2d(channels)
        self.act = nn.Hardtanh(0.0, 20.0)
        freq1 = (num_bins + 2 * pad_freq - kernel_freq) // 2 + 1
        self.freq2 = (freq1 + 2 * pad_freq - kernel_freq) // 2 + 1
        self.freq1 = freq1
        self.gru = nn.GRU(channels * self.freq2, hidden, layers, batch_first=True)
        self.fc = nn.Linear(hidden, vocab)

    def initial_states(self, batch, device=None):
        context = self.kernel_time - 1
        return (torch.zeros(batch, context, self.num_bins, device=device),
                torch.zeros(batch, self.channels, context, self.freq1, device=device),
                torch.zeros(batch, self.layers, self.hidden, device=device))

    def forward(self, features, conv1_state, conv2_state, gru_state):
        """features [B, T, bins] (T even), states as initial_states() ->
        log_probs [B, T/2, vocab], new conv1_state, conv2_state, gru_state."""
        context = self.kernel_time - 1
        x = torch.cat([conv1_state, features], dim=1)
        conv1_state_out = x[:, x.shape[1] - context:, :]
        y = self.act(self.bn1(self.conv1(x.unsqueeze(1))))
        y = torch.cat([conv2_state, y], dim=2)
        conv2_state_out = y[:, :, y.shape[2] - context:, :]
        y = self.act(self.bn2(self.conv2(y)))
        batch, channels, frames, freq = y.shape
        y = y.permute(0, 2, 1, 3).reshape(batch, frames, channels * freq)
        y, gru_state_out = self.gru(y, gru_state.transpose(0, 1).contiguous())
        log_probs = self.fc(y).log_softmax(-1)
        return log_probs, conv1_state_out, conv2_state_out, gru_state_out.transpose(0, 1)

    def offline(self, features):
        """Whole utterances from fresh states; odd T is padded by one zero frame."""
        if features.shape[1] % 2:
            features = torch.nn.functional.pad(features, (0, 0, 0, 1))
        states = self.initial_states(features.shape[0], features.device)
        return self.forward(features, *states)[0]


def output_lengths(frame_lengths):
    """Output frames that depend only on real input frames (output j reads frames <= 2j)."""
    return (frame_lengths + 1) // 2


def encode_text(text):
    return [CHAR_TO_ID[c] for c in text if c in CHAR_TO_ID]
