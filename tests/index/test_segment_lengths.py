"""The live field lengths BM25 averages over, kept per segment across index versions (in
memory, and in the entity table for the next process): the same sums as counting every
segment again, through adds, replacements, deletions and merges."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from memstore.index import Document, SearchIndex
from memstore.index import reader as reader_module
from memstore.index.reader import SEGMENT_LENGTHS
from memstore.index.scoring import segment_id
from tests.index.test_scoring import live_field_lengths

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


def test_a_new_process_sums_only_the_segments_the_last_version_did_not_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    writer = SearchIndex.open(tmp_path / "ix")
    keys: list[str] = []
    summed: list[str] = []
    real = reader_module.segment_field_lengths

    def counting(segment: Any, **kwargs: Any) -> dict[str, int]:
        summed.append(segment_id(segment))
        return real(segment, **kwargs)

    monkeypatch.setattr(reader_module, "segment_field_lengths", counting)
    before: set[tuple[str, int]] = set()
    for commit in range(12):  # each commit a new version; each version read by a new reader
        n = len(keys) + commit
        gone = [keys.pop(0)] if commit % 4 == 3 else []
        writer.apply([_doc(rng, n)], gone)
        keys.append(f"ws/{n}.md")
        fresh = SearchIndex.open(tmp_path / "ix")  # what a new process opens
        searcher = fresh.reader.searcher()
        reader = searcher.reader()
        assert fresh.reader._lengths(searcher) == live_field_lengths(reader)
        now = {
            (segment_id(s), len(s.deleted_docs_set) if s.has_deletions() else 0)
            for s, _ in reader.leaf_readers()
            if s.doc_count_all()
        }
        # only a new segment, or one that lost a document since, is summed again
        assert sorted(summed) == sorted(segment for segment, _ in now - before)
        before = now
        summed.clear()
        fresh.close()
    writer.close()


def test_a_garbled_row_of_segment_lengths_is_ignored(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    index.apply([_doc(random.Random(1), n) for n in range(5)])
    index._table.replace_meta((SEGMENT_LENGTHS, SEGMENT_LENGTHS, "x:y:z;a:1:2;;b:2:3,4,5"))
    fresh = SearchIndex.open(tmp_path / "ix")
    searcher = fresh.reader.searcher()
    assert fresh.reader._lengths(searcher) == live_field_lengths(searcher.reader())
    fresh.close()
    index.close()
