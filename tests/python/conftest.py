"""Shared fixtures: the default model's engine (built once per session through voxrt.Engine.build,
without autotuning), the voxrt CLI, and speech clips (espeak-ng sentences at several sample
rates, and the bundled sample)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import voxrt

SOURCE = Path(os.environ.get("VOXRT_SOURCE_DIR", Path(__file__).resolve().parents[2]))

SENTENCES = [
    ("turn on the kitchen lights", 16000),
    ("what is the weather like tomorrow", 8000),
    ("set a timer for ten minutes", 22050),
    ("play some music in the living room", 44100),
    ("call my mother on her phone", 16000),
    ("open the garage door please", 48000),
    ("how far away is the moon", 11025),
]


@pytest.fixture(scope="session")
def work_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("voxrt_python")


@pytest.fixture(scope="session")
def engine(work_dir):
    given = os.environ.get("VOXRT_ENGINE")
    if given:
        return voxrt.Engine.load(given)
    return voxrt.Engine.build(str(SOURCE / "models/default/model.onnx"),
                              str(work_dir / "default.engine"), autotune=False)


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("VOXRT_CLI") or shutil.which("voxrt")
    if not path:
        pytest.skip("no voxrt CLI (ctest sets VOXRT_CLI)")
    return path


@pytest.fixture(scope="session")
def clips(work_dir):
    """Eight WAV files: seven synthesized sentences at different rates, and the bundled sample."""
    paths = []
    for i, (text, rate) in enumerate(SENTENCES):
        raw = work_dir / f"speech{i}.raw.wav"
        wav = work_dir / f"speech{i}.wav"
        subprocess.run(["espeak-ng", "-s", "150", "-w", str(raw), text], check=True)
        subprocess.run(["sox", str(raw), "-r", str(rate), "-c", "1", "-b", "16", str(wav),
                        "pad", "0.3", "0.8"], check=True)
        paths.append(wav)
    paths.append(SOURCE / "samples/play_music.wav")
    return paths


def cli_text(cli, engine, wav):
    """The finals `voxrt transcribe` prints for one file, joined as the package joins them."""
    out = subprocess.run([cli, "transcribe", "--engine", engine.path, str(wav)], check=True,
                         capture_output=True, text=True).stdout
    prefix = f"{wav}: "
    finals = [line[len(prefix):] for line in out.splitlines() if line.startswith(prefix)]
    return " ".join(text for text in finals if text)
