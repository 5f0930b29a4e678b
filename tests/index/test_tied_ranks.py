"""Thousands of documents tied at the last place (a million memories' common words): each
segment's are narrowed by their keys' order in its key term table before any is read, and a
search returns exactly what ranking every match by (score to six decimals, key) returns."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memstore.index import Document, SearchIndex
from memstore.index.scoring import segment_id
from memstore.index.stored import key_rank_steps, key_ranks

WORDS = ["retry", "budget", "deploy", "cache", "kestrel", "ñandú", "façade", "queue"]


def _key(n: int, rng: random.Random) -> str:
    # keys whose order is not the documents' (shuffled), some beyond ASCII: code-point
    # order is the UTF-8 byte order the term table keeps
    head = rng.choice(["ws", "wś", "w\u00e9s", "w\U0001f600", "Ws", "w s"])
    return f"{head}/{rng.choice(['a', 'ä', 'z', 'é'])}{n:05d}.md"


def _text(n: int, rng: random.Random) -> str:
    words = rng.sample(WORDS, 3)
    return " ".join(words) + (" rare" if n % 97 == 5 else "") + f" note {n % 3}"


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> tuple[SearchIndex, dict[str, Document]]:
    """1,600 documents of a few shapes in eight segments, then updates and deletions (old
    copies stay, deleted, in their segments), so thousands tie."""
    rng = random.Random(11)
    index = SearchIndex.open(tmp_path_factory.mktemp("ranks") / "ix")
    numbers = list(range(1600))
    rng.shuffle(numbers)
    docs: dict[str, Document] = {}
    for start in range(0, 1600, 200):
        batch = [
            Document(_key(n, rng), f"{n:08x}", "ws" if n % 5 else "other", "note", _text(n, rng))
            for n in numbers[start : start + 200]
        ]
        index.apply(batch)
        docs.update((d.key, d) for d in batch)
    keys = sorted(docs)
    changed = [
        Document(k, docs[k].id, docs[k].workspace, "note", "retry budget") for k in keys[::9]
    ]
    index.apply(changed)
    docs.update((d.key, d) for d in changed)
    gone = keys[4::13]
    index.apply([], deletes=gone)
    for key in gone:
        docs.pop(key, None)
    return index, docs


QUERIES = ["retry", "budget deploy", "kestrel rare", "cache queue façade", "note", "ñandú"]


@pytest.mark.parametrize("text", QUERIES)
@pytest.mark.parametrize("any_term", [False, True])
@pytest.mark.parametrize("where", [None, {"ws"}])
def test_narrowed_ties_give_the_hits_of_every_match_ranked(
    tied: tuple[SearchIndex, dict[str, Document]],
    text: str,
    any_term: bool,
    where: set[str] | None,
) -> None:
    index, _ = tied
    every = index.search(text, workspaces=where, limit=5000, any_term=any_term, coverage=True)
    ranked = sorted(every, key=lambda h: (-round(h.score, 6), h.document.key))
    for limit in (1, 2, 5, 30, 70):
        hits = index.search(text, workspaces=where, limit=limit, any_term=any_term, coverage=True)
        assert [(h.document.key, h.score, h.coverage) for h in hits] == [
            (h.document.key, h.score, h.coverage) for h in ranked[:limit]
        ]


def test_a_large_tie_reads_few_keys(tmp_path: Path) -> None:
    """Without narrowing every tied document is read for its key (2,000 here); with it, at
    most as many a segment as there are places (fails on the code before)."""
    index = SearchIndex.open(tmp_path / "ix")
    rng = random.Random(3)
    numbers = list(range(2000))
    rng.shuffle(numbers)
    for start in range(0, 2000, 500):
        index.apply(
            [
                Document(f"ws/{n:05d}.md", f"{n:08x}", "ws", "note", "the same retry budget")
                for n in numbers[start : start + 500]
            ]
        )
    hits = index.search("retry budget", limit=5)
    assert [h.document.key for h in hits] == [f"ws/{n:05d}.md" for n in range(5)]
    read = len(index.reader.stored.keys) + len(index.reader.stored.documents)
    assert read <= 4 * 5 + 5  # four segments, five places each, and the hits
    index.close()


def test_key_ranks_are_the_order_of_the_keys(tied: tuple[SearchIndex, dict[str, Document]]) -> None:
    index, docs = tied
    searcher = index.reader.searcher()
    checked = 0
    for segment, _ in searcher.reader().leaf_readers():
        ranks = key_ranks(segment)
        assert ranks is not None
        live = [n for n in range(segment.doc_count_all()) if not segment.is_deleted(n)]
        keys = {n: segment.stored_fields(n)["key"] for n in range(segment.doc_count_all())}
        assert all(ranks[n] >= 0 for n in keys)
        by_key = sorted(live, key=lambda n: keys[n])
        assert [int(ranks[n]) for n in by_key] == sorted(int(ranks[n]) for n in live)
        assert len({int(ranks[n]) for n in live}) == len(live)
        for n in keys:  # a deleted copy shares its key's place with the key's other copies
            same = [m for m in keys if keys[m] == keys[n]]
            assert len({int(ranks[m]) for m in same}) == 1
        checked += len(live)
    assert checked == len(docs)
    assert set(index.reader.stored.ranks) <= {
        segment_id(s) for s, _ in searcher.reader().leaf_readers()
    }


def test_key_ranks_read_in_steps_are_the_ranks_read_at_once(
    tied: tuple[SearchIndex, dict[str, Document]],
) -> None:
    """The warm-up reads a large segment's key ranks a step at a time (key_rank_steps),
    pausing after each `every` keys: the same array as key_ranks reads at once."""
    index, _ = tied
    for segment, _ in index.reader.searcher().reader().leaf_readers():
        steps = key_rank_steps(segment, every=7)
        paused = 0
        while True:
            try:
                next(steps)
            except StopIteration as done:
                ranks = done.value
                break
            paused += 1
        assert (
            paused
            == len({segment.stored_fields(n)["key"] for n in range(segment.doc_count_all())}) // 7
        )
        assert ranks == key_ranks(segment)
