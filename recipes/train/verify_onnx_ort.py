#!/usr/bin/env python3
"""Checks an exported streaming ONNX with onnxruntime against the PyTorch reference written by
export_onnx.py --reference-out: 3 chunks with carried states, then one whole-utterance call with
zero states (the offline interface). Exits non-zero on a mismatch over 1e-4.

    verify_onnx_ort.py MODEL.onnx REFERENCE.npz
"""
import sys

import numpy as np
import onnxruntime as ort


def main(model_path, reference_path):
    reference = np.load(reference_path)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    chunk = int(meta["voxrt.chunk_frames"])
    pairs = [p.split(":") for p in meta["voxrt.state_pairs"].split(",")]
    inputs = {i.name: i for i in session.get_inputs()}
    features = reference["features"]
    batch = features.shape[0]
    states = {a: np.zeros([batch] + list(inputs[a].shape[1:]), np.float32) for a, _ in pairs}
    outputs = []
    for k in range(features.shape[1] // chunk):
        feed = {"features": features[:, k * chunk:(k + 1) * chunk], **states}
        result = dict(zip([o.name for o in session.get_outputs()], session.run(None, feed)))
        outputs.append(result["log_probs"])
        states = {a: result[b] for a, b in pairs}
    streamed = np.concatenate(outputs, 1)
    diffs = {"stream_vs_torch": np.abs(streamed - reference["log_probs"]).max()}
    if "offline_log_probs" in reference:  # DS2: one call on the whole input is its offline form
        zero = {a: np.zeros_like(v) for a, v in states.items()}
        offline = session.run(["log_probs"], {"features": features, **zero})[0]
        diffs["offline_vs_torch"] = np.abs(offline - reference["offline_log_probs"]).max()
    for _, b in pairs:
        diffs[b] = np.abs(states[[a for a, c in pairs if c == b][0]] - reference[b]).max()
    print(model_path, {k: f"{v:.2e}" for k, v in diffs.items()})
    ok = all(v < 1e-4 for v in diffs.values())
    print("ORT PASS" if ok else "ORT FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
