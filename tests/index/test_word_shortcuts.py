"""A word the analyzers analyse without their filter chains (ASCII words: identifiers, paths,
versions, hyphenated runs) becomes the very terms the chain gives it, or a rebuilt index
would change. Words are made the way indexing finds them: the token pattern run over text."""

from __future__ import annotations

import re
import string
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.index.analysis import (
    STOP_WORDS,
    TOKEN_PATTERN,
    ExactAnalyzer,
    WordCachedAnalyzer,
    composed,
    make_chain,
    make_exact_chain,
)

PIECES = [
    *("the", "a", "is", "running", "Deploy", "API", "HTTP2", "v2", "42", "007", "x", "I"),
    *("snake_case", "camelCaseName", "XMLHttpRequest", "nginx.conf", "v2.3.1", "src/app/main.py"),
    *("to-do", "how-to", "est-elle", "peut-etre", "__init__", "a_b-c.d/e", "Foo_foo", "ÉTÉ"),
    *("build_export_payment", "types-requests", "über", "dấu", "l'erreur", "部署v2", "ﬁle"),
    # a run of foreign function words ("e-e": not kept whole, its one part a stop word), a
    # CJK compatibility ideograph and other characters NFC changes (composed before analysis)
    *(
        "e-e",
        "E-E",
        "de-la-de",
        "est-e",
        "a-e",
        "\uf900",
        "x\uf901y",
        "\u0374",
        "\u212b",
        "e\u0301",
    ),
]
ASCII_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "._-/ '#@:", max_size=30)
STOP_RUNS = st.lists(
    st.sampled_from(sorted(STOP_WORDS)),
    min_size=2,
    max_size=3,
).map("-".join)
CHANGED_BY_NFC = st.characters(
    codec="utf-8", categories=("Lo", "Ll", "Lu", "Mn", "Sk", "Po", "Lm")
).filter(lambda c: unicodedata.normalize("NFC", c) != c)
TEXTS = st.lists(
    st.one_of(
        st.sampled_from(PIECES),
        ASCII_TEXT,
        st.text(max_size=8),
        STOP_RUNS,
        CHANGED_BY_NFC,
        st.text(alphabet=st.characters(min_codepoint=0xF900, max_codepoint=0xFAFF), max_size=3),
    ),
    max_size=8,
)
_WORDS = re.compile(TOKEN_PATTERN)


def _chain(chain: object, word: str) -> tuple[str, ...]:
    return tuple(t.text for t in chain(word, mode="index"))  # type: ignore[operator]


@given(TEXTS.map("".join))
@settings(max_examples=800, deadline=None)
def test_every_word_gets_the_chains_terms(text: str) -> None:
    chain, exact_chain = make_chain(), make_exact_chain()
    for word in _WORDS.findall(composed(text)):  # the analyzers' words are composed (NFC)
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
        # the analyzers compose the text first (index/analysis.py `composed`): "\uf900" is
        # "\u8c48" to them, as to any other writer; the chain reads what it is given
        expected = _chain(chain, composed(text))
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


def test_a_run_of_foreign_function_words_gives_what_the_chain_gives() -> None:
    # both parts of "e-e" are stop words and the run is not kept whole: no term either way
    # (the chain yielded "e-e" itself while the fast path gave nothing)
    for word in ("e-e", "E-E", "de-de"):
        assert WordCachedAnalyzer()._analyze_word(word) == _chain(make_chain(), word) == ()
    assert _chain(make_chain(), "to-do") == ("to-do",)  # English stop words: kept whole


def test_a_compatibility_ideograph_is_its_unified_one_to_both() -> None:
    for text in ("\uf900", "部署 \uf900 v2", "x\uf901y"):
        assert WordCachedAnalyzer().terms(text) == WordCachedAnalyzer().terms(composed(text))
        assert tuple(WordCachedAnalyzer().terms(text)) == _chain(make_chain(), composed(text))
