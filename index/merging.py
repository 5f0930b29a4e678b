"""Large segments merged by tiers: built by a helper process, adopted in a short commit.

A vault indexed in chunks (a sync's catch-up of a million memories: ~42 segments of
~24,000) keeps every segment for good: commits merge only segments of up to MERGE_MAX_DOCS
(index/engine.py), and a merge under the index's write lock rewrites ~1,500 documents a
second, so merging large segments there would keep writers out for minutes. Yet a search
pays per segment and per word (term-table look-ups, block headers, partial blocks).

Here LARGE_TIER segments of one tier (sizes a power of LARGE_TIER apart) become one, up to
LARGE_MERGE_DOCS live documents: a million built in chunks converges to ~7 segments, each
document rewritten once a tier. The merged segment is written from the chosen segments'
stored fields, as a rebuild writes it (the same postings and lengths), in a helper process
(readers and writers go on meanwhile, without sharing this process's interpreter); then,
under the write lock, the documents deleted from the chosen segments since are deleted
from it by position and one commit swaps it in. Scores are over live documents
(index/scoring.py), so searches return the same before and after.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.reading import SegmentReader

from . import _patches, flat
from .engine import MERGE_MAX_DOCS  # smaller segments are the commits' to merge
from .parts import Helper, Stopper, serve, while_parent_lives
from .schema import Document, Part, parse_stored
from .writer import write_part

log = logging.getLogger(__name__)
LARGE_TIER = 6  # large segments merge six of a tier at a time
LARGE_MERGE_DOCS = 250_000  # a merge makes a segment of at most this many live documents
MERGE_CODE = f"from {__name__} import serve_merge; serve_merge()"


def plan(sizes: list[tuple[str, int]]) -> list[str]:
    """Return the ids of the segments to merge next, smallest first (none: nothing to do),
    given each segment's (id, live documents): the smallest tier holding LARGE_TIER
    segments above MERGE_MAX_DOCS, as many of its smallest as fit in LARGE_MERGE_DOCS."""
    tiers: dict[int, list[tuple[int, str]]] = {}
    for sid, live in sizes:
        if live > MERGE_MAX_DOCS:
            tiers.setdefault(tier(live), []).append((live, sid))
    for level in sorted(tiers):
        members = sorted(tiers[level])
        if len(members) < LARGE_TIER:
            continue
        chosen: list[str] = []
        total = 0
        for live, sid in members[:LARGE_TIER]:
            if total + live > LARGE_MERGE_DOCS:
                break
            total += live
            chosen.append(sid)
        if len(chosen) >= 2:
            return chosen
    return []


def tier(count: int) -> int:
    """Return how many times LARGE_TIER goes into `count` (0 below LARGE_TIER)."""
    level = 0
    while count >= LARGE_TIER:
        count //= LARGE_TIER
        level += 1
    return level


def segment_sizes(ix: Any) -> list[tuple[str, int]]:
    """Return each non-empty segment's (id, live documents) in a Whoosh index."""
    return [(_sid(s), s.doc_count()) for s in ix._segments() if s.doc_count_all()]


class Merged:
    """A merged segment written in `folder` and where its documents came from: for each
    chosen segment (in order), its id and the documents deleted in it when it was read."""

    def __init__(self, folder: Path, segment: Any, sources: list[tuple[str, list[int]]]):
        self.folder = folder
        self.segment = segment
        self.sources = sources

    def part(self, segments: dict[str, Any]) -> Part | None:
        """Return the merged segment as a part replacing `segments` (the index's current
        ones by id), with the documents deleted from them since marked deleted in it too;
        None if a chosen segment is gone (another merge took it)."""
        if any(sid not in segments for sid, _ in self.sources):
            return None
        base = 0
        for sid, deleted in self.sources:
            source = segments[sid]
            before = set(deleted)
            live = [n for n in range(source.doc_count_all()) if n not in before]
            position = {n: base + i for i, n in enumerate(live)}
            for n in source.deleted_docs() if source.has_deletions() else ():
                if n not in before:
                    self.segment.delete_document(position[n])
            base += len(live)
        return Part(self.folder, self.segment, ())


def build(
    root: Path, chosen: list[str], folder: Path, stopper: Stopper | None = None
) -> Merged | None:
    """Write the live documents of the segments `chosen` (ids) of the Whoosh index in
    `root`/whoosh into one segment under `folder`, in a helper process (in this one if
    the helper cannot start); None if a chosen segment is gone, the helper failed or
    `stopper` stopped it (then `folder` is removed)."""
    clear_stale(folder.parent)
    shutil.rmtree(folder, ignore_errors=True)
    stopper = stopper or Stopper()
    if stopper.is_stopped:
        return None
    helper = Helper.start(MERGE_CODE, [(str(root / "whoosh"), chosen, str(folder))])
    if helper is None:
        return write_merged(root / "whoosh", chosen, folder)
    found = None
    try:
        with stopper.running(helper):
            found = helper.receive()
            if found is None or not helper.succeeded() or stopper.is_stopped:
                found = None
                return None
            return Merged(folder, *found)
    finally:
        helper.stop()
        if found is None:
            shutil.rmtree(folder, ignore_errors=True)


def clear_stale(root: Path) -> None:
    """Remove the `merging-<pid>` folders under `root` whose process is gone (killed while
    a helper wrote a merged segment)."""
    for folder in root.glob("merging-*"):
        pid = folder.name.removeprefix("merging-")
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def write_merged(whoosh_dir: Path, chosen: list[str], folder: Path) -> Merged | None:
    """Write the chosen segments' live documents into one segment under `folder`."""
    _patches.apply()
    ix = whoosh_index.open_dir(str(whoosh_dir))
    try:
        by_id = {_sid(s): s for s in ix._segments()}
        if any(sid not in by_id for sid in chosen):
            return None
        segments = [by_id[sid] for sid in chosen]
        sources = [
            (sid, sorted(s.deleted_docs()) if s.has_deletions() else [])
            for sid, s in zip(chosen, segments, strict=True)
        ]
        total = sum(s.doc_count() for s in segments)
        documents = while_parent_lives(_documents(ix, segments))
        segment = write_part(folder, documents, 256 if total <= 10_000 else 1024)
    finally:
        ix.close()
    if segment is not None:  # its flat posting lists, adopted with it (index/flat.py)
        try:
            flat.write_segment(folder, segment)
        except OSError as err:  # a cache: the merge stands without it (the next tidy retries)
            log.warning("merged segment without its flat posting lists: %s", err)
    return None if segment is None else Merged(folder, segment, sources)


def _documents(ix: Any, segments: list[Any]) -> Iterator[Document]:
    """Yield the live documents of `segments` in order, as their stored fields hold them."""
    for segment in segments:
        reader = SegmentReader(ix.storage, ix.schema, segment)
        try:
            for number in reader.all_doc_ids():  # the live ones, ascending
                yield parse_stored(reader.stored_fields(number))
        finally:
            reader.close()


def serve_merge() -> None:
    """Run as a helper process: merge the segments named on stdin, answer the segment and
    its sources (None if a segment was gone)."""

    def work(receive: Callable[[], Any], answer: Callable[[object], None]) -> None:
        whoosh_dir, chosen, folder = receive()
        merged = write_merged(Path(whoosh_dir), chosen, Path(folder))
        answer(None if merged is None else (merged.segment, merged.sources))

    serve(work)


def _sid(segment: Any) -> str:
    return str(segment.segment_id())
