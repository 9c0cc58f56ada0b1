"""voxrt: streaming speech recognition.

Build an engine from a streaming ONNX model once, open a Recognizer over it, and feed each
Stream audio chunk by chunk; ``Stream.decode()`` returns partial and final results with word
timings. Streams fed from different threads decode together in batches.

>>> import voxrt
>>> engine = voxrt.Engine.build("models/default/model.onnx", "default.engine")
>>> recognizer = voxrt.Recognizer(engine)
>>> samples, rate = voxrt.read_wav("samples/play_music.wav")
>>> with recognizer.open_stream(sample_rate=rate) as stream:
...     for result in voxrt.stream_chunks(stream, samples, rate):
...         print(result.is_final, result.text)
"""

from __future__ import annotations

import wave
from typing import Iterator, Tuple

import numpy as np

from ._voxrt import Engine, Error, Recognizer, Result, Stream, Word

__all__ = ["Engine", "Error", "Recognizer", "Result", "Stream", "Word", "read_wav",
           "stream_chunks", "transcribe"]


def read_wav(path: str) -> Tuple[np.ndarray, int]:
    """Reads a 16-bit PCM WAV file as (int16 mono samples, sample rate); channels are averaged."""
    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise Error(f"invalid argument: {path}: read_wav reads 16-bit PCM WAV, this one has "
                        f"{8 * w.getsampwidth()}-bit samples")
        frames = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        channels = w.getnchannels()
        if channels > 1:
            frames = frames.reshape(-1, channels).mean(axis=1).astype(np.int16)
        return frames, w.getframerate()


def stream_chunks(stream: Stream, samples: np.ndarray, sample_rate: int,
                  chunk_ms: int = 20) -> Iterator[Result]:
    """Feeds ``samples`` to ``stream`` in chunk_ms pieces (as a microphone would send them),
    decoding after each piece, then finishes the stream; yields every result as it comes."""
    step = max(1, sample_rate * chunk_ms // 1000)
    for start in range(0, len(samples), step):
        stream.accept(samples[start:start + step])
        yield from stream.decode()
    stream.input_finished()
    while not stream.finished:
        yield from stream.decode()
    yield from stream.results()


def transcribe(recognizer: Recognizer, samples: np.ndarray, sample_rate: int,
               chunk_ms: int = 20) -> str:
    """The finals of one clip streamed through a new stream, joined by spaces."""
    with recognizer.open_stream(sample_rate=sample_rate) as stream:
        finals = [r.text for r in stream_chunks(stream, samples, sample_rate, chunk_ms)
                  if r.is_final and r.text]
    return " ".join(finals)
