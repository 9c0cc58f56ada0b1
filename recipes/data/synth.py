#!/usr/bin/env python3
"""Synthesises augmented 16 kHz speech from sentences with espeak-ng, flite and sox, in parallel.

Three outputs:
  --mode train: features only (no audio kept), in shards: <out>/shardNNNN.npy (float16
     [frames, 80], utterances concatenated; Kaldi fbank, or with --features whisper Whisper's
     log-mel of the frames that hold audio) and <out>/shardNNNN.json ({"utts": [[offset, frames,
     text, voice], ...], "channels": {...}}). Every voice and variant of the training split
     (voices.py) with random prosody, then the augmentation of augment.py (formant/VTL shift,
     pitch, tempo, rooms, noise at -5..25 dB, band limits and codecs, gain and clipping).
     <out>/synth_stats.json: utterances, audio hours, wall seconds, processes (throughput).
  --mode test: held-out voices only (voices.py), clean 16 kHz s16 wavs plus the same utterances
     with noise at each --snr-db: <out>/<condition>/<id>.wav and <out>/<condition>/manifest.tsv
     (id, path, text, voice, noise).
  --mode streams: long recordings from a clean test manifest: 2-5 minutes of utterances whose
     text is in --text, separated by 0.3-3 s pauses (a faint noise floor, never digital
     silence): <out>/streamNN.wav and <out>/manifest.tsv (id, path, text of all its utterances,
     "stream", the utterance ids it holds, comma-separated). When the utterances run out before
     --streams streams are made, they are shuffled again and used once more (new order, new
     pauses, so each utterance follows other speech): a test set of 150 commands gives 2 streams a
     pass, and 2 streams are too few to tell a stream effect from chance.

Needs: numpy; espeak-ng, flite, sox (opusenc/opusdec and libsox-fmt-mp3 for those codecs) on
PATH (source recipes/data/tts_env.sh); torch+torchaudio for --mode train (features are computed
by recipes/train/features.py).
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
import wave
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "train"))
import augment  # noqa: E402
import voices  # noqa: E402

SAMPLE_RATE_HZ = augment.SAMPLE_RATE_HZ
ESPEAK_PATH_ARG = os.environ.get("ESPEAK_PATH_ARG", "")
TEST_NOISE_TYPES = ["white", "pink", "babble", "music", "kitchen"]
# Training synthesis gives up when this many utterances have failed and none has succeeded.
ALL_FAILED_LIMIT = 64


def plan_utterance(index, text, split, rng, clean_prob=0.0):
    """All random choices of one utterance, made in the parent so the data set is reproducible.
    clean_prob: the share of training utterances planned without augmentation."""
    job = {"index": index, "text": text, "seed": rng.randrange(1 << 30), "split": split}
    job.update(voices.plan_voice(split, rng))
    if split == "train":
        clean = clean_prob > 0 and rng.random() < clean_prob
        job["augment"] = augment.plan_clean(rng) if clean else augment.plan_augmentation(rng)
    else:
        job["augment"] = {"vtlp": 1.0, "pitch_cents": 0.0, "tempo": 1.0, "pad_s": (0.2, 0.3)}
        job["noise_for_test"] = rng.choice(TEST_NOISE_TYPES)
        job["gain_db"] = -3.0
    return job


def synthesize(job):
    """TTS + sox for one planned utterance; returns float32 samples at 16 kHz (int16 scale)."""
    tmp_wav = f"/tmp/voxrt_synth_{os.getpid()}.wav"
    try:
        voices.run_tts(job, job["text"], tmp_wav, ESPEAK_PATH_ARG)
        try:
            return augment.run_sox(tmp_wav, augment.sox_effects(job["augment"]))
        except subprocess.CalledProcessError:
            # sox 14.4.2 now and then crashes (SIGSEGV) in pitch/tempo on some inputs; the
            # utterance is kept without those shifts rather than lost.
            plain = dict(job["augment"], vtlp=1.0, pitch_cents=0.0, tempo=1.0)
            return augment.run_sox(tmp_wav, augment.sox_effects(plain))
    finally:
        if os.path.exists(tmp_wav):
            os.remove(tmp_wav)


_babble_pool = []  # recent clean utterances of this worker, the sources of babble noise
_codecs = None


def train_worker(job):
    import features  # recipes/train/features.py (torch); imported in the worker only
    global _codecs
    if _codecs is None:
        _codecs = augment.available_codecs()
    rng = np.random.default_rng(job["seed"])
    try:
        speech = synthesize(job)
    except (subprocess.CalledProcessError, OSError) as error:
        return job["index"], None, str(error), None
    if len(speech) < SAMPLE_RATE_HZ // 5:
        return job["index"], None, "too short", None
    _babble_pool.append(speech)
    if len(_babble_pool) > 24:
        _babble_pool.pop(0)
    try:
        audio, channel = augment.augment(speech, job["augment"], rng, _babble_pool[:-1], _codecs)
    except (subprocess.CalledProcessError, OSError) as error:
        return job["index"], None, "augment: " + str(error), None
    feats = features.compute(audio, job.get("features", "default")).astype(np.float16)
    return job["index"], feats, None, channel


def test_worker(job):
    try:
        return job["index"], synthesize(job), None
    except (subprocess.CalledProcessError, OSError) as error:
        return job["index"], None, str(error)


def write_wav(path, samples):
    with wave.open(path, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SAMPLE_RATE_HZ)
        f.writeframes(np.clip(np.round(samples), -32768, 32767).astype(np.int16).tobytes())


def read_wav(path):
    with wave.open(path, "rb") as f:
        return np.frombuffer(f.readframes(f.getnframes()), dtype=np.int16).astype(np.float32)


def make_train(args, jobs, rng):
    """Shards appear as they are finished (written under a temporary name, then renamed), so
    training can start on the first shards while synthesis goes on. Jobs run in a shuffled
    order, so the copies of a sentence spread over the shards."""
    order = list(jobs)
    rng.shuffle(order)
    # The first shards are the ones a run trains on most (they are all there is at first):
    # with --clean-first N they hold clean speech, the easy start that CTC leaves its blank
    # plateau on; the augmented rest follows.
    for job in order[:args.clean_first]:
        job["augment"] = augment.plan_clean(random.Random(job["seed"]))
    pending, shard_number, failures, total_frames = [], 0, 0, 0
    channels = {}
    started = time.time()

    def write_stats(done):
        stats = {"utterances": done - failures, "failed": failures,
                 "audio_hours": round(total_frames / 360000, 3),
                 "wall_s": round(time.time() - started, 1), "processes": args.jobs,
                 "shards": shard_number, "channels": channels}
        stats["audio_hours_per_wall_hour_per_process"] = round(
            stats["audio_hours"] / max(stats["wall_s"], 1e-3) * 3600 / args.jobs, 1)
        with open(os.path.join(args.out, "synth_stats.tmp.json"), "w") as f:
            json.dump(stats, f, indent=1)
        os.replace(os.path.join(args.out, "synth_stats.tmp.json"),
                   os.path.join(args.out, "synth_stats.json"))
        return stats

    def write_shard():
        nonlocal pending, shard_number
        offsets = np.cumsum([0] + [len(feats) for _, feats in pending])
        base = os.path.join(args.out, f"shard{shard_number:04d}")
        np.save(base + ".tmp.npy", np.concatenate([feats for _, feats in pending]))
        utts = [[int(offsets[k]), len(feats), jobs[i]["text"], voices.voice_name(jobs[i])]
                for k, (i, feats) in enumerate(pending)]
        with open(base + ".tmp.json", "w") as f:
            json.dump({"utts": utts}, f)
        os.rename(base + ".tmp.npy", base + ".npy")
        os.rename(base + ".tmp.json", base + ".json")
        shard_number += 1
        pending = []

    with Pool(args.jobs) as pool:
        done = 0
        for done, (index, feats, error, channel) in enumerate(
                pool.imap_unordered(train_worker, order, chunksize=8), start=1):
            if feats is None:
                failures += 1
                if failures <= 5:
                    print(f"failed {index}: {error}", file=sys.stderr, flush=True)
                if failures >= ALL_FAILED_LIMIT and failures == done:
                    # Nothing synthesises (a missing tool or module): stop, so the trainer
                    # learns it now instead of waiting out its time box for a first shard.
                    raise RuntimeError(f"the first {failures} utterances all failed; the last: "
                                       f"{error}")
                continue
            channels[channel] = channels.get(channel, 0) + 1
            pending.append((index, feats))
            total_frames += len(feats)
            if len(pending) >= args.shard_size:
                write_shard()
                stats = write_stats(done)
                print(f"synth {done}/{len(jobs)} {stats['audio_hours']:.2f} h in "
                      f"{stats['wall_s']:.0f} s", flush=True)
        if pending:
            write_shard()
    stats = write_stats(done)
    open(os.path.join(args.out, "DONE"), "w").close()
    print(f"train: {shard_number} shards, {stats['audio_hours']:.2f} h, {failures} failed, "
          f"{stats['audio_hours_per_wall_hour_per_process']} audio h per hour per process",
          flush=True)


def make_test(args, jobs):
    failures = 0
    clean = {}
    with Pool(args.jobs) as pool:
        for index, samples, error in pool.imap_unordered(test_worker, jobs, chunksize=4):
            if samples is None:
                failures += 1
                print("failed", index, error, file=sys.stderr)
            else:
                clean[index] = samples
    order = sorted(clean)
    conditions = [("clean", None)] + [(f"snr{s}", float(s)) for s in args.snr_db.split(",") if s]
    for condition, snr_db in conditions:
        folder = os.path.join(args.out, condition)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "manifest.tsv"), "w") as manifest:
            for i in order:
                job = jobs[i]
                noise_rng = np.random.default_rng(job["seed"])  # same noise at each SNR
                audio = clean[i]
                if snr_db is not None:
                    pool_audio = [clean[k] for k in order if k != i][:200]
                    picks = [pool_audio[int(p)] for p in
                             noise_rng.choice(len(pool_audio), min(8, len(pool_audio)),
                                              replace=False)]
                    noise = augment.make_noise(job["noise_for_test"], len(audio), noise_rng, picks)
                    audio = augment.mix_at_snr(audio, noise, snr_db)
                audio = augment.to_int16_range(audio, job["gain_db"], np.random.default_rng(i))
                path = os.path.join(folder, f"utt{i:05d}.wav")
                write_wav(path, audio)
                manifest.write(f"utt{i:05d}\t{os.path.abspath(path)}\t{job['text']}\t"
                               f"{voices.voice_name(job)}\t"
                               f"{job['noise_for_test'] if snr_db else 'none'}\n")
    print(f"test: {len(order)} utterances x {len(conditions)} conditions, {failures} failed",
          flush=True)


def make_streams(args, texts):
    """Continuous recordings of the clean test utterances whose text is one of `texts`."""
    rows = []
    with open(args.manifest) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3 and fields[2] in texts:
                rows.append(fields)
    if not rows:
        sys.exit(f"synth.py --mode streams: expected clean utterances in {args.manifest} whose "
                 f"text is a line of {args.text}, found none")
    rng = random.Random(args.seed)
    pass_order = list(rows)
    rng.shuffle(pass_order)
    os.makedirs(args.out, exist_ok=True)
    noise_rng = np.random.default_rng(args.seed)
    with open(os.path.join(args.out, "manifest.tsv"), "w") as manifest:
        position, number = 0, 0
        while number < args.streams:
            if position >= len(rows):
                # Another pass over the same utterances in a new order.
                pass_order = list(rows)
                rng.shuffle(pass_order)
                position = 0
            whole_pass = position == 0
            target_s = rng.uniform(args.min_minutes, args.max_minutes) * 60
            pieces, ids, words, length = [], [], [], 0
            while position < len(rows) and length < target_s * SAMPLE_RATE_HZ:
                key, path, text = pass_order[position][:3]
                position += 1
                pause = int(rng.uniform(0.3, 3.0) * SAMPLE_RATE_HZ)
                pieces.append(noise_rng.standard_normal(pause).astype(np.float32) *
                              rng.uniform(1.0, 4.0))
                audio = read_wav(path)
                pieces.append(audio)
                ids.append(key)
                words.append(text)
                length += pause + len(audio)
            if (length < args.min_minutes * 60 * SAMPLE_RATE_HZ and position >= len(rows) and
                    not whole_pass):
                continue  # this pass's rest is too short for a stream: the next pass starts
            pieces.append(noise_rng.standard_normal(SAMPLE_RATE_HZ).astype(np.float32))
            path = os.path.abspath(os.path.join(args.out, f"stream{number:02d}.wav"))
            write_wav(path, np.concatenate(pieces))
            manifest.write(f"stream{number:02d}\t{path}\t{' '.join(words)}\tstream\t"
                           f"{','.join(ids)}\n")
            print(f"stream{number:02d}: {len(ids)} utterances, {length / SAMPLE_RATE_HZ:.0f} s",
                  flush=True)
            number += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", required=True, help="sentences, one a line")
    parser.add_argument("--out", required=True)
    parser.add_argument("--mode", choices=["train", "test", "streams"], required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--copies", type=int, default=1,
                        help="train: each sentence is synthesised this many times (new voices)")
    parser.add_argument("--shard-size", type=int, default=2000)
    parser.add_argument("--clean-prob", type=float, default=0.0,
                        help="train: the share of utterances synthesised without augmentation")
    parser.add_argument("--clean-first", type=int, default=0,
                        help="train: the first this many utterances (first shards) clean")
    parser.add_argument("--snr-db", default="20,10,5", help="test: noisy conditions")
    parser.add_argument("--manifest", help="streams: the clean test manifest")
    parser.add_argument("--streams", type=int, default=4, help="streams: how many")
    parser.add_argument("--min-minutes", type=float, default=2.0)
    parser.add_argument("--max-minutes", type=float, default=5.0)
    parser.add_argument("--features", choices=["default", "sherpa", "whisper"], default="default",
                        help="train: fbank settings (recipes/train/features.py FEATURE_SETS), or "
                             "whisper: Whisper's log-mel before normalisation (features.whisper_log_mel)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # SIGTERM (the trainer is done) ends the worker pool too, through the `with Pool` exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(args.text) as f:
        sentences = [line.strip() for line in f if line.strip()]
    if args.mode == "streams":
        make_streams(args, set(sentences))
        return
    rng = random.Random(args.seed)
    jobs = [plan_utterance(i, text, args.mode, rng, args.clean_prob)
            for i, text in enumerate(s for _ in range(args.copies) for s in sentences)]
    for job in jobs:
        job["features"] = args.features
    if args.mode == "train":
        failed_mark = os.path.join(args.out, "FAILED")
        if os.path.exists(failed_mark):
            os.remove(failed_mark)
        try:
            make_train(args, jobs, random.Random(args.seed + 7))
        except Exception as error:
            # The trainer waits for shards; FAILED tells it at once that none will come, and why.
            with open(failed_mark, "w") as f:
                f.write(f"{type(error).__name__}: {error}\n")
            raise
    else:
        make_test(args, jobs)


if __name__ == "__main__":
    main()
