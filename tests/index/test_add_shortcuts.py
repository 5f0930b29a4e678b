"""An add's searches, made cheaper without changing an answer: a segment the query's terms do
not reach is skipped, and a term the lexicon found absent from a segment is not asked again.

Each search of an index written one document a commit (as adds write it: tiers merge, some
documents are deleted) gives the same hits, scores and order as the same search with both
shortcuts off, and, where every term is searched, as the search of the index rebuilt in one
commit (a large index's any-word search keeps its rarest terms by Whoosh's counts, deleted
documents included, with or without the shortcuts).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memstore.index import Document, SearchIndex, reader, scoring
from memstore.index.schema import IndexHit

WORDS = ["nginx", "upload", "deploy", "kafka", "redis", "retry", "queue", "worker", "token"]
WORDS += ["Über", "dấu", "v2.3.1", "rollback", "staging", "canary", "pager"]
ABSENT = ["zebra", "quokka", "v9.9.9"]


def _doc(rng: random.Random, n: int) -> Document:
    # few words each: most one-document segments hold none of a query's rarer words
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    keywords = tuple(sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 2))}))
    return Document(f"{rng.choice(['ws', 'ops'])}/{n}.md", f"{n:08x}", "ws", "note", body, keywords)


def _queries(rng: random.Random) -> list[tuple[str, bool, frozenset[str] | None]]:
    found = []
    for _ in range(40):
        words = rng.sample(WORDS + ABSENT, rng.randint(1, 4))
        found.append((" ".join(words), rng.random() < 0.6, rng.choice([None, frozenset({"ws"})])))
    return found


def _answers(index: SearchIndex, queries: list[tuple[str, bool, frozenset[str] | None]]) -> list:
    found = []
    for text, any_term, where in queries:
        index.term_frequencies(text)  # as an add's hint asks first (writer._candidate_query)
        hits = index.search(text, any_term=any_term, workspaces=where, limit=5)
        found.append([_hit(h) for h in hits])
    return found


def _hit(hit: IndexHit) -> tuple[str, float]:
    return hit.document.key, round(hit.score, 9)


@pytest.mark.parametrize("rarest", [False, True])
def test_an_adds_search_shortcuts_give_the_hits_of_the_full_search_and_of_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rarest: bool
) -> None:
    if rarest:  # as in a large index: an any-word query keeps its rarest terms the index holds
        monkeypatch.setattr(reader, "COMMON_TERM_MIN", 10)
    rng = random.Random(31)
    index = SearchIndex.open(tmp_path / "adds")
    first = _doc(rng, 0)
    index.apply([first])
    full = SearchIndex.open(tmp_path / "adds")  # the same index, searched without shortcuts
    full.reader._postings.lacks = None
    live = {first.key: first}
    queries = _queries(rng)
    hits = 0
    for n in range(1, 70):  # one document a commit, searched after each as an add's hint is
        doc = _doc(rng, n)
        gone = [rng.choice(sorted(live))] if n % 9 == 8 else []
        index.apply([doc], gone)
        live[doc.key] = doc
        for key in gone:
            live.pop(key)
        asked = queries[n % 8 :: 8]
        shortcut = _answers(index, asked)
        with monkeypatch.context() as patched:
            patched.setattr(scoring, "_reaches", lambda *_: True)
            assert _answers(full, asked) == shortcut, n
        hits += sum(map(len, shortcut))
    assert hits and index.segment_count() > 3  # segments to skip, and hits to compare
    rebuilt = SearchIndex.open(tmp_path / "rebuilt")
    rebuilt.apply(list(live.values()))
    if not rarest:  # which terms are rarest counts deleted documents too (Lexicon.frequency),
        # with or without the shortcuts, until their segments merge
        assert _answers(rebuilt, queries) == _answers(index, queries)
    for opened in (index, full, rebuilt):
        opened.close()
