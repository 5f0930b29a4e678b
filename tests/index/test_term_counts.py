"""A document's terms counted at once (`term_counts`, what the segment writer files) are the
terms its analyzer yields one by one, counted: in every language, and when the word cache
starts over midway."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.index import analysis
from memstore.index.analysis import _CASED_WORD, ExactAnalyzer, WordCachedAnalyzer, make_chain

WORDS = [
    *("nginx", "upload", "the", "a", "running", "42", "v2.3.1", "nginx.conf", "snake_case"),
    *("camelCaseName", "Über", "über", "dấu", "đâu", "l'erreur", "c'est", "部署需要审批"),
    *("デプロイ", "v2配置", "peut-être", "est-elle", "src/app/main.py", "ÉTÉ", "ﬁle", "e\u0301"),
    *("—", "“quoted”", "fix —", "→", "½", "x²"),  # no foreign word, or one of digits
]
TEXTS = st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=12)), max_size=40).map(
    lambda words: " ".join(words)
)


def _one_by_one(analyzer: WordCachedAnalyzer, text: str) -> Counter[str]:
    return Counter(token.text for token in analyzer(text, mode="index"))


@given(TEXTS)
@settings(max_examples=300, deadline=None)
def test_counting_at_once_gives_the_analyzers_terms_counted(text: str) -> None:
    for make in (WordCachedAnalyzer, ExactAnalyzer):
        assert make().term_counts(text) == _one_by_one(make(), text)
        warm = make()
        warm.terms(text)  # every word known already
        assert warm.term_counts(text) == _one_by_one(make(), text)


def test_a_word_cache_that_starts_over_midway_counts_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(analysis, "WORD_CACHE", 5)
    analyzer = WordCachedAnalyzer()
    texts = [" ".join(WORDS[n : n + 9]) for n in range(0, len(WORDS), 3)]
    for text in texts * 2:
        assert analyzer.term_counts(text) == _one_by_one(WordCachedAnalyzer(), text)
        assert len(analyzer._terms) <= 5 + 9


@given(
    st.one_of(
        st.from_regex(r"[A-Z][a-z]{1,12}", fullmatch=True),
        st.from_regex(r"[A-Z0-9]{1,10}", fullmatch=True),
        st.sampled_from(["The", "API", "HTTP2", "V2", "Running", "Its", "JSON", "X", "A1B2"]),
    )
)
@settings(max_examples=600, deadline=None)
def test_a_cased_words_shortcut_gives_what_the_whole_chain_gives(word: str) -> None:
    # capitalised words and words in capitals skip the filter chain (lowercased, then as
    # a plain word): the terms must be the chain's, or a rebuilt index changes
    assert _CASED_WORD.fullmatch(word)
    chain = tuple(t.text for t in make_chain()(word, mode="index"))
    assert WordCachedAnalyzer()._analyze_word(word) == chain
