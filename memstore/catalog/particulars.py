"""A query's particulars: its numbers, codes and identifiers, the parts of them the vault lacks, and the terms of each joined identifier (one word of a prompt)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from memstore.index import terms

# The tokens of a text that name things: numbers, codes and joined identifiers ("413",
# "1MB", "checkout.spec.ts", "localhost:5432", "lodash-es"): each run of word characters
# and joiners, kept when it holds a digit or a joiner. (One pattern for both, `\w*\d\w*`,
# backtracked quadratically: a 100,000-letter word took minutes.)
_RUN = re.compile(r"\w+(?:[./\-:]\w+)*")
_NAMING = re.compile(r"[\d./\-:]")
_JOINERS = frozenset("./-:_")


def is_specific(term: str) -> bool:
    """A number, code or whole joined identifier ("413", "p3009", "checkout.spec.t")."""
    return any(c.isdigit() or c in "./-_" for c in term)


@functools.lru_cache(maxsize=256)
def named_terms(text: str) -> frozenset[str]:
    """Return the terms of `text` that come from numbers, codes and joined identifiers."""
    runs = (m.group(0) for m in _RUN.finditer(text))
    return frozenset(t for run in runs if _NAMING.search(run) for t in terms(run))


# a lower-case letter before a capital, or two capitals before a lower-case one (searched
# word by word: one pattern spanning the word backtracks quadratically on a long one)
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=256)
def camel_wholes(text: str) -> frozenset[str]:
    """Return the terms of the identifiers `text` writes in camelCase as one word
    ("WorkNCCL", "SeqNum", "getUserById"), whole; the analyser also indexes their parts."""
    words = {w for w in _WORD.findall(text) if _CAMEL.search(w)}
    # lowercased first (no parts), as the index's whole term is: "İ" lowers to "i" and a
    # combining dot, which would end the word before the analyser's fold drops it
    return frozenset(t for word in words for t in _terms(word.lower().replace("\u0307", "")))


def orphan_parts(text: str, holders: Mapping[str, int]) -> frozenset[str]:
    """Return the parts of the joined identifiers in `text` that no memory holds whole
    (`holders`: how many memories hold each query term), unless `text` also names the part
    on its own: the `0` and `1` of "127.0.0.1", the `x86` and `64` of
    "x86_64-unknown-linux-musl" when no memory holds the address or the triple. They are
    pieces of a thing the vault does not know, not codes of their own: a memory holding a
    "1" or a "64" somewhere shares no particular with the prompt."""
    runs = [match.group(0) for match in _RUN.finditer(text)]
    parts: set[str] = set()
    for run in {r for r in runs if _JOINERS.intersection(r)}:
        found = _terms(run)
        whole = {t for t in found if _JOINERS.intersection(t)}
        if whole and not any(holders.get(t, 0) > 0 for t in whole):
            parts |= found - whole
    if not parts:
        return frozenset()
    alone = {t for run in {r for r in runs if not _JOINERS.intersection(r)} for t in _terms(run)}
    return frozenset(parts - alone)


@functools.lru_cache(maxsize=256)
def joined_words(text: str) -> tuple[frozenset[str], ...]:
    """Return, per joined identifier of `text` ("/dev/ttyUSB0", "RoomDatabase.Builder",
    "node_modules"), the terms the analyser reads in it (the whole and its parts) that `text`
    does not also write on their own: one word of the prompt, however many terms it yields
    (core.ranking.prompt_words)."""
    runs = [match.group(0) for match in _RUN.finditer(text)]
    alone = {t for run in runs if not _JOINERS.intersection(run) for t in _terms(run)}
    found = (_terms(run) - alone for run in dict.fromkeys(runs) if _JOINERS.intersection(run))
    return tuple(group for group in found if len(group) > 1)


@functools.lru_cache(maxsize=4096)
def _terms(run: str) -> frozenset[str]:
    return frozenset(terms(run))
