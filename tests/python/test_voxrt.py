"""The voxrt Python package as its users use it (Debian's python3 and pytest)."""

import threading

import numpy as np
import pytest

import voxrt
from conftest import SOURCE, cli_text


def test_engine_build_and_load(engine):
    assert engine.metadata["voxrt.model_family"] == "ctc_streaming"
    again = voxrt.Engine.load(engine.path)
    assert again.metadata == engine.metadata


def test_errors_are_voxrt_errors_with_the_file_name(tmp_path):
    with pytest.raises(voxrt.Error, match="/nonexistent.engine"):
        voxrt.Engine.load("/nonexistent.engine")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    with pytest.raises(voxrt.Error, match="junk.onnx"):
        voxrt.Engine.build(str(junk), str(tmp_path / "x.engine"), autotune=False)
    with pytest.raises(voxrt.Error, match="decoder 'fast'"):
        voxrt.Recognizer("/nonexistent.engine", decoder="fast")


def test_partials_then_final_with_word_times(engine):
    recognizer = voxrt.Recognizer(engine, max_streams=2)
    samples, rate = voxrt.read_wav(SOURCE / "samples/play_music.wav")
    with recognizer.open_stream(sample_rate=rate) as stream:
        results = list(voxrt.stream_chunks(stream, samples, rate))
    partials = [r for r in results if not r.is_final]
    finals = [r for r in results if r.is_final and r.text]
    assert partials and all(p.text for p in partials)
    assert "play some music" in " ".join(f.text for f in finals)
    words = [w for f in finals for w in f.words]
    assert [w.word for w in words][:3] == ["play", "some", "music"]
    for a, b in zip(words, words[1:]):
        assert 0 <= a.start < a.end <= b.start
    assert all(0 < w.conf <= 1 for w in words)
    assert words[-1].end <= len(samples) / rate + 0.1


def test_audio_types_give_the_same_text(engine):
    recognizer = voxrt.Recognizer(engine, max_streams=4)
    ints, rate = voxrt.read_wav(SOURCE / "samples/play_music.wav")
    floats = ints.astype(np.float32) / 32768.0
    texts = {
        "int16": voxrt.transcribe(recognizer, ints, rate),
        "float32": voxrt.transcribe(recognizer, floats, rate),
        "float64": voxrt.transcribe(recognizer, floats.astype(np.float64), rate),
    }
    with recognizer.open_stream(sample_rate=rate) as stream:
        step = rate // 50 * 2  # bytes of 20 ms
        data = ints.astype("<i2").tobytes()
        finals = []
        for start in range(0, len(data), step):
            stream.accept(data[start:start + step])
            finals += [r.text for r in stream.decode() if r.is_final and r.text]
        stream.input_finished()
        while not stream.finished:
            finals += [r.text for r in stream.decode() if r.is_final and r.text]
        finals += [r.text for r in stream.results() if r.is_final and r.text]
    texts["bytes"] = " ".join(finals)
    assert len(set(texts.values())) == 1, texts
    with recognizer.open_stream() as stream:
        with pytest.raises(voxrt.Error, match="even count"):
            stream.accept(b"\x00\x01\x02")
        with pytest.raises(voxrt.Error, match="1-D"):
            stream.accept(np.zeros((2, 160), dtype=np.float32))
        with pytest.raises(voxrt.Error, match="complex|not audio"):
            stream.accept(np.zeros(160, dtype=np.complex64))


def test_eight_streams_from_eight_threads_equal_the_cli(engine, clips, cli):
    recognizer = voxrt.Recognizer(engine, max_streams=8, max_batch=8)
    expected = [cli_text(cli, engine, wav) for wav in clips]
    got = [None] * len(clips)
    errors = []
    barrier = threading.Barrier(len(clips))

    def run(i):
        try:
            samples, rate = voxrt.read_wav(clips[i])
            barrier.wait()
            got[i] = voxrt.transcribe(recognizer, samples, rate)
        except Exception as e:  # reported below, with the clip
            errors.append((clips[i], e))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(clips))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for wav, want, have in zip(clips, expected, got):
        assert have == want, f"{wav}: python {have!r} != cli {want!r}"
    assert "play some music" in got[-1]
    assert recognizer.streams_open == 0


def test_many_streams_batch_through_one_recognizer(engine, clips):
    recognizer = voxrt.Recognizer(engine, max_streams=8, max_batch=8)
    audio = [voxrt.read_wav(wav) for wav in clips]
    streams = [recognizer.open_stream(sample_rate=rate) for _, rate in audio]
    # As `voxrt transcribe` does with several files: 20 ms of each stream, then one decode of all.
    calls = 0
    for piece in range(max(len(samples) // (rate // 50) + 1 for samples, rate in audio)):
        for stream, (samples, rate) in zip(streams, audio):
            step = rate // 50
            chunk = samples[piece * step:(piece + 1) * step]
            if len(chunk):
                stream.accept(chunk)
                if (piece + 1) * step >= len(samples):
                    stream.input_finished()
        calls += recognizer.decode(streams)
    while not all(s.finished for s in streams):
        calls += recognizer.decode(streams)
    batched = [" ".join(r.text for r in s.results() if r.is_final and r.text) for s in streams]
    for s in streams:
        s.close()
    before = recognizer.engine_calls
    alone = [voxrt.transcribe(recognizer, samples, rate) for samples, rate in audio]
    calls_alone = recognizer.engine_calls - before
    assert batched == alone
    # Chunks that are ready in the same round share an engine call: fewer calls than the
    # streams one by one (37 against 69 here when this was written).
    assert 0 < calls < 0.8 * calls_alone, (calls, calls_alone)


def test_threads_share_decode_rounds(engine):
    """Threads that decode at the same moment meet in one round (fewer rounds than decodes)."""
    recognizer = voxrt.Recognizer(engine, max_streams=8, max_batch=8)
    samples, rate = voxrt.read_wav(SOURCE / "samples/play_music.wav")
    barrier = threading.Barrier(8)
    decodes = []

    def run():
        barrier.wait()
        with recognizer.open_stream(sample_rate=rate) as stream:
            step = rate // 50
            for start in range(0, len(samples), step):
                stream.accept(samples[start:start + step])
                stream.decode()
            stream.input_finished()
            n = len(range(0, len(samples), step))
            while not stream.finished:
                stream.decode()
                n += 1
            decodes.append(n)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert recognizer.rounds < sum(decodes), (recognizer.rounds, decodes)


def test_hotwords_need_the_beam_decoder(engine):
    greedy = voxrt.Recognizer(engine, max_streams=1)
    with pytest.raises(voxrt.Error, match="beam"):
        greedy.open_stream(hotwords=["play some music"])
    beam = voxrt.Recognizer(engine, max_streams=1, decoder="beam")
    samples, rate = voxrt.read_wav(SOURCE / "samples/play_music.wav")
    with beam.open_stream(sample_rate=rate, hotwords=["play some music"]) as stream:
        text = " ".join(r.text for r in voxrt.stream_chunks(stream, samples, rate)
                        if r.is_final and r.text)
    assert "play some music" in text
