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
            state.update({name: torch.from_numpy(part[name].copy()) for name in part.files})
    model.load_state_dict(state)
    return model.to(device).eval(), info
