#!/usr/bin/env python3
"""BPE units for the Conformer: a SentencePiece BPE model, trained here with Debian's
python3-sentencepiece, and a pure-Python encoder of the same model for machines that do not have
the sentencepiece module (the GPU machine's Python): it reads the .vocab file that training
writes beside the .model file (one `piece<TAB>score` a line, line index = id).

Ids: 0 is the CTC blank (SentencePiece's pad piece, named <blk>, never produced by encoding),
1 is <unk>, 2 is the word marker U+2581 alone: it is a user-defined symbol, so no other piece
contains it and every word is `marker, pieces of the word`. That makes the marker a word
boundary unit like the space of a character model: the engine reads these units with
voxrt.unit=char (each piece a multi-character unit, the marker written as a space), which needs
no .model file beside the engine and gives the LM beam search its word boundaries. No <s>/</s>.

    bpe.py train --text train.txt --vocab-size 500 --out recipes/train/bpe/bpe500
    bpe.py check --model recipes/train/bpe/bpe500 --text test.txt   (Python encoder == spm)
"""
import argparse
import heapq
import sys

WORD_MARKER = "\u2581"
BLANK_ID = 0


class BpeEncoder:
    """SentencePiece's BPE encoding (bpe_model.cc), for lowercase text of single spaces: the
    symbols start as characters, and the adjacent pair whose merged piece has the highest score
    (the leftmost of equal ones) is merged until no pair is a piece. The marker never merges
    (no piece holds it with other characters)."""

    def __init__(self, vocab_path):
        self.pieces, self.scores = [], {}
        with open(vocab_path, encoding="utf-8") as f:
            for line in f:
                piece, score = line.rstrip("\n").split("\t")
                self.scores.setdefault(piece, float(score))
                self.pieces.append(piece)
        self.ids = {}
        for i, piece in enumerate(self.pieces):
            self.ids.setdefault(piece, i)
        self.unk_id = self.ids.get("<unk>", 1)
        self._cache = {}

    def __len__(self):
        return len(self.pieces)

    def _mergeable(self, piece):
        return piece in self.scores and not (piece.startswith("<") and piece.endswith(">"))

    def encode_word(self, word):
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        symbols = list(word)
        # Doubly linked symbols; the agenda holds (-score, left index, left, right) candidates.
        prev = list(range(-1, len(symbols) - 1))
        nxt = list(range(1, len(symbols) + 1))
        agenda = []

        def push(left):
            right = nxt[left]
            if left < 0 or right >= len(symbols):
                return
            merged = symbols[left] + symbols[right]
            if self._mergeable(merged):
                heapq.heappush(agenda, (-self.scores[merged], left, symbols[left],
                                        symbols[right]))

        for i in range(len(symbols) - 1):
            push(i)
        while agenda:
            _, left, left_symbol, right_symbol = heapq.heappop(agenda)
            right = nxt[left]
            # Stale entries: one of the two symbols has changed since it was pushed.
            if (not symbols[left] or right >= len(symbols) or symbols[left] != left_symbol
                    or symbols[right] != right_symbol):
                continue
            symbols[left] = left_symbol + right_symbol
            symbols[right] = ""
            nxt[left] = nxt[right]
            if nxt[right] < len(symbols):
                prev[nxt[right]] = left
            if prev[left] >= 0:
                push(prev[left])
            push(left)
        ids = tuple(self.ids.get(s, self.unk_id) for s in symbols if s)
        self._cache[word] = ids
        return ids

    def encode(self, text):
        ids = []
        for word in text.split():
            ids.extend(self.encode_word(WORD_MARKER + word))
        return ids

    def decode(self, ids):
        text = "".join(self.pieces[i] for i in ids if i != BLANK_ID and 0 <= i < len(self.pieces))
        return " ".join(text.replace(WORD_MARKER, " ").split())


def train(text_path, vocab_size, out_prefix):
    import sentencepiece as spm  # Debian: python3-sentencepiece
    spm.SentencePieceTrainer.train(
        input=text_path, model_prefix=out_prefix, vocab_size=vocab_size, model_type="bpe",
        character_coverage=1.0, pad_id=0, pad_piece="<blk>", unk_id=1, bos_id=-1, eos_id=-1,
        user_defined_symbols=[WORD_MARKER], input_sentence_size=2000000,
        shuffle_input_sentence=True, num_threads=2,
        normalization_rule_name="identity", minloglevel=2)


def check(model_prefix, text_path):
    import sentencepiece as spm
    processor = spm.SentencePieceProcessor(model_file=model_prefix + ".model")
    encoder = BpeEncoder(model_prefix + ".vocab")
    lines = [line.strip() for line in open(text_path, encoding="utf-8") if line.strip()]
    bad = 0
    for line in lines:
        expected = processor.encode(line)
        found = encoder.encode(line)
        if expected != found:
            bad += 1
            if bad <= 5:
                print(f"mismatch: {line!r}\n  spm    {expected}\n  python {found}")
        if encoder.decode(found) != " ".join(line.split()):
            bad += 1
            print(f"decode mismatch: {line!r} -> {encoder.decode(found)!r}")
    print(f"{len(lines)} sentences, {bad} mismatches, {len(encoder)} pieces")
    return bad == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--text", required=True)
    t.add_argument("--vocab-size", type=int, default=500)
    t.add_argument("--out", required=True, help="prefix: writes PREFIX.model and PREFIX.vocab")
    c = sub.add_parser("check")
    c.add_argument("--model", required=True, help="prefix of PREFIX.model / PREFIX.vocab")
    c.add_argument("--text", required=True)
    args = parser.parse_args()
    if args.command == "train":
        train(args.text, args.vocab_size, args.out)
        return 0
    return 0 if check(args.model, args.text) else 1


if __name__ == "__main__":
    sys.exit(main())
