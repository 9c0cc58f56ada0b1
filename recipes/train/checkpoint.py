"""Checkpoints as plain numpy .npz parts (each under 15 MB, readable by any torch/numpy version)
plus a JSON file with the model configuration, feature normalisation and training progress.

A save is atomic at the folder level: it is written to FOLDER.tmp and swapped in by renames,
so a run killed in the middle of a save still leaves the previous complete checkpoint."""
import glob
import json
import os
import shutil

import numpy as np
import torch

PART_LIMIT_BYTES = 15 * 1000 * 1000


def build_model(config):
    """config["arch"]: "ds2" (version 1, default when absent) or "conformer" (version 2)."""
    arguments = {k: v for k, v in config.items() if k not in ("arch", "units")}
    if config.get("arch", "ds2") == "conformer":
        import units
        from conformer import StreamingConformer
        return StreamingConformer(vocab=len(units.from_config(config).vocabulary), **arguments)
    from model import StreamingDS2
    return StreamingDS2(**arguments)


def save(folder, model, config, mean, inv_std, progress, half=False):
    """half: weights as float16 (half the bytes: what a GPU run brings back to resume from)."""
    temporary = folder.rstrip("/") + ".tmp"
    shutil.rmtree(temporary, ignore_errors=True)
    os.makedirs(temporary)
    parts, current, current_bytes = [], {}, 0
    state = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
    for name, tensor in state.items():
        array = tensor.detach().float().cpu().numpy() if tensor.is_floating_point() \
            else tensor.detach().cpu().numpy()
        if half and array.dtype == np.float32:
            array = array.astype(np.float16)
        if current and current_bytes + array.nbytes > PART_LIMIT_BYTES:
            parts.append(current)
            current, current_bytes = {}, 0
        current[name] = array
        current_bytes += array.nbytes
    parts.append(current)
    for k, part in enumerate(parts):
        np.savez(os.path.join(temporary, f"model_part{k}.npz"), **part)
    with open(os.path.join(temporary, "checkpoint.json"), "w") as f:
        json.dump({"config": config, "mean": [float(v) for v in mean],
                   "inv_std": [float(v) for v in inv_std], "progress": progress,
                   "parts": len(parts)}, f, indent=1)
    old = folder.rstrip("/") + ".old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(folder):
        os.rename(folder, old)
    os.rename(temporary, folder)
    shutil.rmtree(old, ignore_errors=True)


def load_info(folder):
    with open(os.path.join(folder, "checkpoint.json")) as f:
        return json.load(f)


def load(folder, device="cpu"):
    """-> (model in eval mode, info dict with config, mean, inv_std, progress)."""
    info = load_info(folder)
    model = build_model(info["config"])
    state = {}
    for k in range(info["parts"]):
        with np.load(os.path.join(folder, f"model_part{k}.npz")) as part:
            for name in part.files:
                array = part[name]
                if array.dtype == np.float16:  # half-size checkpoints
                    array = array.astype(np.float32)
                state[name] = torch.from_numpy(array.copy())
    model.load_state_dict(state)
    return model.to(device).eval(), info


def save_half(source_folder, folder):
    """Copies a checkpoint with float16 weights (half the bytes, for carrying it to a resume run)."""
    model, info = load(source_folder)
    save(folder, model, info["config"], info["mean"], info["inv_std"], info["progress"], half=True)


def part_files(folder):
    return sorted(glob.glob(os.path.join(folder, "model_part*.npz")))
