"""Type hints for voxrt's extension module (python/src/voxrt_module.cpp)."""

from os import PathLike
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

class Error(RuntimeError):
    """A voxrt failure: "STATUS: message" (what was expected, what was found, where)."""

class Engine:
    """A compiled model file (voxrt build), checked on load."""

    @property
    def path(self) -> str: ...
    @property
    def metadata(self) -> Dict[str, str]: ...
    @staticmethod
    def load(path: str) -> Engine: ...
    @staticmethod
    def build(onnx_path: str, engine_path: str, *, threads: int = 1, autotune: bool = True,
              timing_cache: Optional[str] = None, max_batch: int = 64) -> Engine: ...

class Word:
    @property
    def word(self) -> str: ...
    @property
    def start(self) -> float:
        """Seconds from the start of the stream."""
    @property
    def end(self) -> float: ...
    @property
    def conf(self) -> float:
        """Confidence in (0, 1]."""

class Result:
    @property
    def text(self) -> str: ...
    @property
    def is_final(self) -> bool: ...
    @property
    def utterance(self) -> int: ...
    @property
    def endpoint(self) -> str:
        """'none', 'rule1_trailing_silence', 'rule2_silence_after_speech',
        'rule3_max_utterance_length' or 'vad_end_of_speech'."""
    @property
    def words(self) -> List[Word]: ...

Audio = Union[npt.NDArray[np.float32], npt.NDArray[np.float64], npt.NDArray[np.int16], bytes,
              bytearray, memoryview]

class Stream:
    def accept(self, audio: Audio) -> None:
        """Mono audio at the stream's rate: float in [-1, 1), int16, or PCM16 bytes."""
    def input_finished(self) -> None: ...
    def decode(self) -> List[Result]:
        """Runs the model on what is ready (batched with other threads' streams)."""
    def results(self) -> List[Result]: ...
    @property
    def finished(self) -> bool: ...
    @property
    def audio_seconds(self) -> float: ...
    def close(self) -> None: ...
    def __enter__(self) -> Stream: ...
    def __exit__(self, *args: object) -> None: ...

class Recognizer:
    def __init__(self, engine: Union[Engine, str, PathLike[str]], *, max_streams: int = 64,
                 max_batch: int = 0, threads: int = 1, decoder: str = "greedy",
                 beam_width: Optional[int] = None, lm: Optional[str] = None,
                 vad: str = "energy") -> None: ...
    def open_stream(self, sample_rate: int = 16000, hotwords: Sequence[str] = ...,
                    hotword_bonus: Optional[float] = None) -> Stream: ...
    def decode(self, streams: Sequence[Stream]) -> int:
        """Runs the streams' ready chunks in batches; returns the engine calls made."""
    @property
    def rounds(self) -> int: ...
    @property
    def engine_calls(self) -> int: ...
    @property
    def sample_rate(self) -> int: ...
    @property
    def streams_open(self) -> int: ...
    @property
    def engine_path(self) -> str: ...
