"""The TTS voices of the recipe (espeak-ng 1.51 and flite 2.2, Debian 12) and their split.

Every English espeak-ng voice (the MBROLA ones are non-free and not in Debian main) and all of
its 101 variants, every general flite voice. Held out for the test set, never in training:
espeak-ng voice en-gb-x-gbcwmd (with any variant), the espeak-ng variants in TEST_VARIANTS (with
any voice) and flite's awb.
"""
import random
import subprocess

ESPEAK_TRAIN_VOICES = ["en-gb", "en-us", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp",
                       "en-029", "en-us-nyc"]
ESPEAK_TEST_VOICES = ["en-gb-x-gbcwmd"]
TEST_VARIANTS = ["f3", "m3", "Annie", "john", "klatt3", "steph", "max", "linda", "edward", "aunty"]
ALL_VARIANTS = """Alex Alicia Andrea Andy Annie AnxiousAndy Demonic Denis Diogo Gene Gene2 Henrique
Hugo Jacky Lee Marco Mario Michael Mike Nguyen RicishayMax RicishayMax2 RicishayMax3 Storm Tweaky
UniRobot adam anika anikaRobot announcer antonio aunty belinda benjamin boris caleb croak david ed
edward edward2 f1 f2 f3 f4 f5 fast grandma grandpa gustave iven iven2 iven3 iven4 john kaukovalta
klatt klatt2 klatt3 klatt4 klatt5 klatt6 linda m1 m2 m3 m4 m5 m6 m7 m8 marcelo max michel miguel
norbert pablo paul pedro quincy rob robert robosoft robosoft2 robosoft3 robosoft4 robosoft5
robosoft6 robosoft7 robosoft8 sandro shelby steph steph2 steph3 travis victor whisper whisperf
zac""".split()
TRAIN_VARIANTS = [v for v in ALL_VARIANTS if v not in TEST_VARIANTS]
FLITE_TRAIN_VOICES = ["kal16", "slt", "rms", "kal"]
FLITE_TEST_VOICES = ["awb"]
PITCH_RANGES = ["x-low", "low", "medium", "high", "x-high"]


def plan_voice(split, rng: random.Random):
    """Random engine, voice and prosody of one utterance for split 'train' or 'test'."""
    job = {}
    if rng.random() < 0.4:
        job["engine"] = "flite"
        job["voice"] = rng.choice(FLITE_TRAIN_VOICES if split == "train" else FLITE_TEST_VOICES)
        job["stretch"] = rng.uniform(0.75, 1.35)
        job["f0_hz"] = rng.uniform(75, 230)
        job["f0_stddev"] = rng.uniform(5, 45)  # pitch range
        return job
    job["engine"] = "espeak"
    if split == "train":
        job["voice"] = rng.choice(ESPEAK_TRAIN_VOICES)
        job["variant"] = rng.choice(TRAIN_VARIANTS) if rng.random() < 0.85 else ""
    elif rng.random() < 0.5:
        job["voice"] = rng.choice(ESPEAK_TEST_VOICES)
        job["variant"] = rng.choice(TRAIN_VARIANTS + TEST_VARIANTS + [""])
    else:
        job["voice"] = rng.choice(ESPEAK_TRAIN_VOICES)
        job["variant"] = rng.choice(TEST_VARIANTS)
    job["rate_wpm"] = rng.randint(110, 260)
    job["pitch"] = rng.randint(5, 95)
    job["range"] = rng.choice(PITCH_RANGES)
    job["word_gap"] = rng.choice([0, 0, 0, 1, 2, 4])
    return job


def run_tts(job, text, wav_path, espeak_path_arg=""):
    """Writes the utterance as a wav (the engine's own rate) to wav_path."""
    if job["engine"] == "flite":
        cmd = ["flite", "-voice", job["voice"],
               "--setf", f"duration_stretch={job['stretch']:.3f}",
               "--setf", f"int_f0_target_mean={job['f0_hz']:.1f}",
               "--setf", f"int_f0_target_stddev={job['f0_stddev']:.1f}", "-t", text, "-o", wav_path]
    else:
        voice = job["voice"] + ("+" + job["variant"] if job["variant"] else "")
        ssml = f'<speak><prosody range="{job["range"]}">{text}</prosody></speak>'
        cmd = ["espeak-ng"] + ([espeak_path_arg] if espeak_path_arg else []) + [
            "-m", "-v", voice, "-s", str(job["rate_wpm"]), "-p", str(job["pitch"]),
            "-g", str(job["word_gap"]), "-w", wav_path, ssml]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def voice_name(job):
    if job["engine"] == "flite":
        return "flite:" + job["voice"]
    return "espeak:" + job["voice"] + ("+" + job["variant"] if job["variant"] else "")
