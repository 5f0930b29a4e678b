"""The term writer writes the very segment files Whoosh's own writer writes from the same documents.

Both write their posting blocks through `memstore.index._patches`'s block writer (installed here as
opening an index installs it), so what is compared is how postings are gathered and handed over.
"""

from __future__ import annotations

import functools
import os
import random
import zlib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from whoosh import index as whoosh_index
from whoosh.writing import SegmentWriter

from memstore.index import Document, _patches
from memstore.index.bulk import TermWriter
from memstore.index.engine import _merge_small_segments
from memstore.index.schema import make_schema, render_fields

WORDS = ["nginx", "upload", "deploy", "kafka", "redis", "retries", "retry", "Ünïcode", "über"]
WORDS += ["snake_case_name", "camelCaseName", "v2.3.1", "nginx.conf", "the", "a", "42"]


def _documents(rng: random.Random, count: int, start: int = 0) -> list[Document]:
    docs = []
    for n in range(start, start + count):
        words = rng.choices(WORDS, k=rng.randint(0, 40))
        docs.append(
            Document(
                key=f"ws/m-{n}.md",
                id=f"m{n}",
                workspace=rng.choice(["ws", "infra"]),
                kind="note",
                content=" ".join(words),
                keywords=tuple(rng.sample(WORDS, rng.randint(0, 3))),
                source="cli",
                created="2026-12-04T00:00:00Z",
                seen=rng.randint(1, 5),
                hash=f"{zlib.crc32(n.to_bytes(4, 'big')):08x}",
            )
        )
    return docs


def _segment_files(folder: Path) -> dict[str, bytes]:
    """Return each file of the index's newest segment by its extension (names are random)."""
    ix = whoosh_index.open_dir(str(folder))
    newest = ix._segments()[-1].segment_id()
    ix.close()
    return {
        path.name.removeprefix(newest): path.read_bytes()
        for path in folder.iterdir()
        if path.name.startswith(newest)
    }


def _write(folder: Path, batches: list[list[Document]], writer: Any, deletes: int = 0) -> None:
    """Commit each batch with `writer` (later batches replace `deletes` earlier documents
    and merge the small segments before them, as `SearchIndex.apply` does)."""
    _patches.apply()  # Whoosh's own writer too writes its blocks as Whoosh meant
    folder.mkdir()
    ix = whoosh_index.create_in(str(folder), make_schema())
    for number, batch in enumerate(batches):
        w: Any = writer(ix, compound=False)
        for doc in batch[:deletes] if number else ():
            w.delete_by_term("key", doc.key)
        for doc in batch:
            w.add_document(**render_fields(doc))
        w.commit(mergetype=_merge_small_segments)
    ix.close()


def test_a_fresh_segment_is_byte_for_byte_whooshs(tmp_path: Path) -> None:
    # 700 documents: the common words hold more than one 128-posting block.
    docs = _documents(random.Random(7), 700)
    _write(tmp_path / "whoosh", [docs], SegmentWriter)
    _write(tmp_path / "term", [docs], TermWriter)
    theirs, ours = _segment_files(tmp_path / "whoosh"), _segment_files(tmp_path / "term")
    assert sorted(ours) == sorted(theirs) and len(ours) >= 4
    assert {ext for ext in ours if ours[ext] != theirs[ext]} == set()


def test_a_commit_with_its_temporary_files_in_memory_writes_the_same_bytes_and_no_folder(
    tmp_path: Path, monkeypatch: Any
) -> None:
    made: list[str] = []
    real_makedirs = os.makedirs

    def makedirs(path: Any, *args: Any, **kwargs: Any) -> None:
        made.append(str(path))
        real_makedirs(path, *args, **kwargs)

    monkeypatch.setattr(os, "makedirs", makedirs)
    rng = random.Random(11)
    batches = [_documents(rng, 1, n) for n in range(8)]  # one a commit, merged by tiers too
    _write(tmp_path / "whoosh", batches, SegmentWriter)
    _write(tmp_path / "term", batches, functools.partial(TermWriter, temp_in_memory=True))
    assert _segment_files(tmp_path / "term") == _segment_files(tmp_path / "whoosh")
    assert any(path.startswith(str(tmp_path / "whoosh")) for path in made)  # Whoosh's own
    assert [path for path in made if path.startswith(str(tmp_path / "term"))] == []


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32), sizes=st.lists(st.integers(1, 60), min_size=1, max_size=4))
def test_merging_segments_with_deletions_writes_whooshs_bytes(
    tmp_path_factory: Any, seed: int, sizes: list[int]
) -> None:
    rng = random.Random(seed)
    batches: list[list[Document]] = []
    start = 0
    for size in sizes:
        batch = _documents(rng, size, start)
        start += size
        # A later batch also brings new versions of earlier documents (an update).
        earlier = [doc for b in batches for doc in b]
        replaced = earlier[: rng.randint(0, len(earlier))]
        batches.append(replaced + batch)
    root = tmp_path_factory.mktemp("merge")
    deletes = len(batches[-1]) - sizes[-1]
    _write(root / "whoosh", batches, SegmentWriter, deletes)
    _write(root / "term", batches, TermWriter, deletes)
    assert _segment_files(root / "term") == _segment_files(root / "whoosh")
