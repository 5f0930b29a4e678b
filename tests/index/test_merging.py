"""Large segments merged by tiers (index/merging.py): which segments a merge takes, and a
merged index holds and answers exactly what it did, also when documents were replaced or
deleted while the helper process wrote the merged segment."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from memstore.index import Document, SearchIndex, engine, merging
from tests.index.test_merge_by_stored import _contents
from tests.index.test_merge_by_stored import _doc as _small_doc
from tests.index.test_pruning import _doc as _zipf_doc

QUERIES = ["deploy cache", "timeout retry queue", "once rare", "kafka nginx redis", "worker"]


def test_a_chunked_million_converges_to_few_segments() -> None:
    sizes = [(f"s{n}", 24_000 + n) for n in range(42)]  # what a catch-up in chunks leaves
    rounds = 0
    while chosen := merging.plan(sizes):
        assert len(chosen) == merging.LARGE_TIER
        assert chosen == [sid for sid, _ in sorted(sizes, key=lambda s: s[1])[: len(chosen)]]
        merged = sum(live for sid, live in sizes if sid in chosen)
        assert merged <= merging.LARGE_MERGE_DOCS
        sizes = [s for s in sizes if s[0] not in chosen] + [(f"m{rounds}", merged)]
        rounds += 1
    assert rounds == 7
    assert len(sizes) == 7  # each document rewritten once


def test_a_plan_takes_one_tier_within_the_budget() -> None:
    assert merging.plan([(f"s{n}", 17_000) for n in range(6)]) == [f"s{n}" for n in range(6)]
    assert merging.plan([(f"s{n}", 17_000) for n in range(5)]) == []  # a tier not yet full
    assert merging.plan([(f"s{n}", 400) for n in range(20)]) == []  # the commits' to merge
    mixed = [(f"s{n}", 49_000 + n) for n in range(6)] + [("big", 240_000)]
    assert merging.plan(mixed) == [f"s{n}" for n in range(5)]  # 250,000 at most
    assert merging.plan([("a", 200_000), ("b", 200_000)] * 3) == []


def _search(index: SearchIndex) -> list[Any]:
    return [
        [(h.document.key, h.score.hex()) for h in index.search(q, any_term=any_, limit=12)]
        for q in QUERIES
        for any_ in (False, True)
    ]


@pytest.mark.parametrize("seed", [2, 11])
def test_a_merged_index_holds_and_answers_the_same(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # segments of 60 documents count as large here: commits leave them be, a plan merges them
    monkeypatch.setattr(engine, "MERGE_MAX_DOCS", 10)
    monkeypatch.setattr(merging, "MERGE_MAX_DOCS", 10)
    rng = random.Random(seed)
    index = SearchIndex.open(tmp_path / "live")
    docs: dict[str, Document] = {}

    def write(changed: list[Document], gone: list[str]) -> None:
        index.apply(changed, gone)
        docs.update((d.key, d) for d in changed)
        for key in gone:
            docs.pop(key)

    for batch in range(7):
        new = [_zipf_doc(rng, batch * 60 + i) for i in range(60)]
        picked = rng.sample(sorted(docs), min(5, len(docs)))
        old = [_zipf_doc(rng, int(k.split("/")[1][:-3])) for k in picked]
        old = [d for d in old if d.key in docs and d.workspace == docs[d.key].workspace]
        write(new + old, [])
    chosen = index.merge_plan()
    assert len(chosen) == merging.LARGE_TIER
    built = index.build_merge(chosen)
    assert built is not None and built.folder.is_dir()
    # written meanwhile: replacements and deletions in the segments being merged
    moved = [_zipf_doc(rng, n) for n in range(0, 200, 7)]
    write([d for d in moved if d.key in docs and d.workspace == docs[d.key].workspace], [])
    write([], [k for k in rng.sample(sorted(docs), 20)])
    before, answers = index.segment_count(), _search(index)
    assert index.swap_in(built)
    assert not built.folder.exists()
    assert index.segment_count() == before - len(chosen) + 1
    assert _search(index) == answers  # the same keys, order and doubles
    fresh = SearchIndex.open(tmp_path / "fresh")
    fresh.apply(sorted(docs.values(), key=lambda d: d.key))
    assert _contents(index) == _contents(fresh)
    reopened = SearchIndex.open(tmp_path / "live", create=False)
    assert _search(reopened) == answers
    for ix in (index, fresh, reopened):
        ix.close()


def test_a_merge_whose_segment_is_gone_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "MERGE_MAX_DOCS", 10)
    monkeypatch.setattr(merging, "MERGE_MAX_DOCS", 10)
    rng = random.Random(4)
    index = SearchIndex.open(tmp_path / "ix")
    for batch in range(6):
        index.apply([_small_doc(rng, batch * 30 + i) for i in range(30)])
    stale = tmp_path / "ix" / "merging-999999999"  # a merge killed midway: no such process
    stale.mkdir()
    built = index.build_merge(index.merge_plan())
    assert built is not None and not stale.exists()
    index.compact()  # another merge took the segments first
    contents, count = _contents(index), index.segment_count()
    assert not index.swap_in(built)
    assert not built.folder.exists()
    assert (index.segment_count(), _contents(index)) == (count, contents)
    index.close()
