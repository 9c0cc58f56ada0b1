"""GPT-2's byte-level BPE for the Whisper recipe: a small learner over the training text, the
encoder, and the tokenizer files as Hugging Face's WhisperTokenizer stores them (vocab.json,
merges.txt, added_tokens.json), which voxrt's decode/byte_level_bpe reads.

Ids: the 256 byte stand-ins (byte order), then one token per learned merge (in merge order), then
the special tokens SPECIALS (end-of-text first, as Whisper's). No timestamps, <|startofprev|>,
<|nocaptions|> or <|translate|>: the recipe never trains them, and voxrt leaves out what a
tokenizer lacks (no timestamps, no conditioning on previous text, no silence check, no
translation). The pre-tokenisation and the encoding loop are tests/models/optimum_whisper.py's
(GPT-2's pattern with Python's Unicode classes), the reference that voxrt's own BPE encoder is
tested against.
"""
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
import optimum_whisper  # noqa: E402

SPECIALS = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"]
BYTE_TOKENS = 256


def learn_merges(sentences, merges_wanted):
    """The `merges_wanted` most frequent adjacent pairs, merged one after another (ties: the pair
    that sorts first), over the words of " " + sentence (Whisper's text starts with a space).
    Returns [(left, right), ...] in GPT-2's byte stand-ins."""
    table = optimum_whisper.bytes_to_unicode()
    word_counts = collections.Counter()
    for sentence in sentences:
        for piece in optimum_whisper.gpt2_split(" " + sentence.strip()):
            word_counts["".join(table[b] for b in piece.encode("utf-8"))] += 1
    words = [list(w) for w in word_counts]
    counts = list(word_counts.values())
    pair_counts = collections.Counter()
    words_with = collections.defaultdict(set)
    for index, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pair_counts[pair] += counts[index]
            words_with[pair].add(index)
    merges = []
    while len(merges) < merges_wanted and pair_counts:
        best = min(pair_counts, key=lambda p: (-pair_counts[p], p))
        if pair_counts[best] < 2:
            break  # a pair seen once is no unit of the text
        merges.append(best)
        for index in list(words_with[best]):
            symbols = words[index]
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] -= counts[index]
                if pair_counts[pair] <= 0:
                    del pair_counts[pair]
            merged = optimum_whisper.merge_pair(symbols, best)
            words[index] = merged
            for pair in zip(merged, merged[1:]):
                pair_counts[pair] += counts[index]
                words_with[pair].add(index)
        del words_with[best]
    return merges


class Tokenizer:
    def __init__(self, merges):
        self.merges = [tuple(m) for m in merges]
        table = optimum_whisper.bytes_to_unicode()
        tokens = [table[b] for b in range(BYTE_TOKENS)] + [a + b for a, b in self.merges]
        if len(set(tokens)) != len(tokens):
            raise ValueError("merges: a merge repeats a token already in the vocabulary")
        self.vocab = {t: i for i, t in enumerate(tokens)}
        self.specials = {name: len(tokens) + i for i, name in enumerate(SPECIALS)}
        self.size = len(tokens) + len(SPECIALS)
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self._pieces = {}

    def special(self, name):
        return self.specials[name]

    def prompt(self):
        """Whisper's prompt for English transcription without timestamps."""
        return [self.specials[n] for n in ("<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>")]

    def encode(self, text):
        """" " + text, as Whisper's training text (and voxrt's initial prompt) is encoded."""
        ids = []
        for piece in optimum_whisper.gpt2_split(" " + text.strip()):
            if piece not in self._pieces:
                self._pieces[piece] = optimum_whisper.bpe_encode(piece, self.vocab, self.merges)
            ids += self._pieces[piece]
        return ids

    def decode(self, ids):
        """The text of the non-special ids, spaces at both ends trimmed (as voxrt's result)."""
        inverse = {v: k for k, v in optimum_whisper.bytes_to_unicode().items()}
        data = bytearray()
        for i in ids:
            if i in self.id_to_token:
                data += bytes(inverse[ch] for ch in self.id_to_token[i])
        return data.decode("utf-8", errors="replace").strip(" ")

    def write(self, folder):
        """vocab.json (with <|endoftext|>, as GPT-2's), merges.txt, added_tokens.json (every special)."""
        vocab = dict(self.vocab)
        vocab["<|endoftext|>"] = self.specials["<|endoftext|>"]
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(a + " " + b + "\n" for a, b in self.merges))
        with open(os.path.join(folder, "added_tokens.json"), "w", encoding="utf-8") as f:
            json.dump(self.specials, f, ensure_ascii=False)


def self_test():
    sentences = ["play lorde in the garage", "hey computer how hot is it outside", "play the news",
                 "computer stop the timer", "it's ten past nine"] * 3
    merges = learn_merges(sentences, 40)
    assert merges[0] == ("Ġ", "t"), merges[:3]  # " t" opens the most words (the, timer, ten, ...)
    tok = Tokenizer(merges)
    for s in sentences + ["zebra café 42 — naïve"]:
        ids = tok.encode(s)
        assert all(0 <= i < BYTE_TOKENS + len(merges) for i in ids), ids
        assert tok.decode(ids) == s, (tok.decode(ids), s)
    assert len(tok.encode("play the news")) < len("play the news"), tok.encode("play the news")
    assert tok.decode(tok.prompt() + tok.encode("hi") + [tok.special("<|endoftext|>")]) == "hi"
    print("byte_bpe self-test passed:", len(merges), "merges;", tok.encode("play the news"))


if __name__ == "__main__":
    self_test()
