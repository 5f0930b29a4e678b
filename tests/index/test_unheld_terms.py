"""An any-word search in a large index leaves out the terms no document holds: the same
hits, scores and coverage as scoring them, and none of them is looked up per segment.

A new memory's contradiction hint searches its own text, whose rarest terms are often words
no other memory holds (a hash, a version, an id): they were kept among the query's three
rarest and looked up in every segment and field, for nothing.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from memstore.index import Document, SearchIndex
from memstore.index import reader as reader_module
from tests.index.test_posting_reads import WORDS


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """120 memories over several segments, some replaced (deleted documents count too)."""
    rng = random.Random(11)
    index = SearchIndex.open(tmp_path_factory.mktemp("unheld") / "ix")
    for start in range(0, 120, 20):
        index.apply(
            Document(
                f"ws/{n:04d}.md",
                f"{n:08x}",
                "ws" if n % 5 else "other",
                "note",
                f"{' '.join(rng.sample(WORDS, 4))} after the upgrade {n % 9}",
                ("ops",) if n % 4 == 0 else (),
            )
            for n in range(start, start + 20)
        )
    index.apply([Document("ws/0003.md", f"{3:08x}", "ws", "note", "nginx cache 7 rebuilt", ())])
    return index


QUERIES = [
    "nginx 0.6121984097497286 upgrade",  # two terms nobody holds among the rarest
    "zzqxv 7f3a9c1e redis",
    "zzqxv 7f3a9c1e",  # nothing held at all
    "token retry 3 build",  # every term held
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("coverage", [False, True])
@pytest.mark.parametrize("where", [None, {"ws"}])
@pytest.mark.parametrize("expansion", [(), ("zzqxv", "cache")])
def test_unheld_terms_change_no_hit(
    large: SearchIndex,
    monkeypatch: pytest.MonkeyPatch,
    query: str,
    coverage: bool,
    where: set[str] | None,
    expansion: tuple[str, ...],
) -> None:
    monkeypatch.setattr(reader_module, "COMMON_TERM_MIN", 50)  # this index counts as large
    asked: list[tuple[str, ...]] = []
    score = reader_module.score

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(args[3].terms)
        return score(*args, **kwargs)

    monkeypatch.setattr(reader_module, "score", spy)

    def run() -> list[tuple[str, float, float | None]]:
        hits = large.search(
            query, workspaces=where, limit=5, any_term=True, coverage=coverage, expansion=expansion
        )
        return [(h.document.key, h.score, h.coverage) for h in hits]

    now = run()
    lexicon = large.reader.lexicon
    assert all(lexicon.held_by(t) for terms in asked for t in terms)  # none looked up
    monkeypatch.setattr(reader_module.IndexReader, "_held", lambda self, terms: terms)
    assert now == run()  # as when every kept term was scored
    if query.startswith("nginx"):
        assert now  # the held terms still find memories
