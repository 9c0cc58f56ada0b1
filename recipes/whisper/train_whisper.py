#!/usr/bin/env python3
"""Trains a small Whisper-architecture model on the synthetic speech of recipes/data and exports it
in Hugging Face optimum's layout (encoder_model.onnx, decoder_model.onnx,
decoder_with_past_model.onnx, config.json, generation_config.json, vocab.json, merges.txt,
added_tokens.json, preprocessor_config.json), which `voxrt build --model-dir` imports.

The modules are tests/models/transformer_models.py's WhisperEncoder/WhisperDecoder (Hugging Face's
Whisper, which tests/models/optimum_whisper.py exports for voxrt's tests), so training, export and
voxrt's import share one definition; the export is optimum_whisper.export_graphs. Teacher forcing
with cross-entropy on Whisper's prompt <|startoftranscript|><|en|><|transcribe|><|notimestamps|>
followed by " " + text and <|endoftext|>: the loss counts the text's tokens and the end-of-text,
not the prompt. Tokens: GPT-2's byte-level BPE with merges learned from the training text
(byte_bpe.py), kept in the checkpoint so a resumed run keeps its tokens.

Features: Whisper's 80-bin log-mel (recipes/train/features.py whisper_log_mel: voxrt's front end
and tests/unit/audio/whisper_mel_reference.py), from shards of `recipes/data/synth.py --mode train
--features whisper` (the frames that hold audio, before normalisation), or from wavs of a manifest
(--manifest, as synth.py --mode test writes). Every utterance becomes one 30 s window: its frames,
then the log-mel of zeros up to 3000 frames, normalised as Whisper does (max - 8 floor, (x + 4) / 4).

Time-boxed (--train-seconds) and resumable (--resume DIR); a checkpoint is model.pt (float16
weights, config, merges, progress; 15.7 MB at the default sizes) and optimizer_partN.pt (Adam's
moments in float16, parts under 15 MB).

    train_whisper.py --data SHARDS --out DIR --train-seconds 300 [--resume DIR] [--export DIR] [--dev TSV]
    train_whisper.py --out DIR --export-only --export MODEL_DIR
    train_whisper.py --out DIR --decode TSV     (PyTorch greedy decode, one JSON line per wav)
"""
import argparse
import glob
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "train"))
sys.path.insert(0, os.path.join(HERE, "..", "eval"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
_threads = torch.get_num_threads()
import byte_bpe  # noqa: E402
import features  # noqa: E402  (sets torch to one thread, for synthesis workers)
import optimum_whisper  # noqa: E402
import transformer_models as tm  # noqa: E402
import wer  # noqa: E402

torch.set_num_threads(_threads)

WINDOW_FRAMES = 3000  # Whisper's encoder input: always 30 s
SOURCE_POSITIONS = WINDOW_FRAMES // 2
IGNORE = -100  # label of the prompt's and the padding's positions
PART_LIMIT_BYTES = 15 * 1000 * 1000
INIT_STD = 0.02  # Hugging Face's WhisperConfig.init_std


def whisper_config(config, vocab_size):
    return tm.WhisperConfig(d=config["dim"], heads=config["heads"], encoder_layers=config["encoder_layers"],
                            decoder_layers=config["decoder_layers"], ffn=config["ffn"], vocab=vocab_size,
                            mels=features.WHISPER_MEL_BINS, source_positions=SOURCE_POSITIONS,
                            target_positions=config["target_positions"])


def sinusoids(length, channels):
    """Whisper's fixed encoder positions (OpenAI's `sinusoids`, Hugging Face's init of
    embed_positions): sin of the first half of the channels, cos of the second."""
    increment = math.log(10000) / (channels // 2 - 1)
    inverse = torch.exp(-increment * torch.arange(channels // 2, dtype=torch.float32))
    scaled = torch.arange(length, dtype=torch.float32)[:, None] * inverse[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1)


def make_models(config, vocab_size):
    c = whisper_config(config, vocab_size)
    encoder, decoder = tm.WhisperEncoder(c), tm.WhisperDecoder(c)
    with torch.no_grad():
        for module in list(encoder.modules()) + list(decoder.modules()):
            if isinstance(module, (nn.Linear, nn.Conv1d, nn.Embedding)):
                module.weight.normal_(0.0, INIT_STD)
                if getattr(module, "bias", None) is not None:
                    module.bias.zero_()
        decoder.embed_positions.normal_(0.0, INIT_STD)
        encoder.embed_positions.weight.copy_(sinusoids(SOURCE_POSITIONS, c.d))
    encoder.embed_positions.weight.requires_grad_(False)  # fixed, as Whisper's
    return encoder, decoder


def windows(feature_list, device):
    """Log-mel frames (each [frames <= 3000, 80], before normalisation) -> encoder input
    [B, 80, 3000]: the rest of the window is the log-mel of zeros, then Whisper's normalisation
    per window (what voxrt's front end does for a stream of up to 30 s)."""
    x = torch.full((len(feature_list), WINDOW_FRAMES, features.WHISPER_MEL_BINS), features.WHISPER_LOG_FLOOR,
                   device=device)
    for i, f in enumerate(feature_list):
        x[i, :len(f)] = f.to(device=device, dtype=torch.float32)
    top = x.amax(dim=(1, 2), keepdim=True)
    x = (torch.maximum(x, top - 8.0) + 4.0) / 4.0
    return x.transpose(1, 2).contiguous()


def teacher_forcing(tokenizer, texts, device):
    """Decoder inputs (prompt + text, padded with end-of-text) and labels (text + end-of-text at the
    positions that predict them, IGNORE elsewhere)."""
    prompt, eos = tokenizer.prompt(), tokenizer.special("<|endoftext|>")
    rows = [tokenizer.encode(t) for t in texts]
    length = len(prompt) + max(len(r) for r in rows)
    inputs = torch.full((len(rows), length), eos, dtype=torch.int64)
    labels = torch.full((len(rows), length), IGNORE, dtype=torch.int64)
    for i, r in enumerate(rows):
        inputs[i, :len(prompt) + len(r)] = torch.tensor(prompt + r)
        labels[i, len(prompt) - 1:len(prompt) + len(r)] = torch.tensor(r + [eos])
    return inputs.to(device), labels.to(device)


def encode(encoder, x):
    """WhisperEncoder.forward with the transpose before the second GELU (the same values): Debian's
    torch 1.13 computes GELU's gradient wrongly on the CPU when the gradient it gets is not
    contiguous, as the transpose's is (measured here: errors from 5 to 1e20, and NaN, changing from
    run to run). Training goes through this; the export through the module's own forward."""
    x = F.gelu(encoder.conv2(F.gelu(encoder.conv1(x))).permute(0, 2, 1))
    x = x + encoder.embed_positions.weight
    for layer in encoder.layers:
        x = layer(x)
    return encoder.layer_norm(x)


def loss_of(encoder, decoder, x, inputs, labels):
    logits, _ = decoder(inputs, encode(encoder, x), None)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE)


def greedy(encoder, decoder, tokenizer, x, max_positions):
    """voxrt's greedy window search (docs/model_contract.md): specials never chosen except
    end-of-text, end-of-text not first, ties to the lowest id, a window ends at end-of-text, at
    max_positions, or when one n-gram ends it 4 times (one copy kept). Returns token lists."""
    prompt, eos = tokenizer.prompt(), tokenizer.special("<|endoftext|>")
    with torch.no_grad():
        hidden = encoder(x)
        vocab = decoder.embed_tokens.weight.shape[0]
        suppressed = torch.zeros(vocab, dtype=torch.bool, device=x.device)
        suppressed[list(tokenizer.specials.values())] = True
        suppressed[eos] = False
        first = suppressed.clone()
        first[eos] = True
        tokens = [[] for _ in range(x.shape[0])]
        live = list(range(x.shape[0]))
        while live and len(prompt) + len(tokens[live[0]]) < max_positions:
            ids = torch.tensor([prompt + tokens[i] for i in live], device=x.device)
            logits, _ = decoder(ids, hidden[live], None)
            last = logits[:, -1].float()
            last[:, first if not tokens[live[0]] else suppressed] = -math.inf
            chosen = last.argmax(-1).tolist()
            still = []
            for i, token in zip(live, chosen):
                if token == eos:
                    continue
                tokens[i].append(token)
                n = optimum_whisper.repeats_at_end(tokens[i])
                if n:
                    del tokens[i][len(tokens[i]) - (optimum_whisper.REPEAT_COPIES - 1) * n:]
                    continue
                still.append(i)
            live = still
    return tokens


class Utterances:
    """Training utterances: (log-mel frames [frames, 80] float16 on the device, text). From the
    shards of a folder as they appear (--data) or the wavs of a manifest (--manifest)."""

    def __init__(self, device, tokenizer_limit):
        self.device, self.items, self.loaded, self.skipped = device, [], set(), 0
        self.fits = tokenizer_limit  # text -> whether prompt + tokens + end-of-text fit

    def add(self, frames, text):
        if len(frames) <= WINDOW_FRAMES and text.strip() and self.fits(text):
            self.items.append((frames, text))
        else:
            self.skipped += 1

    def refresh(self, folder):
        new = [p for p in sorted(glob.glob(os.path.join(folder, "shard*.json")))
               if ".tmp." not in p and p not in self.loaded]
        for path in new:
            with open(path) as f:
                utts = json.load(f)["utts"]
            feats = torch.from_numpy(np.load(path[:-5] + ".npy")).to(self.device)
            if feats.shape[1] != features.WHISPER_MEL_BINS:
                sys.exit(f"{path}: expected {features.WHISPER_MEL_BINS} log-mel bins, found {feats.shape[1]}")
            for offset, frames, text, _voice in utts:
                self.add(feats[offset:offset + frames], text)
            self.loaded.add(path)
        return len(new)

    def read_manifest(self, path):
        for fields in read_manifest(path):
            samples = features.read_wav_int16(fields[1])
            self.add(torch.from_numpy(features.whisper_log_mel(samples)).half().to(self.device), fields[2])


def read_manifest(path):
    """synth.py's manifest: id, wav path, text, ... (tab-separated)."""
    with open(path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for number, fields in enumerate(rows, 1):
        if len(fields) < 3:
            sys.exit(f"{path}:{number}: expected id, wav path and text separated by tabs, found {fields}")
    return rows


def save(out, models, optimizer, config, merges, progress):
    """model.pt: float16 weights (the fixed encoder positions left out), config, merges, progress;
    optimizer_partN.pt: AdamW's state, moments in float16, parts under PART_LIMIT_BYTES."""
    os.makedirs(out, exist_ok=True)
    encoder, decoder = models
    half = {"encoder": {k: v.detach().half().cpu() for k, v in encoder.state_dict().items()
                        if k != "embed_positions.weight"},
            "decoder": {k: v.detach().half().cpu() for k, v in decoder.state_dict().items()}}
    torch.save(dict(half, config=config, merges=merges, progress=progress), os.path.join(out, "model.pt.tmp"))
    os.replace(os.path.join(out, "model.pt.tmp"), os.path.join(out, "model.pt"))
    if optimizer is None:
        return
    # (state_dict() shares the live per-parameter dicts: copy them, never change them.)
    state = optimizer.state_dict()
    parts, current, size = [], {}, 0
    for index, s in state["state"].items():
        entry = {k: (v.half().cpu() if k in ("exp_avg", "exp_avg_sq") else v) for k, v in s.items()}
        entry_bytes = sum(v.numel() * v.element_size() for v in entry.values() if torch.is_tensor(v))
        if current and size + entry_bytes > PART_LIMIT_BYTES:
            parts.append(current)
            current, size = {}, 0
        current[index] = entry
        size += entry_bytes
    parts.append(current)
    for old in glob.glob(os.path.join(out, "optimizer_part*.pt")):
        os.remove(old)
    for k, part in enumerate(parts):
        torch.save({"state": part, "param_groups": state["param_groups"], "parts": len(parts)},
                   os.path.join(out, f"optimizer_part{k}.pt.tmp"))
        os.replace(os.path.join(out, f"optimizer_part{k}.pt.tmp"), os.path.join(out, f"optimizer_part{k}.pt"))


def load(folder, device):
    path = folder if folder.endswith(".pt") else os.path.join(folder, "model.pt")
    ckpt = torch.load(path, map_location="cpu")
    tokenizer = byte_bpe.Tokenizer(ckpt["merges"])
    encoder, decoder = make_models(ckpt["config"], tokenizer.size)
    missing = encoder.load_state_dict({k: v.float() for k, v in ckpt["encoder"].items()}, strict=False)
    if missing.missing_keys != ["embed_positions.weight"] or missing.unexpected_keys:
        sys.exit(f"{path}: encoder weights: expected all but embed_positions.weight, missing "
                 f"{missing.missing_keys}, unexpected {missing.unexpected_keys}")
    decoder.load_state_dict({k: v.float() for k, v in ckpt["decoder"].items()})
    return (encoder.to(device), decoder.to(device)), tokenizer, ckpt["config"], ckpt["merges"], ckpt["progress"]


def load_optimizer(optimizer, folder, device):
    paths = sorted(glob.glob(os.path.join(folder, "optimizer_part*.pt")))
    if not paths:
        return False
    state = {"state": {}, "param_groups": None}
    for path in paths:
        part = torch.load(path, map_location=device)
        if part["parts"] != len(paths):
            sys.exit(f"{folder}: expected {part['parts']} optimizer parts, found {len(paths)}")
        for index, s in part["state"].items():
            state["state"][index] = {k: (v.float() if k in ("exp_avg", "exp_avg_sq") else v) for k, v in s.items()}
        state["param_groups"] = part["param_groups"]
    optimizer.load_state_dict(state)
    return True


def export(models, tokenizer, config, out):
    """The optimum layout of the model, every file voxrt build --model-dir reads and the tokenizer
    and feature-extractor files transformers' WhisperProcessor reads."""
    os.makedirs(out, exist_ok=True)
    encoder, decoder = (m.float().cpu().eval() for m in models)
    c = whisper_config(config, tokenizer.size)
    optimum_whisper.export_graphs(out, encoder, decoder, c)
    tokenizer.write(out)
    s = tokenizer.specials
    eos = s["<|endoftext|>"]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"],
                   "d_model": c.d, "encoder_layers": c.encoder_layers, "decoder_layers": c.decoder_layers,
                   "encoder_attention_heads": c.heads, "decoder_attention_heads": c.heads,
                   "encoder_ffn_dim": c.ffn, "decoder_ffn_dim": c.ffn, "num_mel_bins": c.mels,
                   "vocab_size": c.vocab, "max_source_positions": c.source_positions,
                   "max_target_positions": c.target_positions, "activation_function": "gelu",
                   "scale_embedding": False, "tie_word_embeddings": True, "init_std": INIT_STD,
                   "bos_token_id": eos, "eos_token_id": eos, "pad_token_id": eos,
                   "decoder_start_token_id": s["<|startoftranscript|>"]}, f, indent=1)
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"decoder_start_token_id": s["<|startoftranscript|>"], "eos_token_id": eos, "pad_token_id": eos,
                   "bos_token_id": eos, "no_timestamps_token_id": s["<|notimestamps|>"],
                   "is_multilingual": True, "lang_to_id": {"<|en|>": s["<|en|>"]},
                   "task_to_id": {"transcribe": s["<|transcribe|>"]},
                   "forced_decoder_ids": [[1, s["<|en|>"]], [2, s["<|transcribe|>"]], [3, s["<|notimestamps|>"]]],
                   "suppress_tokens": [], "begin_suppress_tokens": [eos],
                   "max_length": c.target_positions}, f, indent=1)
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump({"feature_extractor_type": "WhisperFeatureExtractor", "feature_size": c.mels,
                   "sampling_rate": 16000, "hop_length": 160, "n_fft": 400, "chunk_length": 30,
                   "n_samples": 480000, "nb_max_frames": WINDOW_FRAMES, "padding_side": "right",
                   "padding_value": 0.0, "return_attention_mask": False}, f, indent=1)
    print("exported the optimum Whisper layout to", out, flush=True)


def decode_manifest(models, tokenizer, config, manifest, device, batch=16):
    """PyTorch greedy decode of each wav: [(id, reference text, hypothesis)]."""
    encoder, decoder = (m.eval() for m in models)
    rows = read_manifest(manifest)
    out = []
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        feats = [torch.from_numpy(features.whisper_log_mel(features.read_wav_int16(r[1]))[:WINDOW_FRAMES])
                 for r in chunk]
        for r, tokens in zip(chunk, greedy(encoder, decoder, tokenizer, windows(feats, device),
                                           config["target_positions"])):
            out.append((r[0], r[2], tokenizer.decode(tokens)))
    return out


def dev_wer(models, tokenizer, config, manifest, device, log):
    results = decode_manifest(models, tokenizer, config, manifest, device)
    score = wer.corpus_wer([(ref, hyp) for _, ref, hyp in results])
    for key, ref, hyp in results[:5]:
        print(f"  {key}: ref '{ref}' hyp '{hyp}'", file=log, flush=True)
    print(f"dev WER {score['wer']:.1f} % on {len(results)} utterances ({manifest})", file=log, flush=True)
    return score["wer"]


def learning_rate(args, run_step, elapsed_s):
    """Linear warmup over this run's first steps, flat, then a linear fall to 10 % over the last
    --decay-fraction of the time box."""
    warm = min(1.0, run_step / max(1, args.warmup_steps))
    left = 1.0 - elapsed_s / args.train_seconds
    fall = 1.0 if left >= args.decay_fraction else 0.1 + 0.9 * max(0.0, left) / args.decay_fraction
    return args.lr * warm * fall


def self_test(out):
    """CPU, seconds: windows == the reference features, the labels, one step, save/load, export."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "unit", "audio"))
    from whisper_mel_reference import whisper_features
    rng = np.random.default_rng(0)
    samples = rng.standard_normal(16000 * 2 + 77) * 2000
    ours = windows([torch.from_numpy(features.whisper_log_mel(samples))], "cpu")[0].T.numpy()
    reference = whisper_features(samples / 32768.0, features.WHISPER_MEL_BINS)
    assert ours.shape == reference.shape and np.abs(ours - reference).max() < 1e-5, np.abs(ours - reference).max()
    tokenizer = byte_bpe.Tokenizer(byte_bpe.learn_merges(["turn on the lights", "turn off the lights"], 20))
    inputs, labels = teacher_forcing(tokenizer, ["turn on", "lights off now"], "cpu")
    n = len(tokenizer.encode("turn on"))
    assert inputs[0, :4].tolist() == tokenizer.prompt() and labels[0, :3].tolist() == [IGNORE] * 3
    assert labels[0, 3:4 + n].tolist() == tokenizer.encode("turn on") + [tokenizer.special("<|endoftext|>")]
    assert (labels[0, 4 + n:] == IGNORE).all() and inputs.shape[1] == 4 + len(tokenizer.encode("lights off now"))
    config = {"dim": 32, "heads": 4, "encoder_layers": 1, "decoder_layers": 1, "ffn": 64, "target_positions": 16}
    models = make_models(config, tokenizer.size)
    x = windows([torch.randn(120, 80) - 3, torch.randn(300, 80) - 3], "cpu")
    optimizer = torch.optim.AdamW([p for m in models for p in m.parameters() if p.requires_grad], lr=1e-3)
    with torch.no_grad():
        assert torch.allclose(encode(models[0], x), models[0](x), atol=1e-6)
    loss = loss_of(*models, x, inputs, labels)
    loss.backward()
    assert all(p.grad is not None for m in models for p in m.parameters() if p.requires_grad)
    # The gradient against float64 (the GELU of encode()'s docstring gave errors of 1e20 here).
    exact = [m.double() for m in make_models(config, tokenizer.size)]
    for a, b in zip(exact, models):
        a.load_state_dict({k: v.double() for k, v in b.state_dict().items()})
    loss_of(*exact, x.double(), inputs, labels).backward()
    for a, b in zip(exact, models):
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            if q.grad is not None:
                assert torch.allclose(q.grad.double(), p.grad, atol=1e-6, rtol=1e-3), name
    optimizer.step()
    save(out, models, optimizer, config, tokenizer.merges, {"steps": 1, "seconds": 0.0})
    loaded, loaded_tokenizer, _, _, progress = load(out, "cpu")
    assert loaded_tokenizer.merges == tokenizer.merges and progress["steps"] == 1
    for a, b in zip(models, loaded):
        for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
            assert torch.allclose(p, q, atol=2e-3, rtol=1e-3), name  # float16 in the file
    fresh = torch.optim.AdamW([p for m in loaded for p in m.parameters() if p.requires_grad], lr=1e-3)
    assert load_optimizer(fresh, out, "cpu") and len(fresh.state_dict()["state"]) == len(optimizer.state_dict()["state"])
    export(loaded, tokenizer, config, os.path.join(out, "model"))
    for name in ("encoder_model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx", "vocab.json",
                 "merges.txt", "added_tokens.json", "config.json", "generation_config.json"):
        assert os.path.exists(os.path.join(out, "model", name)), name
    print("self-test passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="synth.py --features whisper shards (read as they appear)")
    parser.add_argument("--manifest", help="train on the wavs of this manifest instead (id, wav, text)")
    parser.add_argument("--text", help="the training text to learn the BPE merges from (default: the "
                                       "texts of the first shards or of the manifest)")
    parser.add_argument("--out", required=True, help="checkpoint folder")
    parser.add_argument("--resume", help="a checkpoint folder, or a model.pt (weights only: new optimizer)")
    parser.add_argument("--export", help="write the optimum layout here at the end")
    parser.add_argument("--export-only", action="store_true")
    parser.add_argument("--decode", help="only decode this manifest's wavs with the checkpoint in --out (JSON lines)")
    parser.add_argument("--dev", help="a manifest to decode (PyTorch greedy, WER) every --dev-every-s and at the end")
    parser.add_argument("--dev-every-s", type=float, default=0, help="0: at the end only")
    parser.add_argument("--train-seconds", type=float, default=300)
    parser.add_argument("--max-steps", type=int, default=0, help="stop after this many steps of this run (0: none)")
    parser.add_argument("--save-every-s", type=float, default=60)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--encoder-layers", type=int, default=4)
    parser.add_argument("--decoder-layers", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=1024)
    parser.add_argument("--target-positions", type=int, default=128, help="prompt + tokens of a window, at most")
    parser.add_argument("--merges", type=int, default=400, help="BPE merges to learn (a new run only)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup-steps", type=int, default=200)
    parser.add_argument("--decay-fraction", type=float, default=0.3)
    parser.add_argument("--batch-size", type=int, default=48)
    parser.add_argument("--min-shards", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--log")
    parser.add_argument("--self-test", action="store_true", help="windows, labels, a step, save/load, export (CPU)")
    args = parser.parse_args()
    if args.self_test:
        self_test(args.out)
        return
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.export_only or args.decode:
        models, tokenizer, config, _, _ = load(args.out, device)
        if args.decode:
            for key, ref, hyp in decode_manifest(models, tokenizer, config, args.decode, device):
                print(json.dumps({"id": key, "ref": ref, "hyp": hyp}), flush=True)
        if args.export_only:
            export(models, tokenizer, config, args.export)
        return
    if not args.data and not args.manifest:
        sys.exit("expected --data SHARDS or --manifest TSV to train on, found neither")
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    log = open(args.log, "a") if args.log else sys.stdout
    if args.resume:
        models, tokenizer, config, merges, progress = load(args.resume, device)
    else:
        if args.text:
            with open(args.text) as f:
                texts = [line.strip() for line in f if line.strip()]
        elif args.manifest:
            texts = [r[2] for r in read_manifest(args.manifest)]
        else:
            while not glob.glob(os.path.join(args.data, "shard*[0-9].json")):
                time.sleep(5)
            with open(sorted(glob.glob(os.path.join(args.data, "shard*[0-9].json")))[0]) as f:
                texts = [u[2] for u in json.load(f)["utts"]]
        merges = [list(m) for m in byte_bpe.learn_merges(texts, args.merges)]
        tokenizer = byte_bpe.Tokenizer(merges)
        config = {k: getattr(args, k) for k in ("dim", "heads", "encoder_layers", "decoder_layers", "ffn",
                                                 "target_positions")}
        models = tuple(m.to(device) for m in make_models(config, tokenizer.size))
        progress = {"steps": 0, "seconds": 0.0}
    encoder, decoder = models
    params = [p for m in models for p in m.parameters() if p.requires_grad]
    print(f"{sum(p.numel() for p in params) / 1e6:.2f} M parameters on {device}; config {config}; "
          f"{len(merges)} merges, {tokenizer.size} tokens", file=log, flush=True)
    optimizer = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    if args.resume and os.path.isdir(args.resume) and load_optimizer(optimizer, args.resume, device):
        print("optimizer state from", args.resume, file=log, flush=True)
    limit = config["target_positions"] - len(tokenizer.prompt()) - 1
    data = Utterances(device, lambda text: len(tokenizer.encode(text)) <= limit)
    if args.manifest:
        data.read_manifest(args.manifest)
    else:
        while data.refresh(args.data) < args.min_shards and not data.items:
            time.sleep(5)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else None
    start = last_save = last_dev = time.time()
    run_step, losses, done = 0, [], False
    while not done:
        if args.data:
            data.refresh(args.data)
        order = list(range(len(data.items)))
        rng.shuffle(order)
        for first in range(0, len(order), args.batch_size):
            elapsed = time.time() - start
            if elapsed > args.train_seconds or (args.max_steps and run_step >= args.max_steps):
                done = True
                break
            batch = [data.items[i] for i in order[first:first + args.batch_size]]
            x = windows([f for f, _ in batch], device)
            inputs, labels = teacher_forcing(tokenizer, [t for _, t in batch], device)
            encoder.train()
            decoder.train()
            if autocast:
                with autocast:
                    loss = loss_of(encoder, decoder, x, inputs, labels)
            else:
                loss = loss_of(encoder, decoder, x, inputs, labels)
            run_step += 1
            progress["steps"] += 1
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(args, run_step, elapsed)
            optimizer.zero_grad()
            loss.backward()
            norm = nn.utils.clip_grad_norm_(params, 1.0)
            if not (torch.isfinite(loss) and torch.isfinite(norm)):
                # One overflowing batch must not turn every weight into NaN: the step is dropped.
                progress["skipped_steps"] = progress.get("skipped_steps", 0) + 1
                print(f"step {progress['steps']}: loss {loss.item()}, gradient norm {norm.item()}: not finite, "
                      f"step skipped ({progress['skipped_steps']} so far)", file=log, flush=True)
                continue
            optimizer.step()
            losses.append(loss.item())
            if progress["steps"] % args.log_every == 0 and losses:
                print(f"step {progress['steps']} loss {sum(losses) / len(losses):.3f} lr "
                      f"{optimizer.param_groups[0]['lr']:.2e} utts {len(data.items)} shards {len(data.loaded)} "
                      f"elapsed {time.time() - start:.0f}s", file=log, flush=True)
                losses = []
            if time.time() - last_save > args.save_every_s:
                save(args.out, models, optimizer, config, merges, progress)
                last_save = time.time()
            if args.dev and args.dev_every_s and time.time() - last_dev > args.dev_every_s:
                dev_wer(models, tokenizer, config, args.dev, device, log)
                last_dev = time.time()
    progress["seconds"] += time.time() - start
    save(args.out, models, optimizer, config, merges, progress)
    print(f"saved {args.out} after {progress['steps']} steps ({data.skipped} utterances skipped: too long)",
          file=log, flush=True)
    if args.dev:
        dev_wer(models, tokenizer, config, args.dev, device, log)
    if args.export:
        export(models, tokenizer, config, args.export)


if __name__ == "__main__":
    main()
