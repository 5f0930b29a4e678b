"""The written-out request terms are what the analyser makes of the request words now."""

from __future__ import annotations

import textwrap

from memstore.catalog import retrieval
from memstore.catalog.request_terms import REQUEST_TERMS
from memstore.core.ranking import REQUEST_WORDS
from memstore.index import terms


def test_the_request_terms_are_the_analysed_request_words():
    analysed = frozenset(t for word in REQUEST_WORDS for t in terms(word))
    paste = textwrap.fill(" ".join(sorted(analysed)), 92, initial_indent="    ")
    assert analysed == REQUEST_TERMS, f"paste into catalog/request_terms.py:\n{paste}"


def test_ranking_reads_the_written_out_terms():
    assert retrieval._request_terms() is REQUEST_TERMS
