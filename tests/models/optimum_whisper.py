"""A tiny Whisper-architecture model exported as Hugging Face optimum does it, and a plain
reference greedy decoder over the same torch modules (for tests/models/whisper_test.cpp).

  optimum_whisper.py export DIR [--tokenizer-json] [--mels N] [--size tiny|base]
      writes encoder_model.onnx, decoder_model.onnx, decoder_with_past_model.onnx (the modules of
      transformer_models.py, optimum's names and dynamic axes), config.json,
      generation_config.json, vocab.json (GPT-2 byte-level tokens and a few merges),
      added_tokens.json or tokenizer.json, and torch_model.pt (the weights, for the reference).
  optimum_whisper.py reference DIR [--language CODE] [--timestamps] [--beam N] [--no-condition]
          [--initial-prompt TEXT] [--temperatures 0,0.2,...] [--seed N] [--logprob-threshold X]
          [--compression-ratio-threshold X] [--no-speech-threshold X] [--task translate] WAV...
      prints one JSON line per WAV: {"wav", "windows": [{"tokens", "text", "no_speech", "avg_logprob",
      "silence", "temperature", "compression_ratio", "prompt"}], "text", "language", "segments":
      [{"text", "start", "end"}]}.

The reference decodes without a KV cache (the whole sequence through the decoder at every step)
and follows the window rules of docs/model_contract.md: suppress_tokens and every special token
but end-of-text (and with --timestamps the timestamps) never chosen, begin_suppress_tokens not
first, OpenAI Whisper's timestamp rules with --timestamps; greedy: stop at end-of-text, at
max_target_positions, or when one n-gram (n <= 16) ends the window 4 times (one copy kept); --beam
N: OpenAI's beam search (stream/encoder_decoder/beam_search.h), the chosen sequence cut at its
first repeat; silence when P(no_speech) at the first prompt position > 0.6 and the mean
log-probability of the chosen tokens (end-of-text included) < -1; a window with under 3 frames of
audio (frame f holds samples 160 f - 200 .. 160 f + 199) is not decoded. A window's prompt starts
with <|startofprev|> and the last n_text_ctx/2 - 1 tokens of the initial prompt (GPT-2's BPE with
Python's Unicode classes) and the non-silent windows before it, reset after a window kept at a
temperature above 0.5 or when --no-condition; P(no_speech) is read at <|startoftranscript|>. With
--temperatures, a window failing OpenAI's checks (zlib compression ratio, mean log-probability,
unless silence) is decoded again by sampling with stream/encoder_decoder/token_sampling.h's
counter-based draws. Without --language a
multilingual model's language is detected from the first decoded window (the decoder on
<|startoftranscript|> alone, the most likely language token). The features are tests/unit/audio's
reference."""
import json
import math
import os
import sys
import unicodedata
import wave
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "unit", "audio"))
import transformer_models as tm  # noqa: E402
from whisper_mel_reference import whisper_features  # noqa: E402

MERGES = ["Ġthe", "Ġvox", "Ġhello", "Ġworld", "ing", "Ġspeech", "Ġ30", "Ġsec", "ond", "Ġwindow", "Ġö", "é"]
# Whisper's special tokens in Whisper's order, the timestamps <|0.00|> .. <|30.00|> (0.02 s apart) last.
TIMESTAMPS = ["<|%.2f|>" % (i * 0.02) for i in range(1501)]
SPECIALS = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|de|>", "<|translate|>", "<|transcribe|>",
            "<|startoflm|>", "<|startofprev|>", "<|nocaptions|>", "<|notimestamps|>"] + TIMESTAMPS
# "tiny" for the tests; "base" (Whisper-base's sizes: 512 wide, 6 + 6 layers, 51865 tokens, 448
# positions) for timings.
SIZES = {"tiny": dict(d=64, heads=4, layers=2, ffn=128, target=32, vocab=None),
         "base": dict(d=512, heads=8, layers=6, ffn=2048, target=448, vocab=51865)}
REPEAT_NGRAM, REPEAT_COPIES = 16, 4
TIMESTAMP_STEP_S, MAX_INITIAL_TIMESTAMP_S = 0.02, 1.0
MIN_WINDOW_AUDIO_FRAMES = 3  # a window with less audio is not decoded


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def vocabulary(size="tiny"):
    table = bytes_to_unicode()
    tokens = [table[b] for b in range(256)] + MERGES
    if SIZES[size]["vocab"]:
        # Filler merges (two byte stand-ins each) up to the model's vocabulary.
        known = set(tokens)
        for a in range(256):
            for b in range(256):
                if len(tokens) + len(SPECIALS) >= SIZES[size]["vocab"]:
                    break
                if table[a] + table[b] not in known:
                    tokens.append(table[a] + table[b])
    specials = {name: len(tokens) + i for i, name in enumerate(SPECIALS)}
    return tokens, specials


def merges_of(words):
    """merges.txt's pairs that build each of `words` from its characters, left to right (the
    intermediate symbols are not all tokens: encoding a text works when its words end as tokens)."""
    pairs = []
    for word in words:
        for k in range(2, len(word) + 1):
            pair = (word[:k - 1], word[k - 1])
            if pair not in pairs:
                pairs.append(pair)
    return pairs


# ---- GPT-2's byte-level BPE encoding (for the initial prompt), with Python's own Unicode classes
def _char_class(ch):
    if ch.isspace():
        return "space"
    category = unicodedata.category(ch)
    return "letter" if category[0] == "L" else "number" if category[0] == "N" else "other"


def gpt2_split(text):
    """GPT-2's pattern 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+."""
    pieces, i, n = [], 0, len(text)
    kinds = [_char_class(ch) for ch in text]
    while i < n:
        if text[i] == "'":
            suffix = next((c for c in ("s", "t", "re", "ve", "m", "ll", "d") if text.startswith(c, i + 1)), None)
            if suffix:
                pieces.append(text[i:i + 1 + len(suffix)])
                i += 1 + len(suffix)
                continue
        start = i + 1 if text[i] == " " else i
        matched = False
        for kind in ("letter", "number", "other"):
            if start < n and kinds[start] == kind:
                end = start
                while end < n and kinds[end] == kind:
                    end += 1
                pieces.append(text[i:end])
                i, matched = end, True
                break
        if matched:
            continue
        end = i
        while end < n and kinds[end] == "space":
            end += 1
        if end < n and end - i >= 2:
            end -= 1
        pieces.append(text[i:end])
        i = end
    return pieces


def merge_pair(symbols, pair):
    """symbols with every adjacent occurrence of `pair`, left to right, joined into one symbol."""
    merged, k = [], 0
    while k < len(symbols):
        if k + 1 < len(symbols) and (symbols[k], symbols[k + 1]) == pair:
            merged.append(symbols[k] + symbols[k + 1])
            k += 2
        else:
            merged.append(symbols[k])
            k += 1
    return merged


def bpe_encode(text, vocab, merges):
    table = bytes_to_unicode()
    rank = {pair: r for r, pair in enumerate(merges)}
    ids = []
    for piece in gpt2_split(text):
        symbols = [table[b] for b in piece.encode("utf-8")]
        while len(symbols) > 1:
            ranked = [rank.get((symbols[k], symbols[k + 1])) for k in range(len(symbols) - 1)]
            ranked = [r for r in ranked if r is not None]
            if not ranked:
                break
            symbols = merge_pair(symbols, merges[min(ranked)])
        ids += [vocab[sym] for sym in symbols]
    return ids


# ---- the sampling draws of stream/encoder_decoder/token_sampling.h
MASK64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def sampling_key(seed, window, attempt):
    return splitmix64(splitmix64(splitmix64(seed) ^ window) ^ attempt)


def sampling_uniform(key, step):
    return (splitmix64(key ^ step) >> 11) * 2.0 ** -53


def sample_token(logits, temperature, uniform):
    values = logits.tolist()
    finite = [i for i, v in enumerate(values) if math.isfinite(v)]
    top = max(values[i] for i in finite)
    total = 0.0
    for i in finite:
        total += math.exp((values[i] - top) / temperature)
    target, running = uniform * total, 0.0
    for i in finite:
        running += math.exp((values[i] - top) / temperature)
        if running > target:
            return i
    return finite[-1]


def compression_ratio(text):
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def config(mels, size="tiny"):
    tokens, specials = vocabulary(size)
    vocab = len(tokens) + len(specials)
    z = SIZES[size]
    return tm.WhisperConfig(d=z["d"], heads=z["heads"], encoder_layers=z["layers"], decoder_layers=z["layers"],
                            ffn=z["ffn"], vocab=vocab, mels=mels, source_positions=1500, target_positions=z["target"])


def build_modules(c, size):
    tokens, specials = vocabulary(size)
    encoder = tm.randomize(tm.WhisperEncoder(c), 21)
    decoder = tm.randomize(tm.WhisperDecoder(c), 40)
    with torch.no_grad():
        torch.manual_seed(23)
        decoder.embed_positions.uniform_(-1.0, 1.0)
        # A model that says something and listens: small token embeddings, position embeddings
        # that move the output, and a stronger cross-attention (the tokens follow the positions and
        # the audio, not the last token), and end-of-text pushed away before position 14 and drawn
        # in after it, so windows end after several tokens (decoder seed and sizes picked by
        # hand: 16 to 21 tokens a window on the test clips, and the short clip detects <|de|>,
        # the long one <|en|>).
        decoder.embed_tokens.weight.mul_(0.3)
        for layer in decoder.layers:
            layer.encoder_attn.out_proj.weight.mul_(4.0)
        eos = specials["<|endoftext|>"]
        direction = decoder.embed_tokens.weight[eos] / decoder.embed_tokens.weight[eos].norm()
        ramp = (torch.arange(c.target_positions, dtype=torch.float32) - 14.0) * 0.5
        decoder.embed_positions.add_(ramp[:, None] * direction[None, :])
    return encoder.eval(), decoder.eval()


def export_graphs(out, encoder, decoder, c):
    """encoder_model.onnx, decoder_model.onnx, decoder_with_past_model.onnx of the modules, with
    optimum's names and dynamic axes (also recipes/whisper's export of a trained model). The
    TorchScript exporter on every torch version: torch 2.9 and later default to dynamo, which
    writes other graphs and names."""
    import inspect
    choose_exporter = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}

    def onnx(model, args, name, inputs, outputs, axes):
        with torch.no_grad():
            torch.onnx.export(model, tuple(args), os.path.join(out, name), input_names=inputs,
                              output_names=outputs, dynamic_axes=axes, opset_version=14, do_constant_folding=True,
                              **choose_exporter)

    onnx(encoder, (torch.randn(1, c.mels, 2 * c.source_positions),), "encoder_model.onnx", ["input_features"],
         ["last_hidden_state"], {"input_features": {0: "batch_size"}, "last_hidden_state": {0: "batch_size"}})
    hidden = torch.randn(1, c.source_positions, c.d)
    present = tm.whisper_past_names(c.decoder_layers, "present")
    onnx(tm.OptimumDecoder(decoder), (torch.tensor([[1, 2, 3, 4]]), hidden), "decoder_model.onnx",
         ["input_ids", "encoder_hidden_states"], ["logits", *present],
         {"input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
          "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length / 2"},
          "logits": {0: "batch_size", 1: "decoder_sequence_length"},
          **{n: {0: "batch_size", 2: "past_decoder_sequence_length + 1" if ".decoder." in n
                 else "encoder_sequence_length_out"} for n in present}})
    past_names = tm.whisper_past_names(c.decoder_layers, "past_key_values")
    hd = c.d // c.heads
    past = [torch.randn(1, c.heads, 5 if ".decoder." in n else c.source_positions, hd) for n in past_names]
    present_decoder = tm.whisper_past_names(c.decoder_layers, "present", ("decoder",))
    onnx(tm.OptimumDecoderWithPast(decoder), (torch.tensor([[7]]), *past), "decoder_with_past_model.onnx",
         ["input_ids", *past_names], ["logits", *present_decoder],
         {"input_ids": {0: "batch_size"},
          **{n: {0: "batch_size", 2: "past_decoder_sequence_length" if ".decoder." in n
                 else "encoder_sequence_length_out"} for n in past_names},
          "logits": {0: "batch_size"},
          **{n: {0: "batch_size", 2: "past_decoder_sequence_length + 1"} for n in present_decoder}})


def export(out, tokenizer_json, mels, size):
    os.makedirs(out, exist_ok=True)
    c = config(mels, size)
    encoder, decoder = build_modules(c, size)
    torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict(), "mels": mels, "size": size},
               os.path.join(out, "torch_model.pt"))
    export_graphs(out, encoder, decoder, c)

    tokens, specials = vocabulary(size)
    vocab = {t: i for i, t in enumerate(tokens)}
    vocab["<|endoftext|>"] = specials["<|endoftext|>"]  # GPT-2's vocab.json holds it
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(a + " " + b + "\n" for a, b in merges_of(MERGES)))
    if tokenizer_json:
        added = [{"id": i, "content": n, "special": True, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False} for n, i in specials.items()]
        with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump({"version": "1.0", "added_tokens": added, "model": {"type": "BPE", "vocab": vocab}}, f)
    else:
        with open(os.path.join(out, "added_tokens.json"), "w", encoding="utf-8") as f:
            json.dump({n: i for n, i in specials.items() if n != "<|endoftext|>"}, f)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"model_type": "whisper", "d_model": c.d, "encoder_layers": c.encoder_layers,
                   "decoder_layers": c.decoder_layers, "encoder_attention_heads": c.heads,
                   "decoder_attention_heads": c.heads, "encoder_ffn_dim": c.ffn, "decoder_ffn_dim": c.ffn,
                   "num_mel_bins": c.mels, "vocab_size": c.vocab, "max_source_positions": c.source_positions,
                   "max_target_positions": c.target_positions, "eos_token_id": specials["<|endoftext|>"]}, f,
                  indent=1)
    space = vocab[bytes_to_unicode()[ord(" ")]]
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"decoder_start_token_id": specials["<|startoftranscript|>"],
                   "eos_token_id": specials["<|endoftext|>"],
                   "no_timestamps_token_id": specials["<|notimestamps|>"],
                   "lang_to_id": {"<|en|>": specials["<|en|>"], "<|de|>": specials["<|de|>"]},
                   "task_to_id": {"translate": specials["<|translate|>"], "transcribe": specials["<|transcribe|>"]},
                   "suppress_tokens": [1, 2, 3, 200, 201],
                   "begin_suppress_tokens": [space, specials["<|endoftext|>"]],
                   "max_length": c.target_positions}, f, indent=1)
    print("exported", out, "vocab", c.vocab)


# ---------------------------------------------------------------------------------- reference
def read_wav(path):
    with wave.open(path) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getframerate() == 16000, path
        data = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    return data.astype(np.float64) / 32768.0


def repeats_at_end(tokens):
    for n in range(1, REPEAT_NGRAM + 1):
        if n * REPEAT_COPIES > len(tokens):
            break
        if all(tokens[i] == tokens[i - n] for i in range(len(tokens) - n * (REPEAT_COPIES - 1), len(tokens))):
            return n
    return 0


class Rules:
    """The window rules of docs/model_contract.md for one way of decoding (with or without timestamps)."""

    def __init__(self, gen, specials_ids, vocab_size, timestamps):
        self.eos = gen["eos_token_id"]
        self.timestamp_begin = specials_ids["<|0.00|>"]
        self.vocab_size = vocab_size
        self.timestamps = timestamps
        self.suppressed = torch.zeros(vocab_size, dtype=torch.bool)
        self.suppressed[sorted(specials_ids.values())] = True
        self.suppressed[self.timestamp_begin:] = not timestamps
        self.suppressed[gen["suppress_tokens"]] = True
        self.suppressed[self.eos] = False
        self.begin = self.suppressed.clone()
        self.begin[gen["begin_suppress_tokens"]] = True

    def apply(self, logits, sampled):
        logits[self.begin if not sampled else self.suppressed] = -math.inf
        if not self.timestamps:
            return
        tb, n = self.timestamp_begin, len(sampled)
        last = n >= 1 and sampled[-1] >= tb
        penultimate = n < 2 or sampled[-2] >= tb
        if last:
            if penultimate:
                logits[tb:] = -math.inf  # after a pair (or the first timestamp): text or the end
            else:
                logits[:self.eos] = -math.inf  # after a segment's end: the next start or the end
        said = [t for t in sampled if t >= tb]
        if said:
            limit = said[-1] if last and not penultimate else said[-1] + 1
            logits[tb:limit] = -math.inf
        if n == 0:
            logits[:tb] = -math.inf
            logits[tb + round(MAX_INITIAL_TIMESTAMP_S / TIMESTAMP_STEP_S) + 1:] = -math.inf
        logprobs = torch.log_softmax(logits, -1)
        if torch.logsumexp(logprobs[tb:], -1) > logprobs[:tb].max():
            logits[:tb] = -math.inf


def step_logits(decoder, hidden, ids):
    with torch.no_grad():
        logits, _ = decoder(torch.tensor([ids]), hidden, None)
    return logits[0].double()


def no_speech_probability(logits, no_speech_id, at):
    """At <|startoftranscript|> (position `at`: after any previous text)."""
    return torch.softmax(logits[at], -1)[no_speech_id].item() if no_speech_id >= 0 else 0.0


SOT_ID = None  # set by reference()


def sot_index(prompt):
    return len(prompt) - 1 - prompt[::-1].index(SOT_ID)


def greedy_window(decoder, hidden, prompt, rules, no_speech_id, sampling=None):
    """sampling: (temperature, key) samples each token (token_sampling.h) instead of the argmax."""
    tokens, choices, sum_logprob, no_speech = [], 0, 0.0, 0.0
    while True:
        logits = step_logits(decoder, hidden, prompt + tokens)
        if not tokens and choices == 0:
            no_speech = no_speech_probability(logits, no_speech_id, sot_index(prompt))
        last = logits[-1].clone()
        rules.apply(last, tokens)
        chosen = int(torch.argmax(last))
        if sampling:
            chosen = sample_token(last, sampling[0], sampling_uniform(sampling[1], choices))
        sum_logprob += torch.log_softmax(last, -1)[chosen].item()
        choices += 1
        if chosen == rules.eos:
            break
        tokens.append(chosen)
        n = repeats_at_end(tokens)
        if n:
            del tokens[len(tokens) - (REPEAT_COPIES - 1) * n:]
            break
        if len(prompt) + len(tokens) >= decoder.embed_positions.shape[0]:
            break
    return tokens, no_speech, sum_logprob / choices


def beam_window(decoder, hidden, prompt, rules, no_speech_id, width):
    """OpenAI Whisper's beam search (patience 1, no length penalty) as beam_search.h describes it."""
    beams, finished = [([], 0.0)], []  # (tokens, sum of log-probabilities[, ended])
    no_speech = no_speech_probability(step_logits(decoder, hidden, prompt), no_speech_id, sot_index(prompt))
    while beams:
        candidates = []
        for j, (tokens, score) in enumerate(beams):
            logits = step_logits(decoder, hidden, prompt + tokens)[-1].clone()
            rules.apply(logits, tokens)
            logprobs = torch.log_softmax(logits, -1)
            order = sorted(range(rules.vocab_size), key=lambda i: (-logits[i].item(), i))[:width + 1]
            candidates += [(score + logprobs[i].item(), j, i) for i in order if math.isfinite(logits[i].item())]
        candidates.sort(key=lambda c: -c[0])
        following, newly_finished = [], []
        for score, j, token in candidates:
            if token == rules.eos:
                newly_finished.append((beams[j][0], score, True))
                continue
            following.append((beams[j][0] + [token], score))
            if len(following) == width:
                break
        finished += newly_finished[:max(0, width - len(finished))]
        beams = following
        if len(finished) >= width:
            break
        if beams and len(prompt) + len(beams[0][0]) >= decoder.embed_positions.shape[0]:
            for tokens, score in sorted(beams, key=lambda b: -b[1]):
                if len(finished) >= width:
                    break
                finished.append((tokens, score, False))
            break
    if not finished:
        return [], no_speech, 0.0
    best = max(finished, key=lambda f: f[1] / max(1, len(f[0])))  # the first of equals
    tokens, score, ended = best
    said = len(tokens) + (1 if ended else 0)
    return tokens[:length_without_repeats(tokens)], no_speech, score / said if said else 0.0


def length_without_repeats(tokens):
    for length in range(1, len(tokens) + 1):
        n = repeats_at_end(tokens[:length])
        if n:
            return length - (REPEAT_COPIES - 1) * n
    return len(tokens)


def split_segments(tokens, timestamp_begin, window_s):
    """A window's segments as OpenAI's transcribe cuts them (timestamp_rules.h): (first, end, start_s, end_s)."""
    is_ts = [t >= timestamp_begin for t in tokens]

    def seconds(i):
        return (tokens[i] - timestamp_begin) * TIMESTAMP_STEP_S if is_ts[i] else 0.0

    n = len(tokens)
    if n == 0:
        return []
    cuts = [i for i in range(1, n) if is_ts[i - 1] and is_ts[i]]
    single_ending = n >= 2 and not is_ts[n - 2] and is_ts[n - 1]
    if not cuts:
        end = window_s
        stamps = [i for i in range(n) if is_ts[i]]
        if stamps and seconds(stamps[-1]) > 0:
            end = seconds(stamps[-1])
        return [(0, n, 0.0, end)]
    segments, first = [], 0
    for cut in cuts:
        segments.append((first, cut, seconds(first), seconds(cut - 1)))
        first = cut
    if first < n:
        segments.append((first, n, seconds(first), seconds(n - 1) if single_ending else window_s))
    return segments


def detect_language(decoder, hidden, gen):
    logits = step_logits(decoder, hidden, [gen["decoder_start_token_id"]])[0]
    ids = sorted(gen["lang_to_id"].values())
    best = max(ids, key=lambda i: (logits[i].item(), -i))  # ties: the lower id
    return best


def detokenize(tokens, id_to_token, specials_ids):
    inverse = {v: k for k, v in bytes_to_unicode().items()}
    data = bytearray()
    for t in tokens:
        if t in specials_ids.values():
            continue
        data += bytes(inverse[ch] for ch in id_to_token.get(t, ""))  # a gap (vocab.json lacks the id): no text, as the C++ decoder
    return data.decode("utf-8", errors="replace")


def reference(folder, wavs, language=None, timestamps=False, beam=0, condition=True, initial_prompt="",
              temperatures=(0.0,), seed=0, compression_ratio_threshold=2.4, logprob_threshold=-1.0,
              no_speech_threshold=0.6, task="transcribe"):
    """language: a code ("en"), or None: detected from the first decoded window (multilingual models)."""
    global SOT_ID
    torch.set_num_threads(1)
    state = torch.load(os.path.join(folder, "torch_model.pt"))
    size = state.get("size", "tiny")
    c = config(state["mels"], size)
    encoder, decoder = tm.WhisperEncoder(c).eval(), tm.WhisperDecoder(c).eval()
    encoder.load_state_dict(state["encoder"])
    decoder.load_state_dict(state["decoder"])
    with open(os.path.join(folder, "generation_config.json")) as f:
        gen = json.load(f)
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    _, specials = vocabulary(size)
    id_to_token = {i: t for t, i in vocab.items()}
    rules = Rules(gen, specials, c.vocab, timestamps)
    no_speech_id = specials.get("<|nospeech|>", specials.get("<|nocaptions|>", -1))
    code_of = {i: t[2:-2] for t, i in gen.get("lang_to_id", {}).items()}
    SOT_ID = gen["decoder_start_token_id"]
    sot_prev = specials.get("<|startofprev|>")
    max_previous = c.target_positions // 2 - 1
    initial = []
    if initial_prompt:
        with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
            merges = [tuple(line.rstrip("\n").split(" ")) for line in f if line.strip() and not line.startswith("#")]
        initial = bpe_encode(" " + initial_prompt.strip(), vocab, merges)
    for wav in wavs:
        samples = read_wav(wav)
        features = whisper_features(samples, c.mels).astype(np.float32)
        frames_with_audio = -(-(len(samples) + 200) // 160)
        windows, segments = [], []
        language_id = gen["lang_to_id"]["<|%s|>" % language] if language else None
        previous, decoded_windows = list(initial), 0
        for w in range(features.shape[0] // 3000):
            window_frames = min(3000, frames_with_audio - w * 3000)
            if window_frames < MIN_WINDOW_AUDIO_FRAMES:
                windows.append({"tokens": [], "text": "", "silence": True, "too_short": True})
                continue
            x = torch.from_numpy(features[w * 3000:(w + 1) * 3000].T.copy())[None]
            with torch.no_grad():
                hidden = encoder(x)
            if language_id is None and code_of:
                language_id = detect_language(decoder, hidden, gen)
            prompt = [sot_prev] + previous[-max_previous:] if previous and sot_prev is not None else []
            prompt += [gen["decoder_start_token_id"]]
            if code_of:
                prompt += [language_id, gen["task_to_id"][task]]
            if not timestamps:
                prompt.append(gen["no_timestamps_token_id"])
            for attempt, temperature in enumerate(temperatures):
                if temperature > 0:
                    key = sampling_key(seed, decoded_windows, attempt)
                    tokens, no_speech, avg = greedy_window(decoder, hidden, prompt, rules, no_speech_id,
                                                           (temperature, key))
                elif beam:
                    tokens, no_speech, avg = beam_window(decoder, hidden, prompt, rules, no_speech_id, beam)
                else:
                    tokens, no_speech, avg = greedy_window(decoder, hidden, prompt, rules, no_speech_id)
                ratio = compression_ratio(detokenize(tokens, id_to_token, specials))
                fails = ratio > compression_ratio_threshold or avg < logprob_threshold
                if no_speech_id >= 0 and no_speech > no_speech_threshold and avg < logprob_threshold:
                    fails = False
                if not fails:
                    break
            decoded_windows += 1
            silence = no_speech_id >= 0 and no_speech > no_speech_threshold and avg < logprob_threshold
            if not silence:
                previous = [] if not condition or temperature > 0.5 else previous + tokens
            result = {"tokens": tokens, "no_speech": no_speech, "avg_logprob": avg, "silence": silence,
                      "temperature": temperature, "compression_ratio": ratio, "prompt": prompt}
            result["text"] = "" if silence else detokenize(tokens, id_to_token, specials)
            if timestamps and not silence:
                for first, end, start_s, end_s in split_segments(tokens, rules.timestamp_begin,
                                                                window_frames * 0.01):
                    text = detokenize(tokens[first:end], id_to_token, specials).strip(" ")
                    if text and end_s > start_s:
                        segments.append({"text": text, "start": w * 30.0 + start_s, "end": w * 30.0 + end_s})
            windows.append(result)
        text = "".join(w["text"] for w in windows).strip(" ")
        print(json.dumps({"wav": wav, "windows": windows, "text": text, "segments": segments,
                          "language": code_of.get(language_id, "")}, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "export":
        mels = int(sys.argv[sys.argv.index("--mels") + 1]) if "--mels" in sys.argv else 80
        size = sys.argv[sys.argv.index("--size") + 1] if "--size" in sys.argv else "tiny"
        export(sys.argv[2], "--tokenizer-json" in sys.argv, mels, size)
    elif sys.argv[1] == "reference":
        args = sys.argv[3:]
        options = {"language": None, "timestamps": False, "beam": 0}
        while args and args[0].startswith("--"):
            flag = args.pop(0)
            if flag == "--timestamps":
                options["timestamps"] = True
            elif flag == "--no-condition":
                options["condition"] = False
            elif flag == "--initial-prompt":
                options["initial_prompt"] = args.pop(0)
            elif flag == "--temperatures":
                options["temperatures"] = [float(t) for t in args.pop(0).split(",")]
            elif flag == "--seed":
                options["seed"] = int(args.pop(0))
            elif flag == "--logprob-threshold":
                options["logprob_threshold"] = float(args.pop(0))
            elif flag == "--compression-ratio-threshold":
                options["compression_ratio_threshold"] = float(args.pop(0))
            elif flag == "--no-speech-threshold":
                options["no_speech_threshold"] = float(args.pop(0))
            elif flag == "--task":
                options["task"] = args.pop(0)
            elif flag == "--language":
                options["language"] = args.pop(0)
            elif flag == "--beam":
                options["beam"] = int(args.pop(0))
            else:
                sys.exit("unknown option " + flag)
        reference(sys.argv[2], args, **options)
    else:
        sys.exit(__doc__)
