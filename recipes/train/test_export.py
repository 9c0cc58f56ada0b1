#!/usr/bin/env python3
"""The Conformer's export, end to end on the CPU (small random-weight models, character units,
the recipe's default, and BPE units):

1. export_onnx.py writes the streaming ONNX with every voxrt.* key, fp32 and with fp16 weights;
2. `voxrt check` runs the ONNX in voxrt's CPU engine on a second chunk with carried states and
   matches PyTorch's outputs (log_probs and all five states);
3. `voxrt build` + `voxrt transcribe --vad off` on speech that espeak-ng makes give the same text
   as the PyTorch model streamed over the same audio (the head is scaled so the argmax has
   margins larger than the fbank differences between torchaudio and voxrt).

    test_export.py --voxrt build/bin/voxrt [--keep DIR]
Exits 0 when all pass, 77 (skip) without espeak-ng.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoint  # noqa: E402
import export_onnx  # noqa: E402
import features  # noqa: E402
import units as units_module  # noqa: E402

SENTENCES = ["turn on the kitchen lights", "set a timer for ten minutes"]


def small_checkpoint(folder, units_name):
    torch.manual_seed(5)
    config = {"arch": "conformer", "units": units_name, "d_model": 64, "d_ff": 128,
              "heads": 4, "layers": 2, "conv_kernel": 7, "subsampling_channels": 8,
              "left_frames": 16, "norm": "pre"}
    model = checkpoint.build_model(config)
    with torch.no_grad():
        model.position_bias.normal_(0, 0.5)
        model.head.weight.mul_(40.0)  # confident argmax: text robust to tiny feature differences
    # Plausible normalisation (fbank of int16-scale speech is around 5-15). Weights rounded to
    # float16 (half=True, as GPU runs bring them back), so the fp16-weight export is exact too.
    checkpoint.save(folder, model, config, [9.0] * 80, [0.3] * 80, {"steps": 0}, half=True)
    return checkpoint.load(folder)


def write_check_data(model, folder):
    """Inputs of a second chunk (states carried from a first) and PyTorch's outputs."""
    os.makedirs(folder, exist_ok=True)
    chunk = model.chunk_feature_frames
    feats = torch.randn(2, 2 * chunk, 80, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        _, *states = model(feats[:, :chunk], *model.initial_states(2))
        inputs = [feats[:, chunk:]] + states
        outputs = model(*inputs)
    names_in = ["features"] + [a for a, _ in model.STATE_NAMES]
    names_out = ["log_probs"] + [b for _, b in model.STATE_NAMES]
    for kind, names, tensors in (("input", names_in, inputs), ("output", names_out, outputs)):
        for k, (name, tensor) in enumerate(zip(names, tensors)):
            with open(os.path.join(folder, f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(tensor.numpy(), name).SerializeToString())


def pytorch_text(model, info, wav, units):
    """The text PyTorch gives for a wav, streamed in chunks as the engine runs it."""
    samples = features.read_wav_int16(wav)
    feats = torch.from_numpy(features.fbank(samples))
    feats = (feats - torch.tensor(info["mean"])) * torch.tensor(info["inv_std"])
    with torch.no_grad():
        log_probs = model.offline(feats.unsqueeze(0))[0]
    return units_module.greedy_text(log_probs, units)


def engine_texts(voxrt, engine, wavs):
    done = subprocess.run([voxrt, "transcribe", "--engine", engine, "--json", "--vad", "off",
                           *wavs], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"voxrt transcribe failed ({done.returncode}): {done.stderr[-2000:]}")
    texts = {wav: [] for wav in wavs}
    for line in done.stdout.splitlines():
        result = json.loads(line)
        if result.get("is_final") and result.get("text"):
            texts[result["file"]].append(result["text"])
    return {wav: " ".join(" ".join(t).split()) for wav, t in texts.items()}


def check_export(voxrt, work, units_name, failures):
    """Export, voxrt check, build and transcribe of a small checkpoint with these units."""
    os.makedirs(work, exist_ok=True)
    model, info = small_checkpoint(os.path.join(work, "ckpt"), units_name)
    units = units_module.from_config(info["config"])
    write_check_data(model, os.path.join(work, "data"))
    for variant, fp16 in (("fp32", False), ("fp16_weights", True)):
        onnx_path = os.path.join(work, f"model_{variant}.onnx")
        export_onnx.export(os.path.join(work, "ckpt"), onnx_path, fp16_weights=fp16)
        meta = {p.key: p.value for p in onnx.load(onnx_path).metadata_props}
        for key in ("voxrt.model_family", "voxrt.state_pairs", "voxrt.chunk_frames",
                    "voxrt.subsampling", "voxrt.vocabulary", "voxrt.feature.mean"):
            if key not in meta:
                failures.append(f"{units_name} {variant}: metadata {key} missing")
        done = subprocess.run([voxrt, "check", onnx_path, "--data",
                               os.path.join(work, "data"), "--atol", "1e-4"],
                              capture_output=True, text=True)
        print(f"voxrt check ({variant}):\n" + done.stdout.strip())
        if done.returncode != 0:
            failures.append(f"{units_name}: voxrt check {variant}: exit {done.returncode} "
                            f"{done.stderr[-500:]}")
    onnx_path = os.path.join(work, "model_fp32.onnx")
    engine = os.path.join(work, "model.engine")
    done = subprocess.run([voxrt, "build", "--onnx", onnx_path, "--engine", engine,
                           "--profile", "features:1x4x80/4x32x80/8x32x80", "--no-autotune"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        failures.append(f"{units_name}: voxrt build: exit {done.returncode} {done.stderr[-1000:]}")
    else:
        wavs = []
        for k, sentence in enumerate(SENTENCES):
            raw = os.path.join(work, f"raw{k}.wav")
            wav = os.path.join(work, f"speech{k}.wav")
            subprocess.run(["espeak-ng", "-w", raw, sentence], check=True)
            subprocess.run(["sox", raw, "-r", "16000", "-b", "16", "-c", "1", wav], check=True)
            wavs.append(wav)
        texts = engine_texts(voxrt, engine, wavs)
        for wav in wavs:
            expected = pytorch_text(model, info, wav, units)
            print(f"{os.path.basename(wav)}: engine {texts[wav]!r}\n"
                  f"{' ' * len(os.path.basename(wav))}  torch  {expected!r}")
            if not expected:
                failures.append(f"{units_name} {wav}: PyTorch gave no text (the test needs some)")
            if texts[wav] != expected:
                failures.append(f"{units_name} {wav}: engine text differs from PyTorch")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voxrt", required=True)
    parser.add_argument("--keep", help="work in this folder and keep it")
    args = parser.parse_args()
    if not shutil.which("espeak-ng"):
        print("SKIP: espeak-ng is not installed")
        return 77
    work = args.keep or tempfile.mkdtemp(prefix="voxrt_export_test_")
    os.makedirs(work, exist_ok=True)
    failures = []
    try:
        for units_name in ("char", "bpe:bpe500"):
            print(f"units {units_name}:")
            check_export(args.voxrt, os.path.join(work, units_name.replace(":", "_")),
                         units_name, failures)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAIL:", failure)
    print("PASS" if not failures else "FAIL")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
