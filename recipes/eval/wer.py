#!/usr/bin/env python3
"""Word error rate (standard library only): (substitutions + deletions + insertions) / reference
words, by Levenshtein alignment over words; text is lowercased and stripped of punctuation except
apostrophes, so "Mister" and "mister" match but "mr" and "mister" do not.

    wer.py REF HYP   (files of "id<TAB>text" lines; prints WER and counts)
"""
import re
import sys


def normalize(text):
    text = re.sub(r"[^a-z' ]", " ", text.lower())
    return text.split()


def edit_counts(reference, hypothesis):
    """Returns (substitutions, deletions, insertions) of the best word alignment."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    # cost[j] = (total, sub, del, ins) aligning ref[:i] with hyp[:j]
    previous = [(j, 0, 0, j) for j in range(len(hyp) + 1)]
    for i in range(1, len(ref) + 1):
        current = [(i, 0, i, 0)]
        for j in range(1, len(hyp) + 1):
            same = ref[i - 1] == hyp[j - 1]
            diag = previous[j - 1]
            options = [
                (diag[0] + (0 if same else 1), diag[1] + (0 if same else 1), diag[2], diag[3]),
                (previous[j][0] + 1, previous[j][1], previous[j][2] + 1, previous[j][3]),
                (current[j - 1][0] + 1, current[j - 1][1], current[j - 1][2], current[j - 1][3] + 1),
            ]
            current.append(min(options))
        previous = current
    return previous[-1][1:]


def corpus_wer(pairs):
    """pairs: iterable of (reference, hypothesis) -> dict with wer (percent) and counts."""
    words = subs = dels = ins = 0
    for reference, hypothesis in pairs:
        s, d, i = edit_counts(reference, hypothesis)
        subs, dels, ins = subs + s, dels + d, ins + i
        words += len(normalize(reference))
    errors = subs + dels + ins
    return {"wer": 100.0 * errors / max(words, 1), "words": words, "sub": subs, "del": dels,
            "ins": ins, "utts": len(pairs) if hasattr(pairs, "__len__") else None}


def read_id_text(path):
    out = {}
    with open(path) as f:
        for line in f:
            key, _, text = line.rstrip("\n").partition("\t")
            out[key] = text
    return out


def self_test():
    assert edit_counts("a b c", "a b c") == (0, 0, 0)
    assert edit_counts("a b c", "a x c") == (1, 0, 0)
    assert edit_counts("a b c", "a c") == (0, 1, 0)
    assert edit_counts("a b", "a b c d") == (0, 0, 2)
    assert edit_counts("", "a") == (0, 0, 1)
    result = corpus_wer([("Ten of clubs", "ten of clubs"), ("five five", "five")])
    assert abs(result["wer"] - 20.0) < 1e-9, result
    print("wer self-test PASS")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        self_test()
        sys.exit(0)
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    refs, hyps = read_id_text(sys.argv[1]), read_id_text(sys.argv[2])
    print(corpus_wer([(refs[k], hyps.get(k, "")) for k in refs]))
