"""The English word-frequency prior (catalog/english_prior.py): a shipped file, read as the index analyses words."""

from __future__ import annotations

import pytest

from memstore.catalog import english_prior
from memstore.index import terms


def test_the_list_says_where_it_comes_from_and_under_which_licence() -> None:
    header = [
        line for line in english_prior.WORDS_FILE.read_text("utf-8").splitlines() if line[:1] == "#"
    ]
    text = " ".join(header)
    assert "spacy-lookups-data 1.0.5" in text and "MIT licence" in text
    assert "make_english_prior.py" in text


@pytest.mark.parametrize(
    "word", ["dies", "delayed", "allowed", "sandwich", "coffee", "weather", "uploads", "angry"]
)
def test_everyday_words_are_found_as_the_index_analyses_them(word: str) -> None:
    """The list holds index terms: a word is looked up as the analyser folds and stems it
    (regenerate the file with tests/benchmarks/make_english_prior.py when the analyser
    changes and this fails)."""
    (term,) = terms(word)
    assert english_prior.zipf(term) is not None


def test_common_words_rank_above_rare_ones_and_product_names_are_absent() -> None:
    die, delay, haiku = (
        english_prior.zipf(next(iter(terms(w)))) for w in ("die", "delay", "haiku")
    )
    assert die is not None and delay is not None and haiku is not None
    assert die > delay > haiku
    for rare in ("kubernetes", "lorawan", "zigbee", "graphql", "mutex"):
        assert english_prior.zipf(next(iter(terms(rare)))) is None, rare


def test_the_list_is_read_whole() -> None:
    listed = [
        line.split()
        for line in english_prior.WORDS_FILE.read_text("utf-8").splitlines()
        if line and line[0] != "#"
    ]
    assert len(listed) > 20_000 and all(len(row) == 2 for row in listed)
    first, last = listed[0], listed[-1]
    assert (
        english_prior.zipf(first[0])
        == float(first[1])
        > english_prior.zipf(last[0])
        == float(last[1])
    )
