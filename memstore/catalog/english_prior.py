"""How common each English word is: a shipped frequency list, the prior for words no memory holds."""

from __future__ import annotations

import functools
from pathlib import Path

# One index term a line with its Zipf value; its header says where it comes from (spaCy's
# MIT-licensed lookups) and how tests/benchmarks/make_english_prior.py wrote it.
WORDS_FILE = Path(__file__).with_name("english-words.txt")


@functools.cache
def _zipf() -> dict[str, str]:
    """Read the list once a process (~25,000 terms, ~9 ms CPU), only when a chat query holds
    a word at most two memories hold; the values stay text until one is asked for."""
    text = WORDS_FILE.read_text(encoding="utf-8")
    body = text[text.index("\n", text.rindex("\n#") + 1) + 1 :]  # after the header
    words = body.split()
    return dict(zip(words[::2], words[1::2], strict=True))


def zipf(term: str) -> float | None:
    """Return the Zipf value of an index term (log10 of its words' frequency per billion
    words of English), or None when the list does not hold it (a rare word)."""
    value = _zipf().get(term)
    return None if value is None else float(value)
