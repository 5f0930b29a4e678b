"""Flat posting lists beside large segments (index/flat.py): the same lists, blocks and scores
as Whoosh's own, written with a merge or a part and for an index older than them, and never
a wrong answer from a sidecar that is missing, torn, of another format or another segment's."""

from __future__ import annotations

import marshal
import os
import random
import stat
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.index import Document, SearchIndex, engine, flat, merging, postings, pruning
from memstore.index.scoring import TermQuery
from tests.index.test_pruning import TERMS, WORKSPACES, _run
from tests.index.test_pruning import _doc as _zipf_doc
from tests.index.test_scoring import write_layers

QUERIES = ["deploy cache", "timeout retry queue", "once rare", "kafka nginx redis", "worker"]


@pytest.fixture(autouse=True)
def small_sidecars(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of 100 documents and lists of 16 postings count as large here."""
    monkeypatch.setattr(flat, "MIN_DOCS", 100)
    monkeypatch.setattr(flat, "MIN_POSTINGS", 16)


def _build(folder: Path, seed: int = 5) -> SearchIndex:
    """Four segments of ~300 documents, then small ones with replacements and deletions."""
    index = SearchIndex.open(folder)
    rng = random.Random(seed)
    write_layers(index, rng, _zipf_doc, batches=4, size=300, replace=0, delete=0)
    write_layers(index, rng, _zipf_doc, batches=3, size=20, replace=30, delete=25)
    return index


def _whoosh(index: SearchIndex) -> Path:
    return index.root / "whoosh"


def _sidecars(index: SearchIndex) -> list[Path]:
    return sorted(_whoosh(index).glob(f"*{flat.SUFFIX}"))


def _search(index: SearchIndex) -> list[Any]:
    return [
        [(h.document.key, h.score.hex()) for h in index.search(q, any_term=any_, limit=12)]
        for q in QUERIES
        for any_ in (False, True)
    ]


def _reopened(index: SearchIndex) -> SearchIndex:
    """The same index opened afresh (no reader, cache or sidecar kept from before)."""
    index.close()
    return SearchIndex.open(index.root, create=False)


@pytest.fixture
def flat_index(tmp_path: Path) -> Iterator[SearchIndex]:
    index = _build(tmp_path / "ix")
    assert flat.complete(_whoosh(index)) and len(_sidecars(index)) == 4
    index = _reopened(index)
    yield index
    index.close()


def test_sidecar_lists_and_blocks_are_whooshs_own(flat_index: SearchIndex) -> None:
    reader = flat_index.reader.searcher().reader()
    rng = random.Random(3)
    compared = 0
    for segment, _ in reader.leaf_readers():
        sidecar = flat.of(segment)
        if segment.doc_count_all() < flat.MIN_DOCS:
            assert sidecar is None
            continue
        assert sidecar is not None and sidecar.directory
        for (fieldname, text), _ in sidecar.directory.items():
            ids, weights = postings.read_postings(segment, fieldname, text)
            assert (ids, weights) == postings.whoosh_postings(segment, fieldname, text)
            assert weights.typecode == "f"
            mine = postings.read_blocks(segment, fieldname, text)
            theirs = postings.whoosh_blocks(segment, fieldname, text)
            assert isinstance(mine, flat.FlatBlocks) and theirs is not None
            assert (mine.last, mine.heaviest, mine.shortest, mine.postings) == (
                theirs.last,
                theirs.heaviest,
                theirs.shortest,
                theirs.postings,
            )
            for _ in range(3):
                which = sorted(
                    rng.sample(range(len(theirs.last)), rng.randint(1, len(theirs.last)))
                )
                assert mine.read(which) == theirs.read(which)
            compared += 1
    assert compared >= 20  # lists of several blocks were compared


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=5),
    require_all=st.booleans(),
    allowed=st.one_of(st.none(), st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True)),
    limit=st.integers(1, 45),
    pruned=st.booleans(),
)
def test_scores_from_sidecars_are_whooshs(
    flat_index: SearchIndex,
    monkeypatch: pytest.MonkeyPatch,
    terms: list[str],
    require_all: bool,
    allowed: list[str] | None,
    limit: int,
    pruned: bool,
) -> None:
    query = TermQuery(tuple(terms), require_all=require_all)
    monkeypatch.setattr(pruning, "LONG_POSTINGS", 0 if pruned else 10**9)
    with monkeypatch.context() as patch:
        patch.setattr(flat, "of", lambda segment: None)  # Whoosh's lists only
        expected = _run(flat_index, query, allowed, limit, True)
    assert _run(flat_index, query, allowed, limit, True) == expected


def test_an_index_older_than_sidecars_answers_the_same_and_gets_them(tmp_path: Path) -> None:
    index = _build(tmp_path / "ix")
    assert _sidecars(index) == []  # commits write none: an index of before
    before = _search(index)
    assert index.complete_flat() and len(_sidecars(index)) == 4
    assert index.complete_flat() == []  # nothing left to write, no helper started
    # owner-only, as the segments' files: the directory holds the memories' words
    assert {stat.S_IMODE(p.stat().st_mode) for p in _sidecars(index)} == {0o600}
    index = _reopened(index)
    assert all(flat.of(s) is not None for s in _large(index))
    assert _search(index) == before
    index.close()


def _large(index: SearchIndex) -> list[Any]:
    reader = index.reader.searcher().reader()
    return [s for s, _ in reader.leaf_readers() if s.doc_count_all() >= flat.MIN_DOCS]


def _tear_truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _tear_directory(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-len(flat.END) - 3] ^= 0xFF  # a byte of the directory: its checksum fails
    path.write_bytes(bytes(data))


def _tear_format(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[8] = flat.FORMAT + 1  # a later format this code does not read
    path.write_bytes(bytes(data))


def _another_segments(path: Path) -> None:
    others = sorted(p for p in path.parent.glob(f"*{flat.SUFFIX}") if p != path)
    path.write_bytes(others[0].read_bytes())


@pytest.mark.parametrize(
    "tear", [_tear_truncated, _tear_directory, _tear_format, _another_segments]
)
def test_a_torn_sidecar_is_never_read_and_is_written_again(
    flat_index: SearchIndex, tear: Any
) -> None:
    before = _search(flat_index)
    torn = _sidecars(flat_index)[1]
    tear(torn)
    index = _reopened(flat_index)
    torn_sid = torn.name.removesuffix(flat.SUFFIX)
    segments = {str(s._segid): s for s in _large(index)}
    assert flat.of(segments[torn_sid]) is None  # Whoosh's lists for that segment
    assert sum(flat.of(s) is not None for s in segments.values()) == 3
    assert _search(index) == before
    assert flat.complete(_whoosh(index)) == [torn_sid]
    index = _reopened(index)
    assert all(flat.of(s) is not None for s in _large(index))
    assert _search(index) == before
    index.close()


def test_a_writer_killed_midway_leaves_no_sidecar_and_its_file_goes(tmp_path: Path) -> None:
    index = _build(tmp_path / "ix")
    index.close()
    whoosh_dir = tmp_path / "ix" / "whoosh"
    # a writer killed before its rename: only its hidden temporary file is left
    code = (
        "import os, sys; from pathlib import Path; from memstore.index import flat\n"
        "flat.MIN_DOCS, flat.MIN_POSTINGS = 100, 16\n"
        "flat.os.replace = lambda *a: os._exit(9)\n"
        f"flat.complete(Path({str(whoosh_dir)!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], timeout=120, check=False)
    assert done.returncode == 9
    left = list(whoosh_dir.glob(f".*{flat.SUFFIX}.tmp-*"))
    assert len(left) == 1 and not list(whoosh_dir.glob(f"*{flat.SUFFIX}"))
    index = SearchIndex.open(tmp_path / "ix", create=False)
    before = _search(index)
    assert all(flat.of(s) is None for s in _large(index))
    assert len(flat.complete(whoosh_dir)) == 4  # the dead writer's file removed first
    assert not list(whoosh_dir.glob(f".*{flat.SUFFIX}.tmp-*"))
    index = _reopened(index)
    assert _search(index) == before
    index.close()


def test_a_live_writers_temporary_file_is_left_alone(tmp_path: Path) -> None:
    mine = tmp_path / f".MAIN_x{flat.SUFFIX}.tmp-{os.getpid()}"
    gone = tmp_path / f".MAIN_y{flat.SUFFIX}.tmp-{2**22 + 12345}"
    mine.write_bytes(b"x")
    gone.write_bytes(b"x")
    flat.clear_stale(tmp_path)
    assert mine.exists() and not gone.exists()


def test_a_merge_writes_its_segments_sidecar_and_whoosh_removes_the_old_ones(
    flat_index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "MERGE_MAX_DOCS", 10)
    monkeypatch.setattr(merging, "MERGE_MAX_DOCS", 10)
    monkeypatch.setattr(merging, "LARGE_TIER", 4)
    before = _search(flat_index)
    old = {p.name for p in _sidecars(flat_index)}
    chosen = flat_index.merge_plan()
    assert len(chosen) == 4
    built = flat_index.build_merge(chosen)
    assert built is not None and list(built.folder.glob(f"*{flat.SUFFIX}"))
    assert flat_index.swap_in(built)
    index = _reopened(flat_index)
    now = {p.name for p in _sidecars(index)}
    assert len(now) == 1 and not now & old  # the merged segment's; the chosen ones' removed
    (merged,) = [s for s in _large(index) if s.doc_count_all() > 1000]
    assert flat.of(merged) is not None
    assert _search(index) == before
    index.close()


def test_a_small_segment_gets_no_sidecar(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    rng = random.Random(1)
    index.apply([_zipf_doc(rng, n) for n in range(50)])
    assert index.complete_flat() == [] and _sidecars(index) == []
    index.close()


def test_a_rebuilds_part_gets_no_sidecar_until_completed(tmp_path: Path) -> None:
    from memstore.index import write_part

    rng = random.Random(2)
    docs: list[Document] = [_zipf_doc(rng, n) for n in range(150)]
    segment = write_part(tmp_path / "part", iter(docs))  # a rebuild's CPU stays as it was
    assert segment is not None
    assert not list((tmp_path / "part").glob(f"*{flat.SUFFIX}"))
    assert flat.write_segment(tmp_path / "part", segment) == (
        tmp_path / "part" / f"{segment.segment_id()}{flat.SUFFIX}"
    )


def _rewrite(path: Path, directory: dict[Any, Any], cut: int | None = None) -> None:
    """Write `path` again with `directory` (and its postings cut at `cut`): a header, an
    end and a checksum that all check, whatever the entries say."""
    data = path.read_bytes()
    head = flat._HEADER.unpack_from(data, 0)
    dir_at = head[3] if cut is None else min(cut, head[3])
    raw = marshal.dumps(directory)
    total = dir_at + len(raw) + len(flat.END)
    header = flat._HEADER.pack(
        head[0], head[1], head[2], dir_at, len(raw), zlib.crc32(raw), total, head[7]
    )
    path.write_bytes(header + data[flat._HEADER.size : dir_at] + raw + flat.END)


_CHANGES = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5), st.sampled_from([-128, -8, -4, -1, 1, 4, 8, 128])),
    st.tuples(st.just("set"), st.integers(0, 5), st.sampled_from([0, -1, -2, 7, 2**31, 10**12])),
    st.tuples(st.just("weight"), st.just(3), st.sampled_from([0.0, 2.0, -1.0, 1e40, float("nan")])),
    st.tuples(st.just("swap"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("cut"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("junk"), st.sampled_from([None, "x", (1, 2), (0.5,) * 6]), st.just(0)),
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    which=st.integers(0, 3),
    entries=st.integers(0, 10**6),
    changes=st.lists(_CHANGES, min_size=1, max_size=3),
)
def test_a_sidecar_of_wrong_numbers_is_never_read_wrong(
    flat_index: SearchIndex, which: int, entries: int, changes: list[Any]
) -> None:
    """A directory whose checksum checks but whose entries are wrong (a writer's bug, a file
    made by hand, a cut file given a header that fits): the same answers as Whoosh's lists."""
    path = _sidecars(flat_index)[which]
    original = path.read_bytes()
    segments = {str(s._segid): s for s in _large(flat_index)}
    segment = segments[path.name.removesuffix(flat.SUFFIX)]
    try:
        found = flat.load(path, str(segment._segid), segment.doc_count_all())
        assert found is not None
        directory = dict(found.directory)
        keys = sorted(directory)
        touched = set()
        for kind, slot, value in changes:
            key = keys[entries % len(keys)]
            touched.add(key)
            if kind == "cut":
                _rewrite(path, directory, cut=flat._HEADER.size + slot % len(original))
                break
            if kind == "swap":
                other = keys[slot % len(keys)]
                touched.add(other)
                directory[key], directory[other] = directory[other], directory[key]
            elif kind == "junk":
                directory[key] = slot
            elif isinstance(directory[key], tuple) and len(directory[key]) == 6:
                entry = list(directory[key])
                if kind == "weight":
                    entry[3] = value
                elif slot != 3:
                    entry[slot] = entry[slot] + value if kind == "add" else value
                directory[key] = tuple(entry)
        else:
            _rewrite(path, directory)
        segment.__dict__.pop("_memstore_flat", None)  # opened afresh, as a new process would
        for key in sorted(touched):
            assert postings.read_postings(segment, *key) == postings.whoosh_postings(segment, *key)
            mine = postings.read_blocks(segment, *key)
            theirs = postings.whoosh_blocks(segment, *key)
            assert mine is not None and theirs is not None
            assert (mine.last, mine.heaviest, mine.shortest, mine.postings) == (
                theirs.last, theirs.heaviest, theirs.shortest, theirs.postings,
            )  # fmt: skip
            every = list(range(len(theirs.last)))
            assert mine.read(every) == theirs.read(every)
        for _, text in sorted(touched)[:2]:
            query = TermQuery((text, "worker"), require_all=False)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(flat, "of", lambda segment: None)
                expected = _run(flat_index, query, None, 20, True)
            assert _run(flat_index, query, None, 20, True) == expected
    finally:
        path.write_bytes(original)
        segment.__dict__.pop("_memstore_flat", None)
