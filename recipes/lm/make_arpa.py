#!/usr/bin/env python3
"""Word n-gram language model in ARPA format, interpolated Kneser-Ney, from sentences.

The default model's decoder (voxrt transcribe --lm F.arpa) reads it. Debian ships no n-gram
toolkit, so this is our own, small and exact: every n-gram of the training text is kept (no
pruning), so it suits command-style domains of up to a few million words.

  /usr/bin/python3 recipes/data/text_gen.py --count 80000 --seed 1 > train.txt
  /usr/bin/python3 recipes/lm/make_arpa.py --text train.txt --order 3 --out lm.arpa

Smoothing: interpolated Kneser-Ney with one discount per order, D = n1 / (n1 + 2 n2) (n1, n2: the
number of n-grams seen once and twice). The highest order uses counts; lower orders use
continuation counts (how many distinct words precede the n-gram), except n-grams that start with
<s>, which nothing can precede. Unigrams are interpolated with a uniform distribution over the
vocabulary plus <unk>, so every word has a probability. In the ARPA file an n-gram's probability
is the interpolated one and a context's backoff weight is its interpolation weight, so backing off
gives exactly the interpolated probability of an unseen n-gram.
"""
import argparse
import math
import sys
from collections import defaultdict

BOS, EOS, UNK = "<s>", "</s>", "<unk>"


def read_sentences(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.strip().lower().split()
            if words:
                yield [BOS] + words + [EOS]


def count_ngrams(sentences, order):
    """counts[n][ngram] for n = 1..order (highest order: plain counts)."""
    counts = [None] + [defaultdict(int) for _ in range(order)]
    for words in sentences:
        for n in range(1, order + 1):
            for i in range(len(words) - n + 1):
                counts[n][tuple(words[i:i + n])] += 1
    return counts


def kneser_ney_counts(counts, order):
    """Counts used at each order: plain at the top and for <s>-initial n-grams, else the number
    of distinct words that precede the n-gram."""
    kn = [None] + [defaultdict(int) for _ in range(order)]
    kn[order] = dict(counts[order])
    for n in range(order, 1, -1):
        for ngram in counts[n]:
            kn[n - 1][ngram[1:]] += 1
    for n in range(1, order):
        for ngram, c in counts[n].items():
            if ngram[0] == BOS:
                kn[n][ngram] = c
    # <s> is never predicted: it has no unigram probability of its own.
    kn[1].pop((BOS,), None)
    return kn


def discount(order_counts):
    n1 = sum(1 for c in order_counts.values() if c == 1)
    n2 = sum(1 for c in order_counts.values() if c == 2)
    if n1 == 0:
        return 0.5
    return n1 / (n1 + 2.0 * max(n2, 1))


def build(counts, order):
    kn = kneser_ney_counts(counts, order)
    discounts = [None] + [discount(kn[n]) for n in range(1, order + 1)]
    # Per context: total count and number of distinct continuations, at each order.
    context_total = [None] + [defaultdict(float) for _ in range(order)]
    context_types = [None] + [defaultdict(int) for _ in range(order)]
    for n in range(1, order + 1):
        for ngram, c in kn[n].items():
            context_total[n][ngram[:-1]] += c
            context_types[n][ngram[:-1]] += 1
    vocabulary = sorted({w for (w,) in kn[1]} | {UNK})
    uniform = 1.0 / len(vocabulary)

    probs = [None] + [{} for _ in range(order)]
    backoffs = [None] + [{} for _ in range(order)]

    def interpolation_weight(n, context):
        total = context_total[n].get(context, 0.0)
        if total == 0:
            return 1.0
        return discounts[n] * context_types[n][context] / total

    # Unigrams: discounted continuation counts plus the freed mass spread uniformly.
    unigram_weight = interpolation_weight(1, ())
    for word in vocabulary:
        c = kn[1].get((word,), 0)
        probs[1][(word,)] = max(c - discounts[1], 0.0) / context_total[1][()] + unigram_weight * uniform

    def lower_prob(ngram):
        """Interpolated probability of ngram's last word given the rest (lower orders)."""
        n = len(ngram)
        if ngram in probs[n]:
            return probs[n][ngram]
        return interpolation_weight(n, ngram[:-1]) * lower_prob(ngram[1:]) if n > 1 else \
            probs[1].get(ngram, probs[1][(UNK,)])

    for n in range(2, order + 1):
        for ngram, c in kn[n].items():
            context = ngram[:-1]
            total = context_total[n][context]
            probs[n][ngram] = max(c - discounts[n], 0.0) / total + \
                interpolation_weight(n, context) * lower_prob(ngram[1:])
    for n in range(1, order):
        for ngram in counts[n]:  # counts, not kn: <s> is a context without a unigram of its own
            if context_total[n + 1].get(ngram, 0.0) > 0:
                backoffs[n][ngram] = interpolation_weight(n + 1, ngram)
    return probs, backoffs, discounts


def write_arpa(path, probs, backoffs, order):
    def log10(x):
        return math.log10(x) if x > 0 else -99.0

    with open(path, "w", encoding="utf-8") as out:
        out.write("\\data\\\n")
        sizes = [len(probs[n]) + (1 if n == 1 else 0) for n in range(1, order + 1)]
        for n, size in enumerate(sizes, start=1):
            out.write(f"ngram {n}={size}\n")
        for n in range(1, order + 1):
            out.write(f"\n\\{n}-grams:\n")
            entries = sorted(probs[n].items())
            if n == 1:
                entries = [((BOS,), None)] + entries
            for ngram, p in entries:
                line = f"{-99.0 if p is None else log10(p):.6f}\t{' '.join(ngram)}"
                if ngram in backoffs[n] if n < order else False:
                    line += f"\t{log10(backoffs[n][ngram]):.6f}"
                out.write(line + "\n")
        out.write("\n\\end\\\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--text", required=True, help="training sentences, one a line")
    parser.add_argument("--order", type=int, default=3)
    parser.add_argument("--out", required=True, help="ARPA file to write")
    args = parser.parse_args()
    if args.order < 1:
        sys.exit("--order must be at least 1")
    counts = count_ngrams(read_sentences(args.text), args.order)
    probs, backoffs, discounts = build(counts, args.order)
    write_arpa(args.out, probs, backoffs, args.order)
    sizes = ", ".join(f"{n}-grams {len(probs[n])}" for n in range(1, args.order + 1))
    print(f"{args.out}: {sizes}; discounts " +
          ", ".join(f"{d:.3f}" for d in discounts[1:]), file=sys.stderr)


if __name__ == "__main__":
    main()
