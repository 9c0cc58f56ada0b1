#!/usr/bin/env python3
"""General English sentences from freely licensed text that Debian ships: the usage examples of
Princeton WordNet 3.0 (package wordnet-base, WordNet 3.0 licence: use, copy, modify and
distribute for any purpose with its copyright notice, /usr/share/doc/wordnet-base/copyright).
About 40,000 quoted examples such as "she sighed sadly" or "the runners reached the finish
line, panting heavily", normalised as the model spells text: lowercase a-z, apostrophe and
space, numbers, years, times and money spoken as words.

The split is fixed by a hash of the sentence, so the test sentences never occur in training on
any machine or with any seed: --split test gives the sentences whose CRC-32 is 0 mod 10.

    debian_text.py --split train > wordnet_train.txt
    debian_text.py --split test  > wordnet_test.txt
Looks in /usr/share/wordnet, then in $VOXRT_TTS_PREFIX/usr/share/wordnet (the .debs unpacked by
recipes/data/tts_env.sh on the GPU machine).
"""
import argparse
import os
import re
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from text_gen import number_words  # noqa: E402

WORDNET_FILES = ["data.noun", "data.verb", "data.adj", "data.adv"]
TEST_MODULUS = 10
UNITS = {"%": " percent", "&": " and ", "+": " plus ", "=": " equals ", "@": " at "}


def wordnet_folder():
    for folder in ("/usr/share/wordnet",
                   os.path.join(os.environ.get("VOXRT_TTS_PREFIX", "/tmp/voxrt-tts"),
                                "usr/share/wordnet")):
        if os.path.exists(os.path.join(folder, "data.noun")):
            return folder
    sys.exit("debian_text.py: WordNet not found (apt-get install wordnet-base, or the .debs of "
             "scripts/fetch-tts-debs.sh unpacked by recipes/data/tts_env.sh)")


def year_words(n):
    if 2000 <= n <= 2009:
        return number_words(n)
    high, low = divmod(n, 100)
    if low == 0:
        return number_words(high) + " hundred"
    return number_words(high) + " " + (("oh " + number_words(low)) if low < 10 else number_words(low))


def spoken_numbers(text):
    text = re.sub(r"\$(\d+)", lambda m: m.group(1) + " dollars", text)
    text = re.sub(r"\b(\d{1,2}):(\d\d)\b", lambda m: number_words(int(m.group(1))) + " " + (
        "o'clock" if m.group(2) == "00" else
        ("oh " if m.group(2)[0] == "0" else "") + number_words(int(m.group(2)))), text)
    text = re.sub(r"\b(\d+)(st|nd|rd|th)\b", lambda m: ordinal(int(m.group(1))), text)
    text = re.sub(r"\b(1[1-9]\d\d)s?\b", lambda m: year_words(int(m.group(1))) + (
        "s" if m.group(0).endswith("s") else ""), text)
    text = re.sub(r"(\d),(\d\d\d)", r"\1\2", text)
    text = re.sub(r"\b(\d+)\.(\d+)\b", lambda m: number_words(int(m.group(1))) + " point " +
                  " ".join(number_words(int(d)) for d in m.group(2)), text)
    return re.sub(r"\d+", lambda m: number_words(int(m.group(0))) if int(m.group(0)) < 10 ** 6
                  else " ".join(number_words(int(d)) for d in m.group(0)), text)


def ordinal(n):
    from text_gen import ordinal_words
    return ordinal_words(n) if n < 100 else number_words(n) + "th"


def normalize(example):
    text = spoken_numbers(example)
    for symbol, words in UNITS.items():
        text = text.replace(symbol, words)
    text = text.lower().replace("-", " ").replace("`", "'")
    text = re.sub(r"[;:,.!?()\"/]", " ", text)
    if re.search(r"[^a-z' ]", text):
        return None  # foreign letters, symbols we do not speak
    text = re.sub(r"(^| )'+|'+( |$)", " ", text)  # quotes, not apostrophes
    words = text.split()
    if len(words) < 3 or len(words) > 30:
        return None
    return " ".join(words)


def examples(folder):
    for name in WORDNET_FILES:
        with open(os.path.join(folder, name), encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):
                    continue  # the licence header
                gloss = line.split("|", 1)[1] if "|" in line else ""
                for quoted in re.findall(r'"([^"]+)"', gloss):
                    yield quoted


def is_test(sentence):
    return zlib.crc32(sentence.encode()) % TEST_MODULUS == 0


def sentences(split):
    seen = set()
    for example in examples(wordnet_folder()):
        text = normalize(example)
        if text and text not in seen and is_test(text) == (split == "test"):
            seen.add(text)
            yield text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["train", "test"], required=True)
    args = parser.parse_args()
    for text in sentences(args.split):
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
