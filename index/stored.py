"""The stored documents a reader keeps: hits' documents and the keys of tied ones, by segment.

A common word ties many documents at the last place, each read (~40 µs) only for its key,
so tied ones' keys (~120 B each) are kept apart from hits' documents (~1.4 KB each) and do
not push them out (docs/benchmarks.md section 7, "Sixth session"). A segment's documents
never change and a deleted one is never asked for, so nothing kept goes stale; what
belonged to a segment merged away is forgotten at the next searcher (`reset`).
"""

from __future__ import annotations

import heapq
import mmap
import struct
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Generator, Iterable, Iterator
from typing import Any

from whoosh.codec.whoosh3 import W3TermInfo

from .schema import Document, parse_stored
from .scoring import read_postings, segment_id

CACHE_DOCUMENTS = 4_000
CACHE_KEYS = 16_000
# Above this many documents tied at the last place, those of a segment are narrowed by their
# keys' order in its key term table before any is read (`first`): at 1,000,000 memories a
# common word tied ~10× the documents it ties at 100,000, each read for its key.
RANKED_TIES = 64
KEY_FIELD = "key"
# A long-lived process reads the key ranks of segments above this many documents ahead of
# the first search that needs them (`rank_steps`: ~1 µs a key with the term table's pages
# cached, 0.15 s of CPU for a merged segment of 143,000 at a million memories; ~0.9 s
# measured on a loaded machine), RANK_STEP keys a step (~25 ms).
RANKS_AHEAD_MIN = 500
RANK_STEP = 25_000
# W3TermInfo's packed head ("!BfIBBfII"): the document frequency at byte 5, the first and
# last document at bytes 15 and 19
_DF_AND_IDS = struct.Struct("!5xI6xII")
mmap_type = mmap.mmap
_LENGTHS = struct.Struct("!ii")  # whoosh.filedb.filetables: a record's key and data lengths

Place = tuple[str, int]  # (segment id, document number in the segment)


class StoredCache:
    """Hits' documents and tied documents' keys of the current searcher, by segment."""

    def __init__(self) -> None:
        self.leaves: list[tuple[int, str]] = []  # (first document number, segment id)
        self.documents: OrderedDict[Place, Document] = OrderedDict()
        self.keys: OrderedDict[Place, str] = OrderedDict()
        self.ranks: dict[str, Any] = {}  # segment id → its documents' key ranks (an array)
        self._live: set[str] = set()  # the segments of the last reset

    def reset(self, leaves: list[tuple[int, str]]) -> None:
        """Take a new searcher's segments; forget what segments no longer live held."""
        self.leaves = leaves
        live = {segment for _, segment in leaves}
        gone_any, self._live = not self._live <= live, live
        if not gone_any:  # segments only added (an add's new version): none held is gone
            return
        for kept in (self.documents, self.keys):
            for gone in [place for place in kept if place[0] not in live]:
                del kept[gone]
        for gone_segment in [sid for sid in self.ranks if sid not in live]:
            del self.ranks[gone_segment]

    def first(
        self, searcher: Any, best: list[tuple[float, int]], limit: int
    ) -> list[tuple[float, int]]:
        """Return the `limit` first of `best` (score, document number) pairs by score
        rounded to six decimals, then key: sorted(best, key=(-round(score, 6), key))[:limit].

        Only the documents tied at the last place need their keys, and of those only the
        ones that can fill its places: where more than RANKED_TIES tie, each segment's are
        first narrowed to as many as there are places by their keys' order in the segment
        (`key_ranks`), so a few keys are read instead of thousands."""
        order = sorted(best, key=lambda p: -round(p[0], 6))
        if len(order) > limit:
            last = round(order[limit - 1][0], 6)
            above = [p for p in order if round(p[0], 6) > last]
            tied = [p for p in order if round(p[0], 6) == last]
            if len(tied) > RANKED_TIES:
                tied = self._narrowed(searcher, tied, limit - len(above))
            order = [*above, *tied]
        return sorted(order, key=lambda p: (-round(p[0], 6), self.key(searcher, p[1])))[:limit]

    def _narrowed(
        self, searcher: Any, tied: list[tuple[float, int]], places: int
    ) -> list[tuple[float, int]]:
        """Return, of each segment's `tied` pairs, the `places` with the first keys (all of
        a segment's where its key term table cannot be read)."""
        by_segment: dict[str, list[tuple[float, int]]] = {}
        for pair in tied:
            by_segment.setdefault(self.place(pair[1])[0], []).append(pair)
        segments: dict[str, Any] = {}
        kept: list[tuple[float, int]] = []
        for sid, pairs in by_segment.items():
            ranks = None
            if len(pairs) > places:
                if not segments:
                    segments = {segment_id(r): r for r, _ in searcher.reader().leaf_readers()}
                ranks = self._ranks(sid, segments.get(sid))
            if ranks is None:
                kept.extend(pairs)
                continue
            order = [ranks[self.place(n)[1]] for _, n in pairs]
            if min(order) < 0:  # a document the key table does not name: read them all
                kept.extend(pairs)
                continue
            chosen = heapq.nsmallest(places, range(len(pairs)), key=order.__getitem__)
            kept.extend(pairs[i] for i in sorted(chosen))
        return kept

    def _ranks(self, sid: str, segment: Any) -> Any:
        if sid in self.ranks:
            return self.ranks[sid]
        if segment is None:
            return None
        found = self.ranks[sid] = key_ranks(segment)
        return found

    def rank_steps(self, searcher: Any) -> Iterator[None]:
        """Read the key ranks of `searcher`'s segments above RANKS_AHEAD_MIN documents that
        are not kept yet, RANK_STEP keys a step (a long-lived process's warm-up: the first
        search with many ties after a merge read a merged segment's itself)."""
        for segment, _ in searcher.reader().leaf_readers():
            sid = segment_id(segment)
            if sid in self.ranks or segment.doc_count_all() <= RANKS_AHEAD_MIN:
                continue
            self.ranks[sid] = yield from key_rank_steps(segment)
            yield

    def ranks_missing(self, searcher: Any) -> bool:
        """Say whether a segment of `searcher` above RANKS_AHEAD_MIN documents has no key
        ranks kept (a merge's or a compaction's new segment, not yet read ahead)."""
        return any(
            segment.doc_count_all() > RANKS_AHEAD_MIN and segment_id(segment) not in self.ranks
            for segment, _ in searcher.reader().leaf_readers()
        )

    def place(self, number: int) -> Place:
        """Return (segment id, number in the segment) of the current searcher's `number`."""
        at = bisect_right(self.leaves, (number, "\uffff")) - 1
        base, segment = self.leaves[at] if at >= 0 else (0, "")
        return segment, number - base

    def key(self, searcher: Any, number: int) -> str:
        """Return the key of stored document `number` (ties at the last place are broken by
        it: hundreds can tie, and only the hits kept are built)."""
        place = self.place(number)
        document = self.documents.get(place)
        if document is not None:
            return document.key
        found = self.keys.get(place)
        if found is not None:
            self.keys.move_to_end(place)
            return found
        found = self.keys[place] = str(searcher.stored_fields(number)["key"])
        if len(self.keys) > CACHE_KEYS:
            self.keys.popitem(last=False)
        return found

    def document(self, searcher: Any, number: int) -> Document:
        """Return the current searcher's stored document `number`, kept."""
        place = self.place(number)
        found = self.documents.get(place)
        if found is not None:
            self.documents.move_to_end(place)
            return found
        found = self.documents[place] = parse_stored(searcher.stored_fields(number))
        if len(self.documents) > CACHE_DOCUMENTS:
            self.documents.popitem(last=False)
        return found


def key_ranks(segment: Any) -> Any:
    """Return each document's place in the order of `segment`'s keys (an int array, -1 for a
    document no key names; deleted documents share their key's place), or None where the
    segment is not a whoosh3 one.

    The key field's terms are the keys whole (an ID field), in the term table in the order
    of their UTF-8 bytes: code-point order, which is Python's order of the strings. Each
    term's entry names its first and last document (a key has one live document; an
    updated one's old copy stays, deleted, in its segment): ~1 µs a document, read once a
    segment, where reading a stored document for its key costs ~40 µs.
    """
    try:
        next(key_rank_steps(segment, every=0))
    except StopIteration as done:
        return done.value
    raise AssertionError("key_rank_steps paused without being asked to")


def key_rank_steps(segment: Any, every: int = RANK_STEP) -> Generator[None, None, Any]:
    """Read `segment`'s key ranks (`key_ranks`), pausing (a yield) after each `every` keys
    (0: never); return them (`yield from` gives them)."""
    terms: Any = getattr(segment, "_terms", None)
    tindex = getattr(terms, "_tindex", None)
    if tindex is None or not hasattr(terms, "_keycoder"):
        return None
    prefix = terms._keycoder(KEY_FIELD, b"")
    ranks = array("i", [-1]) * segment.doc_count_all()  # no numpy: a one-shot search has none
    pos = tindex.closest_key_pos(prefix)
    if pos is None:
        return ranks
    for rank, (key, data) in enumerate(_records(tindex, pos, prefix)):
        if every and rank % every == every - 1:
            yield
        df, first, last = _DF_AND_IDS.unpack_from(data)
        if df <= 2:
            ranks[first] = ranks[last] = rank
            continue
        info = W3TermInfo.from_bytes(data)
        if info.is_inlined():
            ids: Iterable[int] = info.inlined_postings()[0]
        else:
            ids = read_postings(segment, KEY_FIELD, key[len(prefix) :].decode("utf-8"))[0]
        for n in ids:
            ranks[n] = rank
    return ranks


def _records(tindex: Any, pos: int, prefix: bytes) -> Iterable[tuple[bytes, bytes]]:
    """Yield the (key, data) records of an ordered term table from `pos` while the keys
    start with `prefix` (one field's terms)."""
    dbfile, end = tindex.dbfile, tindex.endofdata
    buf = getattr(dbfile, "_buf", None)
    size = len(prefix)
    if isinstance(buf, memoryview | mmap_type):
        unpack = _LENGTHS.unpack_from
        head = _LENGTHS.size
        while pos < end:
            keylen, datalen = unpack(buf, pos)
            start = pos + head
            key = bytes(buf[start : start + keylen])
            if key[:size] != prefix:
                return
            yield key, bytes(buf[start + keylen : start + keylen + datalen])
            pos = start + keylen + datalen
        return
    for key, data in tindex.items_from(prefix):
        if key[:size] != prefix:
            return
        yield key, data
