"""BM25F over Whoosh's posting lists, term at a time, with statistics of live documents only.

Whoosh scores a query one document at a time through a tree of Python matcher objects,
tens of microseconds per candidate: at 10,000 memories a three-word any-word query took
10–20 ms. Every text query recall asks is a bag of words (all terms or any term, each
looked up in content and keywords, plus boosted feedback terms), so this module reads each
term's posting list whole, keeps it per segment (a Whoosh segment never changes once
written; only its deleted set does), and adds up Whoosh's own BM25 formula term by term
in one numpy array a segment (a common word at 100,000 memories has ~30k postings: as
Python dictionaries, adding and ranking them cost ~100 ns each; as arrays, ~2 ns).
tests/index/test_scoring.py checks the scores against Whoosh's matchers.

The statistics (document count, document frequency, average field length) count live
documents only: Whoosh keeps a replaced or deleted document in its segment statistics
until segments merge, so an updated index would score differently from a rebuilt one.
"""

from __future__ import annotations

import heapq
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from math import log
from typing import Any

from . import plain, pruning
from ._patches import BYTE_TO_LENGTH
from .postings import Postings, field_bytes, read_postings
from .postings import _read_blocks as _read_blocks  # tests read a matcher's blocks with it

SCORED_FIELDS = ("content", "keywords")
_NONE: Postings = (array("i"), array("f"))
Vector = tuple[Any, Any]  # a term's documents in a segment (int32) and scores (float64)
# Posting entries kept across queries: 1.5M × 12 bytes is ~18 MB, half the postings of a
# 100,000-memory index (2.7M). Issue 39: with 3M (and 2M below) the daemon's RSS at 100k was
# 218 MiB; with these a recall's CPU p50 / p95 rose ~10% (docs/benchmarks.md section 7).
CACHE_POSTINGS = 1_500_000
TIE_MARGIN = 1e-5  # wider than any two scores equal to six decimals are apart
# A field's scores of a term are not kept (8 bytes a posting, ~9 MB at 100k): each term's
# scores summed over its fields are, as numpy arrays of (document, score), per index
# version: a daemon asks the same words again and again (12-16 bytes a posting, ~16 MB).
CACHE_VECTORS = 1_000_000
CACHE_FILTERS = 32  # workspace filters' document sets kept per segment
# A stored length byte to the length it counts as: in live totals an absent field (byte 0)
# adds nothing; in BM25's length part it is 1.
_LIVE_LENGTHS = tuple(n or 0 for n in BYTE_TO_LENGTH)
_NORM_LENGTHS = tuple(1 if n is None else n for n in BYTE_TO_LENGTH)
# numpy is imported by the first reader that scores with arrays: a process that searches once
# scores in plain Python (index/plain.py), the same floats (the CLI's no-daemon path sets PLAIN).
PLAIN = False


def use_plain_scoring(on: bool = True) -> None:
    """Make the readers opened from now on score without numpy (index/plain.py)."""
    global PLAIN
    PLAIN = on


@dataclass(frozen=True)
class TermQuery:
    """A bag-of-words query: `terms` in every scored field, `extra` in content only, and
    `exact` (words with accents, as typed) in the exact field, adding to the documents the
    others matched."""

    terms: tuple[str, ...]
    require_all: bool
    extra: tuple[str, ...] = ()
    extra_boost: float = 1.0
    exact: tuple[str, ...] = ()
    exact_boost: float = 0.0


# The field of accented words as written (index/schema.py). Its scores have no length
# part (b = 0): a bonus for the accents a document shares with the query, whatever its size.
EXACT_FIELD = "exact"


class LiveStats:
    """Document count, document frequencies and field lengths over live documents (one
    index version's)."""

    def __init__(self, reader: Any, lengths: dict[str, int]) -> None:
        self.reader = reader
        self.lengths = lengths
        self.count = reader.doc_count()
        self.has_deleted = reader.doc_count_all() != self.count
        self._idf: dict[tuple[str, str], float] = {}
        self._df: dict[tuple[str, str], int] = {}
        self._norms: dict[tuple[str, str], Any] = {}  # numpy arrays
        self._norm_tables: dict[tuple[Any, ...], Any] = {}  # numpy (or a tuple), 256 each
        self.vectors: OrderedDict[tuple[str, str, str, float], Vector] = OrderedDict()
        self.vectors_size = 0

    def idf(self, fieldname: str, text: str, cache: PostingCache) -> float:
        key = (fieldname, text)
        if key not in self._idf:
            df = self.frequency(fieldname, text, cache)
            # Whoosh's formula over live counts (an index of only deleted documents matches nothing)
            self._idf[key] = log(max(self.count, 1) / (df + 1)) + 1
        return self._idf[key]

    def frequency(self, fieldname: str, text: str, cache: PostingCache) -> int:
        """Return how many live documents hold `text` in `fieldname` (Whoosh's own count
        goes on counting a replaced document until its segment merges), kept per version
        (Whoosh asks each segment: ~30 µs × 42 segments at 1M, a recall asks ~40 terms)."""
        found = self._df.get((fieldname, text))
        if found is None and not self.has_deleted:
            found = self._df[fieldname, text] = int(self.reader.doc_frequency(fieldname, text))
        elif found is None:
            segments = (s for s, _ in self.reader.leaf_readers() if s.doc_count_all())
            found = sum(pruning.live_frequency(s, fieldname, text, cache) for s in segments)
            self._df[fieldname, text] = found
        return found

    def avg_field_length(self, fieldname: str) -> float:
        return self.lengths.get(fieldname, 0) / (self.count or 1)

    def norms(self, segment: Any, fieldname: str, cache: PostingCache, b: float, k1: float) -> Any:
        """Return BM25's length part, k1 × ((1 − b) + b × length / average), per document
        (a numpy array)."""
        key = (segment_id(segment), fieldname)
        found = self._norms.get(key)
        if found is None:
            found = self._norms[key] = self.norm_table(fieldname, b, k1)[
                cache.codes(segment, fieldname)
            ]
        return found

    def norm_table(self, fieldname: str, b: float, k1: float) -> Any:
        """Return BM25's length part for each of the 256 stored length bytes of a field.

        Lengths are stored as a byte: 256 values, each computed exactly as
        whoosh.scoring.bm25 does (an absent field counts as length 1, as Whoosh's
        doc_field_length default), then looked up per posting. One table a field and index
        version serves every segment: the average is the index's (a per-segment table cost
        ~1 ms an add at 100,000 memories, each add being a new version).
        """
        key = (fieldname, b, k1)
        found = self._norm_tables.get(key)
        if found is None:
            found = self._norm_tables[key] = _np().array(self.plain_norms(fieldname, b, k1))
        return found

    def plain_norms(self, fieldname: str, b: float, k1: float) -> tuple[float, ...]:
        """Return norm_table's 256 values as Python floats."""
        avgfl = self.avg_field_length(fieldname) or 1
        return tuple(k1 * ((1 - b) + b * n / avgfl) for n in _NORM_LENGTHS)

    def field_values(
        self,
        segment: Any,
        fieldname: str,
        text: str,
        postings: Postings,
        cache: PostingCache,
        b: float,
        k1: float,
    ) -> Any:
        """Return the term's BM25 score in one field for each of its postings, in order
        (a numpy array, a list if the cache is plain; not kept: the summed vector is, and
        this costs ~5 ns a posting)."""
        idf = self.idf(fieldname, text, cache)
        if cache.plain:
            table = self._norm_tables.get((fieldname, b, k1, "plain"))
            if table is None:
                table = self._norm_tables[(fieldname, b, k1, "plain")] = self.plain_norms(
                    fieldname, b, k1
                )
            codes = cache.codes(segment, fieldname)
            return plain.field_values(postings[0], postings[1], idf, table, codes, k1)
        np = _np()
        ids = np.frombuffer(postings[0], np.int32)
        # float32 weights widened: the same doubles as the Python floats they stand for
        dtype = np.float32 if postings[1].typecode == "f" else np.float64
        tf = np.frombuffer(postings[1], dtype).astype(np.float64)
        # the length part of the postings' documents only: a whole segment's (`norms`) is
        # kept only where warm_steps made it, for one index version
        norms = self._norms.get((segment_id(segment), fieldname))
        if norms is not None:
            lengths = norms[ids]
        else:
            lengths = self.norm_table(fieldname, b, k1)[cache.codes(segment, fieldname)[ids]]
        # whoosh.scoring.bm25, idf * ((tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * dl / avgfl))),
        # with the length part looked up: the same IEEE operations in the same order, one
        # element at a time, so the same floats as Python's
        return idf * ((tf * (k1 + 1)) / (tf + lengths))

    def vector(self, key: tuple[str, str, str, float]) -> Vector | None:
        """Return a term's kept (documents, scores) in a segment, or None."""
        found = self.vectors.get(key)
        if found is not None:
            self.vectors.move_to_end(key)
        return found

    def remember(self, key: tuple[str, str, str, float], vector: Vector) -> None:
        """Keep one term's scores in a segment, dropping the least recent past the limit."""
        self.vectors[key] = vector
        self.vectors_size += max(len(vector[0]), 1)
        while self.vectors_size > CACHE_VECTORS and len(self.vectors) > 1:
            _, evicted = self.vectors.popitem(last=False)
            self.vectors_size -= max(len(evicted[0]), 1)


def segment_field_lengths(segment: Any, *, arrays: bool = True) -> dict[str, int]:
    """Sum the field lengths of one segment's live documents (the same for as long as the
    segment lives with as many deleted documents: a caller may keep it). `arrays` False: without
    numpy (the same integers)."""
    gone = segment.deleted_docs_set if segment.has_deletions() else ()
    totals = {}
    if not arrays:
        for fieldname in SCORED_FIELDS:
            codes = field_bytes(segment, fieldname)
            totals[fieldname] = plain.live_length(codes, gone, _LIVE_LENGTHS)
        return totals
    np = _np()
    deleted = np.fromiter(gone, dtype=np.int64, count=len(gone))
    table = np.array(_LIVE_LENGTHS, dtype=np.int64)
    for fieldname in SCORED_FIELDS:
        lengths = table[field_codes(segment, fieldname)]
        totals[fieldname] = int(lengths.sum()) - int(lengths[deleted].sum())
    return totals


def field_codes(segment: Any, fieldname: str) -> Any:
    """Return one segment's stored length byte per document, deleted documents included, as
    a numpy uint8 array (0 where the document has no such field; BYTE_TO_LENGTH decodes)."""
    np = _np()
    return np.frombuffer(field_bytes(segment, fieldname), dtype=np.uint8)


def _np() -> Any:
    """Return numpy, imported on first use (a plain reader never imports it)."""
    import numpy

    return numpy


class PostingCache:
    """Posting lists and field lengths per segment, read once and kept (least recent out)."""

    def __init__(self, limit: int = CACHE_POSTINGS, *, plain: bool | None = None) -> None:
        self.limit = limit
        # without numpy: lists, sets and bytes where numpy arrays would be (index/plain.py)
        self.plain = PLAIN if plain is None else plain
        self._lists: OrderedDict[tuple[str, str, str], Postings] = OrderedDict()
        self._keys: dict[str, set[tuple[str, str, str]]] = {}  # _lists' keys by segment
        self.lacks: Callable[[str, str, str], bool] | None = None  # IndexReader: its lexicon's
        self._size = 0
        self._lengths: dict[tuple[str, str], Any] = {}  # length bytes, numpy
        self._holding: OrderedDict[tuple[str, str, tuple[str, ...]], Any] = OrderedDict()
        self._deleted: dict[str, Any] = {}
        self.blocks = pruning.BlockCache()  # long lists' block headers (index/pruning.py)

    def postings(self, segment: Any, fieldname: str, text: str) -> Postings:
        """Return the segment's (document numbers, weights) for a term, deleted ones included."""
        key = (segment_id(segment), fieldname, text)
        found = self._lists.get(key)
        if found is not None:
            self._lists.move_to_end(key)
            return found
        # a term the segment lacks is kept too (as an empty list): asking Whoosh costs ~10 µs,
        # not asked where the lexicon knows already (Lexicon.lacks)
        known = self.lacks is not None and self.lacks(*key)
        held = not known and (fieldname, text) in segment
        found = read_postings(segment, fieldname, text) if held else _NONE
        self._keep(key, found)
        return found

    def holds(self, segment: Any, fieldname: str, text: str) -> bool:
        """Say whether the segment has postings of a term (deleted ones too), not reading them."""
        found = self._lists.get(key := (segment_id(segment), fieldname, text))
        if found is not None or (self.lacks is not None and self.lacks(*key)):
            return bool(found and found[0])
        return (fieldname, text) in segment

    def _keep(self, key: tuple[str, str, str], found: Postings) -> None:
        self._lists[key] = found
        self._keys.setdefault(key[0], set()).add(key)
        self._size += _size(found)
        while self._size > self.limit and len(self._lists) > 1:
            evicted_key, evicted = self._lists.popitem(last=False)
            self._keys[evicted_key[0]].discard(evicted_key)
            self._size -= _size(evicted)

    def holding(self, segment: Any, fieldname: str, texts: Collection[str]) -> Any:
        """Return which of the segment's documents hold any of `texts` in `fieldname`
        (deleted ones included) as a numpy mask, kept: a workspace filter."""
        key = (segment_id(segment), fieldname, tuple(sorted(texts)))
        found = self._holding.get(key)
        if found is None and self.plain:
            found = plain.holding(self.postings(segment, fieldname, t)[0] for t in texts)
            self._holding[key] = found
            if len(self._holding) > CACHE_FILTERS:
                self._holding.popitem(last=False)
        elif found is None:
            np = _np()
            found = np.zeros(segment.doc_count_all(), dtype=bool)
            for text in texts:
                found[np.frombuffer(self.postings(segment, fieldname, text)[0], np.int32)] = True
            self._holding[key] = found
            if len(self._holding) > CACHE_FILTERS:
                self._holding.popitem(last=False)
        else:
            self._holding.move_to_end(key)
        return found

    def deleted(self, segment: Any) -> Any:
        """Return the segment's deleted documents as a numpy array of document numbers
        (kept while the set does not grow: a segment's deletions are only ever added)."""
        gone = segment.deleted_docs_set if segment.has_deletions() else ()
        if self.plain:
            return gone
        key = segment_id(segment)
        found = self._deleted.get(key)
        if found is None or len(found) != len(gone):
            np = _np()
            found = np.fromiter(gone, dtype=np.int64, count=len(gone))
            self._deleted[key] = found
        return found

    def codes(self, segment: Any, fieldname: str) -> Any:
        """Return the segment's stored length byte per document (see field_codes), kept."""
        key = (segment_id(segment), fieldname)
        found = self._lengths.get(key)
        if found is None:
            codes = (
                field_bytes(segment, fieldname) if self.plain else field_codes(segment, fieldname)
            )
            found = self._lengths[key] = codes
        return found

    def forget_except(self, segments: Iterable[Any]) -> None:
        """Drop what belongs to segments no longer in the index."""
        live = {segment_id(s) for s in segments if s.doc_count_all()}
        # by segment, not by looking at every list kept (~100,000 after a few hundred adds)
        for gone_segment in [k for k in self._keys if k not in live]:
            for gone in self._keys.pop(gone_segment):
                self._size -= _size(self._lists.pop(gone))
        for stale in [k for k in self._lengths if k[0] not in live]:
            del self._lengths[stale]
        for stale_filter in [k for k in self._holding if k[0] not in live]:
            del self._holding[stale_filter]
        for stale_set in [k for k in self._deleted if k not in live]:
            del self._deleted[stale_set]
        self.blocks.forget_except(live)


def score(
    reader: Any,
    stats: LiveStats,
    cache: PostingCache,
    query: TermQuery,
    *,
    b: float,
    k1: float,
    allowed: Collection[str] | None = None,
    limit: int,
    held: dict[int, int] | None = None,
) -> list[tuple[float, int]]:
    """Return the `limit` best (score, document number) pairs for `query`, best first.

    `held`, if given, is filled with how many of the query's distinct terms (not its
    extra ones) each returned document holds: what a coverage check would read again from
    the document's text, counted here from the postings already read.

    Documents tied with the last place (to six decimals) come too: the caller breaks ties
    by something stabler than document numbers, which change when segments merge.
    `allowed` limits the documents to those whose `workspace` field is one of its values;
    a `limit` below 1 returns nothing.
    """
    found: list[tuple[float, int]] = []
    if limit < 1:
        return found
    for segment, base in reader.leaf_readers():
        if not segment.doc_count_all() or not _reaches(segment, cache, query):
            continue  # an empty index has a reader without a segment
        keep = None if allowed is None else cache.holding(segment, "workspace", allowed)
        best_of = _plain_best if cache.plain else _segment_best  # the same pairs and counts
        # a long posting list is read only where it can matter (index/pruning.py), the same pairs
        top, counts = pruning.segment_best(
            segment, stats, cache, query, b, k1, limit, keep, count=held is not None
        ) or best_of(segment, stats, cache, query, b, k1, limit, keep, count=held is not None)
        found.extend((value, base + n) for value, n in top)
        if held is not None:
            held.update((base + n, c) for (_, n), c in zip(top, counts, strict=True))
    best = heapq.nlargest(limit, found, key=lambda pair: (pair[0], -pair[1]))
    if len(best) == limit and len(found) > limit:
        last = round(best[-1][0], 6)
        taken = {n for _, n in best}
        best += [pair for pair in found if round(pair[0], 6) == last and pair[1] not in taken]
    return best


def _reaches(segment: Any, cache: PostingCache, query: TermQuery) -> bool:
    """Whether the query can match a segment's document (else no score arrays are made)."""

    def held(text: str, fields: tuple[str, ...]) -> bool:
        return any(cache.holds(segment, fieldname, text) for fieldname in fields)

    if any(held(text, ("content",)) for text in query.extra if text not in query.terms):
        return True
    terms = (held(text, SCORED_FIELDS) for text in dict.fromkeys(query.terms))
    return all(terms) if query.require_all else any(terms)


def _segment_best(
    segment: Any,
    stats: LiveStats,
    cache: PostingCache,
    query: TermQuery,
    b: float,
    k1: float,
    limit: int,
    keep: Any,
    *,
    count: bool = False,
) -> tuple[list[tuple[float, int]], list[int]]:
    """Return the (score, document) pairs of one segment's live documents (those `keep`
    marks, if given) that can be among the `limit` best or tie with the last of them to
    six decimals (all of them for a limit of 0): the best of every segment then qualify,
    as the last place overall scores at least each segment's own limit-th. With `count`,
    also how many of the query's distinct terms each of them holds (else an empty list).

    Scores add up in one array a segment, term by term in the query's order, from 0: each
    document gets the same additions in the same order as adding term scores one at a time
    (0 + a is a), so the floats are those of a sum over its terms.
    """
    np = _np()
    size = segment.doc_count_all()
    total = np.zeros(size)
    if query.require_all:
        vectors = {
            t: _term_vector(segment, stats, cache, t, SCORED_FIELDS, 1.0, b, k1)
            for t in set(query.terms)
        }
        holders: Any = None
        if any(not len(ids) for ids, _ in vectors.values()):
            matched = np.zeros(size, dtype=bool)
        else:
            holders = np.zeros(size, dtype=np.int32)
            for ids, _ in vectors.values():
                holders[ids] += 1
            matched = holders == len(vectors)
            for text in query.terms:
                ids, values = vectors[text]
                total[ids] += values
            total[~matched] = 0.0  # only the extra terms count for the others
    else:
        matched = np.zeros(size, dtype=bool)
        holders = np.zeros(size, dtype=np.int32) if count else None
        counted: set[str] = set()
        for text in query.terms:
            ids, values = _term_vector(segment, stats, cache, text, SCORED_FIELDS, 1.0, b, k1)
            total[ids] += values
            matched[ids] = True
            if holders is not None and text not in counted:
                holders[ids] += 1
                counted.add(text)
    for text in query.extra:
        if text in query.terms:
            continue
        ids, values = _term_vector(
            segment, stats, cache, text, ("content",), query.extra_boost, b, k1
        )
        total[ids] += values
        matched[ids] = True
    if query.exact_boost:
        for text in query.exact:
            ids, values = _term_vector(
                segment, stats, cache, text, (EXACT_FIELD,), query.exact_boost, 0.0, k1
            )
            total[ids] += values * matched[ids]  # never a match of its own
    matched[cache.deleted(segment)] = False
    if keep is not None:
        matched &= keep
    documents = np.flatnonzero(matched)
    values = total[documents]
    if 0 < limit < len(documents):
        last = np.partition(values, len(values) - limit)[len(values) - limit]
        chosen = values >= last - TIE_MARGIN
        documents, values = documents[chosen], values[chosen]
    counts: list[int] = []
    if count:
        counts = [0] * len(documents) if holders is None else holders[documents].tolist()
    return list(zip(values.tolist(), documents.tolist(), strict=True)), counts


def _plain_best(
    segment: Any,
    stats: LiveStats,
    cache: PostingCache,
    query: TermQuery,
    b: float,
    k1: float,
    limit: int,
    keep: Any,
    *,
    count: bool,
) -> tuple[list[tuple[float, int]], list[int]]:
    """_segment_best without numpy (index/plain.py): the same pairs, floats and counts."""

    def vector(text: str, fields: tuple[str, ...], boost: float, b_: float | None) -> Vector:
        b_ = b if b_ is None else b_
        return _term_vector(segment, stats, cache, text, fields, boost, b_, k1)

    deleted = cache.deleted(segment)
    return plain.segment_best(
        query, vector, deleted, keep, limit, count=count,
        exact_field=EXACT_FIELD, scored_fields=SCORED_FIELDS,
    )  # fmt: skip


def _term_vector(
    segment: Any,
    stats: LiveStats,
    cache: PostingCache,
    text: str,
    fields: tuple[str, ...],
    boost: float,
    b: float,
    k1: float,
) -> Vector:
    """Return one term's documents in a segment and their BM25 scores, summed over `fields`
    in order and times `boost` (kept in `stats` for the next query; callers must not
    change the arrays)."""
    key = _score_key(segment, fields, text, boost)
    found = stats.vector(key)
    if found is not None:
        return found
    if cache.plain:  # each field's scores times the boost, then added (as below)
        scored = []
        for fieldname in fields:
            postings = cache.postings(segment, fieldname, text)
            if postings[0]:
                values = stats.field_values(segment, fieldname, text, postings, cache, b, k1)
                scored.append(plain.times((list(postings[0]), values), boost))
        found = plain.summed(scored)
        stats.remember(key, found)
        return found
    np = _np()
    parts = []
    for fieldname in fields:
        postings = cache.postings(segment, fieldname, text)
        if not postings[0]:
            continue
        values = stats.field_values(segment, fieldname, text, postings, cache, b, k1)
        parts.append(
            (np.frombuffer(postings[0], np.int32), values * boost if boost != 1.0 else values)
        )
    if not parts:
        found = (np.zeros(0, np.int32), np.zeros(0))
    elif len(parts) == 1:
        found = parts[0]
    else:
        # a field's value is added to the ones before it: content + keywords, as whole lists
        summed = np.zeros(segment.doc_count_all())
        held = np.zeros(segment.doc_count_all(), dtype=bool)
        for ids, values in parts:
            summed[ids] += values
            held[ids] = True
        documents = np.flatnonzero(held).astype(np.int32)
        found = (documents, summed[documents])
    stats.remember(key, found)
    return found


def _score_key(
    segment: Any, fields: tuple[str, ...], text: str, boost: float
) -> tuple[str, str, str, float]:
    return (segment_id(segment), ",".join(fields), text, boost)


def _size(postings: Postings) -> int:
    return max(len(postings[0]), 1)  # an absent term's entry counts too


def segment_id(segment: Any) -> str:
    return str(segment.segment().segment_id())
