"""Checkpoints as plain numpy .npz parts (each under 15 MB, readable by any torch/numpy version)
plus a JSON file with the model configuration, feature normalisation and training progress."""
import glob
import json
import os

import numpy as np
import torch

from model import StreamingDS2

PART_LIMIT_BYTES = 15 * 1000 * 1000


def save(folder, model, config, mean, inv_std, progress):
    os.makedirs(folder, exist_ok=True)
    for old in glob.glob(os.path.join(folder, "model_part*.npz")):
        os.remove(old)
    parts, current, current_bytes = [], {}, 0
    for name, tensor in model.state_dict().items():
        array = tensor.detach().cpu().numpy()
        if current and current_bytes + array.nbytes > PART_LIMIT_BYTES:
            parts.append(current)
            current, current_bytes = {}, 0
        current[name] = array
        current_bytes += array.nbytes
    parts.append(current)
    for k, part in enumerate(parts):
        temporary = os.path.join(folder, f"model_part{k}.tmp.npz")
        np.savez(temporary, **part)
        os.replace(temporary, os.path.join(folder, f"model_part{k}.npz"))
    with open(os.path.join(folder, "checkpoint.json"), "w") as f:
        json.dump({"config": config, "mean": [float(v) for v in mean],
                   "inv_std": [float(v) for v in inv_std], "progress": progress,
                   "parts": len(parts)}, f, indent=1)


def load(folder, device="cpu"):
    """-> (model in eval mode, info dict with config, mean, inv_std, progress)."""
    with open(os.path.join(folder, "checkpoint.json")) as f:
        info = json.load(f)
    model = StreamingDS2(**info["config"])
    state = {}
    for k in range(info["parts"]):
        with np.load(os.path.join(folder, f"model_part{k}.npz")) as part:
            for name in part.files:
                array = part[name]
                if array.dtype == np.float16:  # half-size resume copies (save_half)
                    array = array.astype(np.float32)
                state[name] = torch.from_numpy(array.copy())
    model.load_state_dict(state)
    return model.to(device).eval(), info


def save_half(source_folder, folder):
    """Copies a checkpoint with float16 weights (half the bytes, for carrying it to a resume run)."""
    import shutil
    os.makedirs(folder, exist_ok=True)
    shutil.copy(os.path.join(source_folder, "checkpoint.json"), folder)
    with open(os.path.join(folder, "checkpoint.json")) as f:
        parts = json.load(f)["parts"]
    for k in range(parts):
        with np.load(os.path.join(source_folder, f"model_part{k}.npz")) as part:
            np.savez(os.path.join(folder, f"model_part{k}.npz"),
                     **{n: part[n].astype(np.float16) if part[n].dtype == np.float32 else part[n]
                        for n in part.files})
