"""A word the analyzers analyse without their filter chains (ASCII words: identifiers, paths,
versions, hyphenated runs) becomes the very terms the chain gives it, or a rebuilt index
would change. Words are made the way indexing finds them: the token pattern run over text."""

from __future__ import annotations

import re
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.index.analysis import (
    TOKEN_PATTERN,
    ExactAnalyzer,
    WordCachedAnalyzer,
    make_chain,
    make_exact_chain,
)

PIECES = [
    *("the", "a", "is", "running", "Deploy", "API", "HTTP2", "v2", "42", "007", "x", "I"),
    *("snake_case", "camelCaseName", "XMLHttpRequest", "nginx.conf", "v2.3.1", "src/app/main.py"),
    *("to-do", "how-to", "est-elle", "peut-etre", "__init__", "a_b-c.d/e", "Foo_foo", "ÉTÉ"),
    *("build_export_payment", "types-requests", "über", "dấu", "l'erreur", "部署v2", "ﬁle"),
]
ASCII_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "._-/ '#@:", max_size=30)
TEXTS = st.lists(st.one_of(st.sampled_from(PIECES), ASCII_TEXT, st.text(max_size=8)), max_size=8)
_WORDS = re.compile(TOKEN_PATTERN)


def _chain(chain: object, word: str) -> tuple[str, ...]:
    return tuple(t.text for t in chain(word, mode="index"))  # type: ignore[operator]


@given(TEXTS.map("".join))
@settings(max_examples=800, deadline=None)
def test_every_word_gets_the_chains_terms(text: str) -> None:
    chain, exact_chain = make_chain(), make_exact_chain()
    for word in _WORDS.findall(text):
        assert WordCachedAnalyzer()._analyze_word(word) == _chain(chain, word), word
        assert ExactAnalyzer()._analyze_word(word) == _chain(exact_chain, word), word


@given(TEXTS.map(" ".join))
@settings(max_examples=300, deadline=None)
def test_a_texts_terms_are_the_chains(text: str) -> None:
    # the whole text through the chains (the analyzers' caches warm or not)
    for analyzer, chain in (
        (WordCachedAnalyzer(), make_chain()),
        (ExactAnalyzer(), make_exact_chain()),
    ):
        expected = _chain(chain, text)
        assert tuple(analyzer.terms(text)) == expected
        assert tuple(analyzer.terms(text)) == expected


def test_an_identifier_gives_itself_and_its_parts_stemmed() -> None:
    assert WordCachedAnalyzer()._analyze_word("build_export_payments") == (
        "build_export_pay",
        "build",
        "export",
        "payment",
    )
    assert WordCachedAnalyzer()._analyze_word("how-to") == ("how-to",)  # parts: stop words
    assert ExactAnalyzer()._analyze_word("nginx.conf") == ()
