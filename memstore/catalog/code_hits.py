"""Code hits: distinct chunks from a code search, ranked beside memories' hits."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import PurePosixPath

from memstore.core.model import Hit
from memstore.index import IndexHit

KIND = "code"
SAME_TEXT = 0.85  # word-shingle Jaccard at which two chunks count as the same code
RRF_K = 60  # reciprocal rank fusion's usual constant: rank 1 and rank 2 stay close


def distinct(hits: Sequence[Hit], limit: int = 0) -> list[Hit]:
    """Keep each hit unless one ranked above it is the same code: byte-identical text, an
    overlapping line range of the same file, or near-identical text (word 3-shingles with
    Jaccard ≥ SAME_TEXT): a budget spent on one function twice tells the agent nothing.

    Stops once `limit` (0: no limit) are kept: comparing the hits no one will see was a
    fifth of a first-time code recall.
    """
    kept: list[Hit] = []
    seen: list[tuple[str, int, int, str, frozenset[str]]] = []
    for hit in hits:
        if limit and len(kept) >= limit:
            break
        path, start, end = _span(hit.path)
        body = hit.content.partition("\n")[2]
        shingles = _shingles(body)
        if any(
            body == other_body
            or (path == other and start <= other_end and other_start <= end)
            or _near_identical(shingles, other_shingles)
            for other, other_start, other_end, other_body, other_shingles in seen
        ):
            continue
        kept.append(hit)
        seen.append((path, start, end, body, shingles))
    return kept


_TEST_FOLDERS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs"})
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures"})


def _is_test(ref: str) -> bool:
    """Say whether a chunk is in a test file: a test folder, or a name as test runners
    find them (test_x.py, x_test.go, x.test.ts, x.spec.js, XTest.java)."""
    path = PurePosixPath(ref.rpartition(":")[0] or ref)
    if _TEST_FOLDERS & {part.lower() for part in path.parts[:-1]}:
        return True
    stem = path.name.split(".", 1)[0]
    return (
        stem.startswith("test_")
        or stem.endswith(("_test", "Test", "Tests"))
        or ".test." in path.name
        or ".spec." in path.name
    )


def _asks_for_tests(text: str) -> bool:
    return bool(_TEST_WORDS & {word.lower().strip("?.,!") for word in text.split()})


def _span(ref: str) -> tuple[str, int, int]:
    path, _, lines = ref.rpartition(":")
    first, _, last = lines.partition("-")
    try:
        return path, int(first), int(last)
    except ValueError:
        return ref, 0, -1


@functools.lru_cache(maxsize=4096)  # a resident index meets the same chunks again and again
def _shingles(text: str) -> frozenset[str]:
    words = text.split()
    return frozenset(" ".join(words[i : i + 3]) for i in range(max(len(words) - 2, 1)))


def _near_identical(a: frozenset[str], b: frozenset[str]) -> bool:
    """Say whether the Jaccard index of `a` and `b` is at least SAME_TEXT, without building
    their union: it is at most the smaller size over the larger, so most pairs of chunks
    are told apart by their sizes alone."""
    small, large = sorted((len(a), len(b)))
    if not small or small < SAME_TEXT * large:
        return False
    shared = len(a & b)
    return shared >= SAME_TEXT * (small + large - shared)


def fuse(memories: Sequence[Hit], code: Sequence[Hit], k: int) -> list[Hit]:
    """Rank memory and code hits together: memories holding every query word first, then
    the rest by reciprocal rank, 1 / (RRF_K + rank) in its own list (the two lists' BM25
    scores come from different indexes and do not compare), a memory before a chunk on a
    tie. The code keeps its own order (`CodeIndex.find`: a chunk lacking a word of the
    question is often the answer; moving those holding every word up put the right one
    first on 34 of bench_code's 60 standard-library questions, not 37)."""
    ranked = [
        (side == 1 or hit.weak, -1 / (RRF_K + rank), side, rank, hit)
        for side, hits in enumerate((memories, code))
        for rank, hit in enumerate(hits, 1)
    ]
    ranked.sort(key=lambda row: row[:4])
    return [row[4] for row in ranked[:k]]


def _hit(found: IndexHit) -> Hit:
    document = found.document
    ref, _, root = document.source.partition("\n")
    coverage = 1.0 if found.coverage is None else found.coverage
    # the label is "<ref> <kind>[ <name>]": a hit shows the path and name, not the prose
    name = document.content.partition("\n")[0].removeprefix(f"{ref} ").partition(" ")[2]
    return Hit(
        id=document.id,
        workspace=document.workspace,
        kind=KIND,
        path=ref,
        content=document.content,
        keywords=tuple(k for k in (ref.rpartition(":")[0], name) if k),
        source=root,
        created="",
        seen=1,
        score=found.score,
        weak=coverage < 1.0,
        coverage=coverage,
        view="lexical" if coverage >= 1.0 else "any-word",
    )


def ranked(found: Sequence[IndexHit], text: str, limit: int) -> list[Hit]:
    """Return a code search's hits for `text`: tests after code (unless it asks for tests),
    near-duplicates dropped, at most `limit`."""
    hits = [_hit(hit) for hit in found]
    if not _asks_for_tests(text):  # "where do we …" wants the code, not its tests
        hits.sort(key=lambda hit: _is_test(hit.path))  # stable: ranks kept
    return distinct(hits, limit)
