"""The live field lengths BM25 averages over, kept per segment across index versions: the
same sums as counting every segment again, through adds, replacements, deletions and merges."""

from __future__ import annotations

import random
from pathlib import Path

from memstore.index import Document, SearchIndex
from memstore.index.scoring import live_field_lengths

WORDS = ["nginx", "upload", "deploy", "kafka", "redis", "retry", "queue", "worker", "token"]


def _doc(rng: random.Random, n: int) -> Document:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 30)))
    keywords = tuple(sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 3))}))
    return Document(f"ws/{n}.md", f"{n:08x}", "ws", "note", body, keywords)


def test_lengths_kept_per_segment_match_a_full_count_through_many_commits(
    tmp_path: Path,
) -> None:
    rng = random.Random(11)
    index = SearchIndex.open(tmp_path / "ix")
    keys: list[str] = []
    for commit in range(40):  # one document a commit, as adds make them: tiers merge
        n = len(keys) + commit
        replaced = [] if commit % 3 else [_doc(rng, int(k[3:-3])) for k in keys[-2:]]
        gone = [keys.pop(rng.randrange(len(keys)))] if commit % 7 == 6 and keys else []
        index.apply([_doc(rng, n), *replaced], gone)
        keys.append(f"ws/{n}.md")
        searcher = index.reader.searcher()
        assert index.reader._live_lengths(searcher.reader()) == live_field_lengths(
            searcher.reader()
        )
        # what a search averages over: the kept sums, for this version
        assert index.reader._lengths(searcher) == live_field_lengths(searcher.reader())
    segments = index.segment_count()
    index.compact()
    searcher = index.reader.searcher()
    assert segments > 1 and index.segment_count() == 1
    assert index.reader._live_lengths(searcher.reader()) == live_field_lengths(searcher.reader())
    index.close()
