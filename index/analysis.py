"""How text becomes terms: identifiers split into parts, accents folded, porter2 stems."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from whoosh.analysis import STOP_WORDS as WHOOSH_STOP_WORDS
from whoosh.analysis import (
    CharsetFilter,
    Filter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
)
from whoosh.lang.porter2 import stem
from whoosh.support.charset import accent_map

# Whoosh's English stop words plus the question words, pronouns and auxiliaries that
# people and agents put in prompts ("why does X fail?"): with them, a strict all-terms
# query would demand words that memories rarely contain.
STOP_WORDS = frozenset(
    WHOOSH_STOP_WORDS
    | {
        "i",
        "me",
        "my",
        "our",
        "he",
        "she",
        "they",
        "them",
        "their",
        "its",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "where",
        "do",
        "does",
        "did",
        "doing",
        "was",
        "were",
        "been",
        "being",
        "has",
        "had",
        "am",
        "would",
        "should",
        "could",
        "shall",
        "might",
        "must",
        "there",
        "here",
        "these",
        "those",
        "then",
        "than",
        "so",
        "some",
        "any",
        "just",
        "also",
        "very",
        "please",
        "about",
        "into",
    }
)

# A token keeps dotted, slashed and hyphenated runs whole ("nginx.conf", "v2.3.1").
TOKEN_PATTERN = r"\w+(?:[./\-]\w+)*"
_SEPARATORS = re.compile(r"[./_\-]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_parts(token: str) -> list[str]:
    """Return the token plus its parts: path segments, dotted/snake/kebab pieces, camelCase."""
    parts = [token]
    for segment in token.split("/"):
        parts.append(segment)
        for piece in _SEPARATORS.split(segment):
            parts.append(piece)
            if piece.isascii() and not piece.islower() and not piece.isupper():
                parts.extend(_CAMEL.findall(piece))
    unique: dict[str, None] = {}
    for part in parts:
        if part:
            unique.setdefault(part, None)
    return list(unique)


class IdentifierFilter(Filter):
    """Yield each token whole and then each of its identifier parts."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        for token in tokens:
            text = token.text
            parts = identifier_parts(text)
            if len(parts) == 1:
                yield token
                continue
            for part in parts:
                token.text = part
                yield token


def make_analyzer() -> Any:
    """Return the analyzer used for both indexing and queries."""
    return (
        RegexTokenizer(TOKEN_PATTERN)
        | IdentifierFilter()
        | LowercaseFilter()
        | CharsetFilter(accent_map)
        | StopFilter(stoplist=STOP_WORDS, minsize=1)
        | StemFilter(stemfn=stem, cachesize=50000)
    )


def query_terms(analyzer: Any, text: str) -> list[str]:
    """Return the distinct terms of a query, in order."""
    terms: dict[str, None] = {}
    for token in analyzer(text, mode="query"):
        terms.setdefault(token.text, None)
    return list(terms)
