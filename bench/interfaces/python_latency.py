"""Latency of one stream through the Python package (bench/interfaces/README.md):
    python3 python_latency.py ENGINE AUDIO RUNS
Feeds AUDIO in 20 ms pieces (int16 numpy slices) RUNS times, a new stream each run; times
accept + decode per piece (feed to result) and input_finished until the final (end of input to
final). Prints one JSON object."""

import json
import sys
import time

import numpy as np

import voxrt


def main(engine_path, audio, runs):
    recognizer = voxrt.Recognizer(engine_path)
    samples, rate = voxrt.read_wav(audio)
    step = rate // 50
    feed_ms, final_ms, finals = [], [], 0
    for _ in range(runs):
        with recognizer.open_stream(sample_rate=rate) as stream:
            for start in range(0, len(samples), step):
                t = time.perf_counter()
                stream.accept(samples[start:start + step])
                results = stream.decode()
                feed_ms.append(1e3 * (time.perf_counter() - t))
                finals += sum(1 for r in results if r.is_final and r.text)
            t = time.perf_counter()
            stream.input_finished()
            results = []
            while not stream.finished:
                results += stream.decode()
            results += stream.results()
            final_ms.append(1e3 * (time.perf_counter() - t))
            finals += sum(1 for r in results if r.is_final and r.text)
    p = lambda v, q: float(np.percentile(v, q, method="lower"))
    print(json.dumps({"interface": "python", "runs": runs, "finals": finals,
                      "feed_ms_p50": p(feed_ms, 50), "feed_ms_p95": p(feed_ms, 95),
                      "feed_ms_max": max(feed_ms), "end_to_final_ms_p50": p(final_ms, 50),
                      "end_to_final_ms_max": max(final_ms)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
