"""The analyser's porter2 stem is Whoosh's, step for step (it only skips steps that change nothing)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.lang.porter2 import stem as whoosh_stem

from memstore.index.analysis import stem

SUFFIXES = ["ization", "ational", "fulness", "tional", "ness", "ingly", "edly", "eed", "li"]
SUFFIXES += ["ogi", "ies", "sses", "'s", "'", "y", "Y", "sion", "ement", "ative", "al", "e", "ll"]
PIECES = st.sampled_from(["a", "e", "i", "o", "u", "y", "b", "c", "d", "l", "n", "s", "t", "'"])


@settings(max_examples=3000)
@given(st.lists(PIECES, max_size=10).map("".join), st.sampled_from(["", *SUFFIXES]))
def test_stems_are_porter2s(start: str, suffix: str) -> None:
    word = start + suffix
    assert stem(word) == whoosh_stem(word)


def test_every_word_of_the_docs_stems_as_porter2_does() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs"
    words = {
        w for path in docs.glob("*.md") for w in re.findall(r"[a-z']+", path.read_text().lower())
    }
    words |= {w + s for w in list(words)[:500] for s in SUFFIXES}
    assert len(words) > 2000
    assert [w for w in sorted(words) if stem(w) != whoosh_stem(w)] == []
    # exceptional forms, both lists
    for word in ["skies", "dying", "news", "andes", "inning", "succeeded", "succeed", "gently"]:
        assert stem(word) == whoosh_stem(word)
