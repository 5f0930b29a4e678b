"""A query as a value: its text analysed once, then passed to every step of a recall."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .analysis import (
    ExactAnalyzer,
    exact_terms,
    make_analyzer,
    prompt_terms,
    query_terms,
    term_sources,
)

CACHE_QUERIES = 128  # texts whose Query is kept: the steps of one recall share one value …
CACHE_LONGEST = 10_000  # … unless the text is longer (a pasted log is analysed each time)


@dataclass(frozen=True)
class Query:
    """A query's text and its distinct terms in order (contractions read as their words; a
    word kept as English, such as "die", left out where the prompt is in a language that
    has it as a function word: `prompt_terms`).

    Build one with `Query.of(text)`; every method of `SearchIndex` that reads a query takes
    it (or a text, read as `Query.of(text)`), so a recall's several searches, coverage and typo
    checks analyse the text once.
    """

    text: str
    terms: tuple[str, ...]
    # Terms another index the caller also searches holds: here, where no document holds
    # them, they are not replaced by a typo's stand-in (they are no typo).
    settled: frozenset[str] = frozenset()
    # Typed to an agent in chat (the prompt hook, `search --context`), where a word may be
    # used in passing: ranking weighs words the vault has not measured by their English
    # frequency (catalog/english_prior.py). A search or a recall means every word.
    chat: bool = False

    @classmethod
    def of(cls, text: str, *, chat: bool = False) -> Query:
        """Return the query of `text` (the same value for the same text, while cached);
        `chat`: a prompt typed to an agent (Query.chat)."""
        if len(text) > CACHE_LONGEST:
            found = cls(text, tuple(prompt_terms(_analyzer(), text)))
        else:
            found = _parse(text)
        return dataclasses.replace(found, chat=True) if chat else found

    @functools.cached_property
    def sources(self) -> Mapping[str, str]:
        """Each term with the word or identifier part it came from (lowercase): what a typo
        stand-in names. Analysed on first use (most queries have no unknown word)."""
        return term_sources(_analyzer(), self.text)

    @functools.cached_property
    def exact(self) -> tuple[str, ...]:
        """The query's words that have accents, as typed (lowercase, not folded): a memory
        holding them as written scores a little above one holding them only folded."""
        return tuple(exact_terms(_exact_analyzer(), self.text))


def as_query(query: Query | str) -> Query:
    """Return `query` as a Query (a text is analysed)."""
    return query if isinstance(query, Query) else Query.of(query)


def terms(text: str) -> set[str]:
    """Return the distinct index terms of `text` (the same analysis search uses)."""
    return set(query_terms(_analyzer(), text))


@functools.lru_cache(maxsize=CACHE_QUERIES)
def _parse(text: str) -> Query:
    return Query(text, tuple(prompt_terms(_analyzer(), text)))


@functools.cache
def _analyzer() -> Any:
    return make_analyzer()


@functools.cache
def _exact_analyzer() -> ExactAnalyzer:
    return ExactAnalyzer()
