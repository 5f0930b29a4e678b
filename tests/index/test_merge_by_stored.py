"""Small segments merged by indexing their live documents again from the stored fields hold
exactly what a fresh build of the same documents holds: postings, weights, field lengths,
stored fields and search answers, through adds, replacements, deletions and tier merges."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from whoosh.writing import SegmentWriter

from memstore.index import Document, SearchIndex
from memstore.index.schema import parse_stored

WORDS = ["nginx", "upload", "deploy", "kafka", "redis", "retry", "queue", "worker", "token"]
WORDS += ["Über", "dấu", "l'erreur", "v2.3.1", "src/app/main.py", "部署需要审批", "running"]


def _doc(rng: random.Random, n: int) -> Document:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40)))
    keywords = tuple(sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 3))}))
    return Document(
        f"ws{n % 3}/{n}.md", f"{n:08x}", f"ws{n % 3}", "note", body, keywords,
        source="bench", created="2026-12-06T10:00:00Z", seen=rng.randint(1, 4), hash=f"h{n}",
    )  # fmt: skip


def _contents(index: SearchIndex) -> dict[str, Any]:
    """Everything a search reads, keyed by document key (document numbers differ)."""
    reader = index.reader.searcher().reader()
    keys = {n: reader.stored_fields(n)["key"] for n in reader.all_doc_ids()}
    postings: dict[tuple[str, str], dict[str, float]] = {}
    for field in ("content", "keywords", "exact"):
        for term in reader.lexicon(field):
            matcher = reader.postings(field, term)
            found = {}
            while matcher.is_active():
                if matcher.id() in keys:
                    found[keys[matcher.id()]] = matcher.weight()
                matcher.next()
            if found:
                postings[field, term.decode() if isinstance(term, bytes) else term] = found
    # 0 and None both say "no terms": a segment whose documents have no accented words at
    # all keeps no exact column (None), whichever way it was merged
    lengths = {
        (keys[n], field): reader.doc_field_length(n, field) or 0
        for n in keys
        for field in ("content", "keywords", "exact")
    }
    stored = {keys[n]: parse_stored(reader.stored_fields(n)) for n in keys}
    return {"postings": postings, "lengths": lengths, "stored": stored}


@pytest.mark.parametrize("seed", [3, 17])
def test_segments_merged_from_stored_fields_hold_what_a_fresh_build_holds(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def copied(*_: Any, **__: Any) -> None:
        raise AssertionError("a tier merge copied postings instead of indexing again")

    monkeypatch.setattr(SegmentWriter, "add_reader", copied)
    rng = random.Random(seed)
    index = SearchIndex.open(tmp_path / "live")
    docs: dict[str, Document] = {}
    for commit in range(150):  # one document a commit, as adds make them: tiers merge
        new = _doc(rng, commit)
        changed = [new]
        if commit % 5 == 4:  # a replacement, as a duplicate add or an edit makes
            old = docs[rng.choice(sorted(docs))]
            changed.append(replace(old, seen=old.seen + 1, content=f"{old.content} redis"))
        gone = []
        if commit % 7 == 6:
            gone = [rng.choice(sorted(docs))]
        index.apply(changed, [g for g in gone if g not in {d.key for d in changed}])
        for d in changed:
            docs[d.key] = d
        for key in gone:
            if key not in {d.key for d in changed}:
                docs.pop(key, None)
    assert index.segment_count() < 30  # tiers merged (150 commits)
    fresh = SearchIndex.open(tmp_path / "fresh")
    fresh.apply(sorted(docs.values(), key=lambda d: d.key))
    assert _contents(index) == _contents(fresh)
    for query in ("deploy kafka", "Über dấu", "src/app/main.py worker", "running retry token"):
        ours = index.search(query, any_term=True, limit=8)
        theirs = fresh.search(query, any_term=True, limit=8)
        assert [(h.document, round(h.score, 6)) for h in ours] == [
            (h.document, round(h.score, 6)) for h in theirs
        ]
    index.close()
    fresh.close()
