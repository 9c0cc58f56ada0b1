#!/usr/bin/env python3
"""augment.py on the CPU: noise mixed at the SNR asked for, every noise type finite and of the
right length, room responses whose tail decays by the RT60 and whose direct-to-reverberant ratio
follows the distance, every codec and band limit round trip keeps the length and the speech (a
tone survives with most of its energy at its frequency), clipping clips, and plans stay inside
their ranges. Exits non-zero on a failure; 77 (skip) without sox.
    /usr/bin/python3 test_augment.py
"""
import random
import shutil
import sys

import numpy as np

import augment

failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def main():
    if not shutil.which("sox"):
        print("SKIP: no sox")
        return 77
    rng = np.random.default_rng(1)
    t = np.arange(2 * augment.SAMPLE_RATE_HZ) / augment.SAMPLE_RATE_HZ
    tone = (8000 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    pool = [tone * 0.5, tone * 0.3, np.roll(tone, 100)]
    for kind in augment.NOISE_TYPES:
        noise = augment.make_noise(kind, len(tone), rng, pool)
        check(len(noise) == len(tone) and np.all(np.isfinite(noise)) and np.std(noise) > 0,
              f"noise {kind}: length, finite, not silent")
        for snr_db in (-5.0, 10.0, 25.0):
            mixed = augment.mix_at_snr(tone, noise, snr_db)
            measured = 10 * np.log10(np.mean(tone ** 2) / np.mean((mixed - tone) ** 2))
            check(abs(measured - snr_db) < 0.05, f"noise {kind} at {snr_db} dB: {measured:.2f} dB")
    for rt60 in (0.2, 0.8):
        rir = augment.room_impulse_response(
            {"rt60_s": rt60, "distance_m": 1.0, "volume_m3": 60}, np.random.default_rng(2))
        start = int(np.argmax(np.abs(rir)))
        energy = np.cumsum(rir[start:][::-1] ** 2)[::-1]  # Schroeder backward integration
        decay_db = 10 * np.log10(energy / energy[0] + 1e-12)
        k5, k25 = np.argmax(decay_db < -5), np.argmax(decay_db < -25)
        measured = 3 * (k25 - k5) / augment.SAMPLE_RATE_HZ  # T20 extrapolated to 60 dB
        check(abs(measured - rt60) < 0.25 * rt60, f"RIR RT60 {rt60} s: measured {measured:.2f} s")
    drr = []
    for distance in (0.5, 4.0):
        rir = augment.room_impulse_response(
            {"rt60_s": 0.6, "distance_m": distance, "volume_m3": 60}, np.random.default_rng(3))
        peak = int(np.argmax(np.abs(rir)))
        drr.append(rir[peak] ** 2 / np.sum(np.delete(rir, peak) ** 2))
    check(drr[0] > 10 * drr[1], f"direct-to-reverberant ratio falls with distance {drr}")
    codecs = augment.available_codecs()
    print("codecs here:", codecs)
    channels = [{"band": "telephone"}, {"band": "wideband"}] + [
        {"codec": c, "bitrate_kbps": {"mp3": 32, "opus": 16, "vorbis": 2}.get(c, 0)}
        for c in augment.CODECS]
    for channel in channels:
        out, applied = augment.apply_channel(tone, channel, codecs)
        spectrum = np.abs(np.fft.rfft(out)) ** 2
        freqs = np.fft.rfftfreq(len(out), 1 / augment.SAMPLE_RATE_HZ)
        near = spectrum[(freqs > 900) & (freqs < 1100)].sum() / (spectrum.sum() + 1e-9)
        check(len(out) == len(tone) and near > 0.8,
              f"channel {applied}: length kept, {100 * near:.0f} % of the energy at 1 kHz")
    clipped = augment.to_int16_range(tone, 0.0, rng, clip_db=6.0)
    check(np.mean(np.abs(clipped) >= 32767) > 0.1, "clipping: samples at full scale")
    quiet = augment.to_int16_range(tone, -20.0, rng)
    check(abs(np.max(np.abs(quiet)) - 3200) < 50, f"gain -20 dB: peak {np.max(np.abs(quiet)):.0f}")
    plans = [augment.plan_augmentation(random.Random(s)) for s in range(500)]
    snrs = [p["noise"]["snr_db"] for p in plans if p["noise"]]
    check(min(snrs) >= -5 and max(snrs) <= 25 and min(snrs) < 0, "plans: SNR in -5..25 dB")
    check({p["noise"]["kind"] for p in plans if p["noise"]} == set(augment.NOISE_TYPES),
          "plans: every noise type")
    check({p["channel"].get("codec") for p in plans if p["channel"]} - {None} == set(augment.CODECS),
          "plans: every codec")
    print("PASS" if not failures else f"FAIL ({len(failures)})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
