"""Write memstore/catalog/english-words.txt, the English word-frequency prior, from spaCy's lookups.

The prior (catalog/english_prior.py) says how common an English word is, so that a prompt's
everyday word no memory holds ("dies", "delayed") counts little against a hit while a rare one
(an identifier, a product name the vault lacks) still counts in full. Its source is the
`en_lexeme_prob` table of the spacy-lookups-data wheel (MIT licence, Copyright (c) 2019
ExplosionAI GmbH): a smoothed log probability per English token. This script keeps lowercase
alphabetic words, sums the probability of a word's case variants, takes the WORDS most
frequent, analyses each as the index does (memstore.index.terms: folding, stemming) and sums
the probabilities of the words that make the same term; it writes each term with its Zipf
value (log10 of its frequency per billion words), most frequent first. Nothing downloads at
run time: the file ships in the package.

Run:  pip download --no-deps spacy-lookups-data==1.0.5 -d /tmp/x
      python tests/benchmarks/make_english_prior.py /tmp/x/spacy_lookups_data-1.0.5-py2.py3-none-any.whl
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import zipfile
from pathlib import Path

from memstore.index import terms

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "memstore" / "catalog" / "english-words.txt"
TABLE = "spacy_lookups_data/data/en_lexeme_prob.json.gz"
WORD = re.compile(r"[a-z]+")
HEADER = """\
# English word-frequency prior for memstore's confidence rule (catalog/english_prior.py).
# One index term a line (a word as memstore's analyser folds and stems it) and its Zipf value:
# log10 of how often the words making that term occur per billion words of English.
# Source: the en_lexeme_prob table of spacy-lookups-data 1.0.5 (MIT licence; Copyright (c)
# 2019 ExplosionAI GmbH; "Permission is hereby granted, free of charge, to any person obtaining
# a copy of this software and associated documentation files (the "Software"), to deal in the
# Software without restriction ... The above copyright notice and this permission notice shall
# be included in all copies or substantial portions of the Software." The software is provided
# "as is", without warranty of any kind). Its {words:,} most frequent lowercase alphabetic words,
# case variants summed, made into {count:,} terms (words making one term summed).
# Written by tests/benchmarks/make_english_prior.py; regenerate it when the analyser changes.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "wheel",
        type=Path,
        help="the spacy-lookups-data wheel (or its unpacked en_lexeme_prob.json.gz)",
    )
    parser.add_argument(
        "--words", type=int, default=40_000, help="how many of the most frequent words to keep"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.wheel.suffix == ".whl":
        with zipfile.ZipFile(args.wheel) as wheel:
            table = json.loads(gzip.decompress(wheel.read(TABLE)))
    else:
        table = json.loads(gzip.decompress(args.wheel.read_bytes()))
    words: dict[str, float] = {}
    for token, logprob in table.items():
        word = token.lower()
        if WORD.fullmatch(word):
            words[word] = words.get(word, 0.0) + math.exp(logprob)
    kept = sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[: args.words]
    found: dict[str, float] = {}
    for word, p in kept:
        made = terms(word)
        if len(made) == 1:
            (term,) = made
            found[term] = found.get(term, 0.0) + p
    rows = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
    text = HEADER.format(words=len(kept), count=len(rows))
    text += "".join(f"{term} {math.log10(p) + 9:.2f}\n" for term, p in rows)
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {len(rows):,} terms from {len(kept):,} words", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
