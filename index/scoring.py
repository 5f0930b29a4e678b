"""BM25F over Whoosh's posting lists, term at a time, with statistics of live documents only.

Whoosh scores a query one document at a time through a tree of Python matcher objects,
tens of microseconds per candidate: at 10,000 memories a three-word any-word query took
10–20 ms. Every text query recall asks is a bag of words (all terms or any term, each
looked up in content and keywords, plus boosted feedback terms), so this module reads each
term's posting list whole, keeps it per segment (a Whoosh segment never changes once
written; only its deleted set does), and adds up Whoosh's own BM25 formula term by term.
tests/test_scoring.py checks the scores against Whoosh's matchers.

The statistics (document count, document frequency, average field length) count live
documents only: Whoosh keeps a replaced or deleted document in its segment statistics
until segments merge, so an updated index would score differently from a rebuilt one.
"""

from __future__ import annotations

import heapq
import io
import pickle
import struct
import zlib
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from math import log
from typing import Any

from whoosh.codec.whoosh3 import LENGTHS_COLUMN as _LENGTHS_COLUMN

from index.storage import BYTE_TO_LENGTH

SCORED_FIELDS = ("content", "keywords")
# A posting list: document numbers (ascending) and weights, as compact arrays (12 bytes a
# posting, where Python lists of ints and floats cost ~75).
Postings = tuple[Sequence[int], Sequence[float]]
_NONE: Postings = (array("i"), array("d"))
# Posting entries kept across queries: 3M × 12 bytes is ~36 MB, and holds every posting of a
# 100,000-memory index (2.7M), so a resident daemon reads each list from disk once.
CACHE_POSTINGS = 3_000_000
TIE_MARGIN = 1e-5  # wider than any two scores equal to six decimals are apart
PROBE_RATIO = 16  # all-words: probe a list per candidate while they are ≤ 1/16 of it
CACHE_SCORES = 200_000  # term scores kept per index version (~100 bytes each: ~20 MB)
# Each field's scores of a term, as arrays beside its posting list, kept per index version
# (8 bytes each: ~16 MB): a dictionary is made from one in C, 3× faster than scoring again.
CACHE_VALUES = 2_000_000
# A one-word query takes its best documents from the word's documents sorted by score
# (with feedback terms: Fagin's threshold algorithm over their lists too): a common word's
# first documents settle the top, where scoring its whole list, and picking the best of
# it, cost ~100 ns a posting on every query ("agreed" at 100,000 memories: 12 → 1 ms).
# Past this many documents looked at, scoring the lists whole is as cheap. Queries of
# several words keep scoring whole lists: measured at 100,000 memories, their lists' sorted
# orders, kept beside their scores, thrashed the caches and cost more than they saved.
SORTED_ACCESS_LIMIT = 4096
CACHE_FILTERS = 32  # workspace filters' document sets kept per segment


@dataclass(frozen=True)
class TermQuery:
    """A bag-of-words query: `terms` in every scored field, `extra` in content only."""

    terms: tuple[str, ...]
    require_all: bool
    extra: tuple[str, ...] = ()
    extra_boost: float = 1.0


class LiveStats:
    """Document count, document frequencies and field lengths over live documents."""

    def __init__(self, reader: Any, lengths: dict[str, int]) -> None:
        self.reader = reader
        self.lengths = lengths
        self.count = reader.doc_count()
        self.has_deleted = reader.doc_count_all() != self.count
        self._idf: dict[tuple[str, str], float] = {}
        self._norms: dict[tuple[str, str], list[float]] = {}
        # Each term's scores per segment, for this index version (a daemon asks the same
        # words again and again): ~100 bytes an entry, least recent out past the limit.
        self.scores: OrderedDict[tuple[str, str, str, float], dict[int, float]] = OrderedDict()
        self.scores_size = 0
        self._values: OrderedDict[tuple[str, str, str], array[float]] = OrderedDict()
        self._values_size = 0
        # Each term's documents, best score first (kept beside its scores, the same size).
        self._orders: OrderedDict[tuple[str, str, str, float], array[int]] = OrderedDict()
        self._orders_size = 0

    def idf(self, fieldname: str, text: str, cache: PostingCache) -> float:
        key = (fieldname, text)
        if key not in self._idf:
            if not self.has_deleted:
                df = self.reader.doc_frequency(fieldname, text)
            else:
                df = 0
                for segment, _ in self.reader.leaf_readers():
                    if not segment.doc_count_all():
                        continue
                    ids = cache.postings(segment, fieldname, text)[0]
                    df += len(ids)
                    if ids and segment.has_deletions():
                        df -= len(segment.deleted_docs_set.intersection(ids))
            # Whoosh's formula over live counts (an index of only deleted documents matches nothing)
            self._idf[key] = log(max(self.count, 1) / (df + 1)) + 1
        return self._idf[key]

    def avg_field_length(self, fieldname: str) -> float:
        return self.lengths.get(fieldname, 0) / (self.count or 1)

    def norms(
        self, segment: Any, fieldname: str, cache: PostingCache, b: float, k1: float
    ) -> list[float]:
        """Return BM25's length part, k1 × ((1 − b) + b × length / average), per document."""
        key = (segment_id(segment), fieldname)
        if key not in self._norms:
            avgfl = self.avg_field_length(fieldname) or 1
            lengths = cache.lengths(segment, fieldname)
            # Lengths are quantized to a byte: a few hundred values at most, each computed
            # exactly as whoosh.scoring.bm25 does.
            table = {n: k1 * ((1 - b) + b * n / avgfl) for n in set(lengths)}
            self._norms[key] = [table[n] for n in lengths]
        return self._norms[key]

    def field_values(
        self,
        segment: Any,
        fieldname: str,
        text: str,
        postings: Postings,
        cache: PostingCache,
        b: float,
        k1: float,
    ) -> array[float]:
        """Return the term's BM25 score in one field for each of its postings, in order."""
        key = (segment_id(segment), fieldname, text)
        found = self._values.get(key)
        if found is not None:
            self._values.move_to_end(key)
            return found
        ids, weights = postings
        idf = self.idf(fieldname, text, cache)
        norms = self.norms(segment, fieldname, cache, b, k1)
        k1_plus_1 = k1 + 1
        # whoosh.scoring.bm25, idf * ((tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * dl / avgfl))),
        # with the length part looked up: the same operations in the same order, the same floats
        found = array(
            "d",
            [
                idf * ((tf * k1_plus_1) / (tf + norms[n]))
                for n, tf in zip(ids, weights, strict=True)
            ],
        )
        self._values[key] = found
        self._values_size += max(len(found), 1)
        while self._values_size > CACHE_VALUES and len(self._values) > 1:
            _, evicted = self._values.popitem(last=False)
            self._values_size -= max(len(evicted), 1)
        return found

    def order(self, key: tuple[str, str, str, float], scores: dict[int, float]) -> array[int]:
        """Return the documents of one term's `scores` (kept under `key`), best first."""
        found = self._orders.get(key)
        if found is not None:
            self._orders.move_to_end(key)
            return found
        found = array("i", sorted(scores, key=scores.__getitem__, reverse=True))
        self._orders[key] = found
        self._orders_size += max(len(found), 1)
        while self._orders_size > CACHE_SCORES and len(self._orders) > 1:
            _, evicted = self._orders.popitem(last=False)
            self._orders_size -= max(len(evicted), 1)
        return found

    def remember(self, key: tuple[str, str, str, float], scores: dict[int, float]) -> None:
        """Keep one term's scores in a segment, dropping the least recent past the limit."""
        self.scores[key] = scores
        self.scores_size += max(len(scores), 1)
        while self.scores_size > CACHE_SCORES and len(self.scores) > 1:
            _, evicted = self.scores.popitem(last=False)
            self.scores_size -= max(len(evicted), 1)


def live_field_lengths(reader: Any) -> dict[str, int]:
    """Sum the field lengths of live documents (Whoosh's own totals keep merged-away ones)."""
    totals = dict.fromkeys(SCORED_FIELDS, 0)
    for segment, _ in reader.leaf_readers():
        if not segment.doc_count_all():
            continue
        deleted = segment.deleted_docs_set if segment.has_deletions() else ()
        for fieldname in SCORED_FIELDS:
            lengths = field_lengths(segment, fieldname)
            totals[fieldname] += sum(n for n in lengths if n) - sum(
                lengths[n] or 0 for n in deleted
            )
    return totals


def field_lengths(segment: Any, fieldname: str) -> list[int | None]:
    """Return one segment's field length per document, as Whoosh stores it (quantized to a
    byte; None where the document has no such field), deleted documents included."""
    count = segment.doc_count_all()
    try:
        # Whoosh's lengths column, read whole: asking doc_field_length per document cost
        # ~0.3 s a field at 100,000 documents in every new process.
        perdoc = segment._perdoc
        column = perdoc._cached_reader(f"_{fieldname}_len", _LENGTHS_COLUMN)
        if column is None:
            return [None] * count
        raw = column._dbfile.get(column._basepos, column._count)
    except AttributeError:  # another codec: the public, slower way
        return [segment.doc_field_length(n, fieldname, None) for n in range(count)]
    table = BYTE_TO_LENGTH
    return [table[b] for b in raw] + [None] * (count - len(raw))


class PostingCache:
    """Posting lists and field lengths per segment, read once and kept (least recent out)."""

    def __init__(self, limit: int = CACHE_POSTINGS) -> None:
        self.limit = limit
        self._lists: OrderedDict[tuple[str, str, str], Postings] = OrderedDict()
        self._size = 0
        self._lengths: dict[tuple[str, str], list[int]] = {}
        self._holding: OrderedDict[tuple[str, str, tuple[str, ...]], set[int]] = OrderedDict()

    def postings(self, segment: Any, fieldname: str, text: str) -> Postings:
        """Return the segment's (document numbers, weights) for a term, deleted ones included."""
        key = (segment_id(segment), fieldname, text)
        found = self._lists.get(key)
        if found is not None:
            self._lists.move_to_end(key)
            return found
        # a term the segment lacks is kept too (as an empty list): asking Whoosh costs ~10 µs
        found = read_postings(segment, fieldname, text) if (fieldname, text) in segment else _NONE
        self._lists[key] = found
        self._size += _size(found)
        while self._size > self.limit and len(self._lists) > 1:
            _, evicted = self._lists.popitem(last=False)
            self._size -= _size(evicted)
        return found

    def holding(self, segment: Any, fieldname: str, texts: Collection[str]) -> set[int]:
        """Return the segment's documents holding any of `texts` in `fieldname` (deleted
        ones included), kept: a workspace filter rebuilt this set on every query."""
        key = (segment_id(segment), fieldname, tuple(sorted(texts)))
        found = self._holding.get(key)
        if found is None:
            found = set()
            for text in texts:
                found.update(self.postings(segment, fieldname, text)[0])
            self._holding[key] = found
            if len(self._holding) > CACHE_FILTERS:
                self._holding.popitem(last=False)
        else:
            self._holding.move_to_end(key)
        return found

    def lengths(self, segment: Any, fieldname: str) -> list[int]:
        """Return the segment's field length per document (as Whoosh stores it, quantized)."""
        key = (segment_id(segment), fieldname)
        if key not in self._lengths:
            self._lengths[key] = [1 if n is None else n for n in field_lengths(segment, fieldname)]
        return self._lengths[key]

    def forget_except(self, segments: Iterable[Any]) -> None:
        """Drop what belongs to segments no longer in the index."""
        live = {segment_id(s) for s in segments if s.doc_count_all()}
        for gone in [k for k in self._lists if k[0] not in live]:
            self._size -= _size(self._lists.pop(gone))
        for stale in [k for k in self._lengths if k[0] not in live]:
            del self._lengths[stale]
        for stale_filter in [k for k in self._holding if k[0] not in live]:
            del self._holding[stale_filter]


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
) -> list[tuple[float, int]]:
    """Return the `limit` best (score, document number) pairs for `query`, best first.

    Documents tied with the last place (to six decimals) come too: the caller breaks ties
    by something stabler than document numbers, which change when segments merge.
    `allowed` limits the documents to those whose `workspace` field is one of its values.
    """
    found: list[tuple[float, int]] = []
    for segment, base in reader.leaf_readers():
        if not segment.doc_count_all():
            continue  # an empty index has a reader without a segment
        deleted = segment.deleted_docs_set if segment.has_deletions() else frozenset()
        keep = None if allowed is None else cache.holding(segment, "workspace", allowed)
        top = _sorted_access(segment, stats, cache, query, b, k1, limit, deleted, keep)
        if top is not None:
            found.extend((value, base + n) for value, n in top)
            continue
        totals = _segment_scores(segment, stats, cache, query, b, k1)
        if deleted or keep is not None:
            live = totals.keys() - deleted
            if keep is not None:
                live &= keep
            if len(live) < len(totals):
                totals = {n: totals[n] for n in live}
        floor = _floor(totals, limit)
        found.extend((value, base + n) for n, value in totals.items() if value >= floor)
    best = heapq.nlargest(limit, found, key=lambda pair: (pair[0], -pair[1]))
    if len(best) == limit and len(found) > limit:
        last = round(best[-1][0], 6)
        taken = {n for _, n in best}
        best += [pair for pair in found if round(pair[0], 6) == last and pair[1] not in taken]
    return best


def _sorted_access(
    segment: Any,
    stats: LiveStats,
    cache: PostingCache,
    query: TermQuery,
    b: float,
    k1: float,
    limit: int,
    deleted: Collection[int],
    keep: set[int] | None,
) -> list[tuple[float, int]] | None:
    """Return the (score, document) pairs of one segment that `_floor` would keep, for a
    one-word query, found by sorted access: None for other queries, or when the top does
    not settle within SORTED_ACCESS_LIMIT documents.

    Each scored list is read best first, a depth at a time; a document met for the first
    time is scored whole (its values summed in the query's order, as _segment_scores adds
    them: the same floats). No document not yet met can score more than the sum of the
    values at the current depth, so once that sum is below the limit-th best by more than
    the tie margin, every document `_floor` keeps has been met.
    """
    if limit <= 0 or len(set(query.terms)) != 1:
        return None
    parts: list[tuple[str, tuple[str, ...], float]] = [(t, SCORED_FIELDS, 1.0) for t in query.terms]
    parts += [(t, ("content",), query.extra_boost) for t in query.extra if t not in query.terms]
    lists = []
    for text, fields, boost in parts:
        scores = _term_scores(segment, stats, cache, text, fields, boost, b, k1)
        if scores:
            lists.append((scores, stats.order(_score_key(segment, fields, text, boost), scores)))
    scored: dict[int, float] = {}
    best: list[float] = []  # a min-heap of the `limit` best scores of allowed documents
    for depth in range(max((len(order) for _, order in lists), default=0)):
        bound = 0.0
        for scores, order in lists:
            if depth >= len(order):
                continue
            n = order[depth]
            bound += scores[n]
            if n in scored or n in deleted or (keep is not None and n not in keep):
                continue
            value = _summed(lists, n)
            scored[n] = value
            if len(best) < limit:
                heapq.heappush(best, value)
            elif value > best[0]:
                heapq.heapreplace(best, value)
        if len(best) == limit and bound < best[0] - TIE_MARGIN - _SUM_SLACK:
            break
        if depth * len(lists) > SORTED_ACCESS_LIMIT:
            return None
    floor = best[0] - TIE_MARGIN if len(best) == limit else float("-inf")
    return [(value, n) for n, value in scored.items() if value >= floor]


def _summed(lists: list[tuple[dict[int, float], Any]], n: int) -> float:
    """Return document `n`'s score: its values added in the lists' order."""
    value: float | None = None
    for scores, _ in lists:
        part = scores.get(n)
        if part is not None:
            value = part if value is None else value + part
    assert value is not None  # `n` came from one of the lists
    return value


_SUM_SLACK = 1e-9  # sums of the same values in another order differ by far less


def _floor(totals: dict[int, float], limit: int) -> float:
    """Return a score below which no document of `totals` can be among the `limit` best
    nor tie with the last of them to six decimals (the best of every segment then qualify:
    the last place overall scores at least each segment's own `limit`-th)."""
    if limit <= 0 or len(totals) <= limit:
        return float("-inf")
    return heapq.nlargest(limit, totals.values())[-1] - TIE_MARGIN


def _segment_scores(
    segment: Any, stats: LiveStats, cache: PostingCache, query: TermQuery, b: float, k1: float
) -> dict[int, float]:
    if query.require_all:
        totals = _all_terms(segment, stats, cache, query.terms, b, k1)
    else:
        totals = {}
        for text in query.terms:
            _add(totals, _term_scores(segment, stats, cache, text, SCORED_FIELDS, 1.0, b, k1))
    for text in query.extra:
        if text in query.terms:
            continue
        _add(
            totals,
            _term_scores(segment, stats, cache, text, ("content",), query.extra_boost, b, k1),
        )
    return totals


def _all_terms(
    segment: Any, stats: LiveStats, cache: PostingCache, terms: tuple[str, ...], b: float, k1: float
) -> dict[int, float]:
    """Return the summed scores of the documents holding every one of `terms`.

    The rarest term is scored whole; each longer posting list is then asked only for the
    documents still in the running (a binary search a document) while those are few next
    to its length: a common word beside a rare one no longer costs its whole list. The sums
    are added in the terms' order, exactly as scoring every list whole would.
    """
    if not terms:
        return {}
    sizes = {t: _postings_count(segment, cache, t) for t in terms}
    if not all(sizes.values()):
        return {}
    per_term: dict[str, dict[int, float]] = {}
    common: set[int] | None = None
    for text in sorted(set(terms), key=lambda t: (sizes[t], t)):
        cached = stats.scores.get(_score_key(segment, SCORED_FIELDS, text, 1.0))
        if cached is not None or common is None or len(common) * PROBE_RATIO >= sizes[text]:
            scores = _term_scores(segment, stats, cache, text, SCORED_FIELDS, 1.0, b, k1)
        else:
            scores = _probed_scores(segment, stats, cache, text, sorted(common), b, k1)
        per_term[text] = scores
        common = set(scores) if common is None else common.intersection(scores)
        if not common:
            return {}
    assert common is not None
    # sum() adds from 0 in the terms' order: 0 + a is a, then + b, + c …
    first = per_term[terms[0]]
    totals = {n: first[n] for n in common}
    for text in terms[1:]:
        scores = per_term[text]
        totals = {n: value + scores[n] for n, value in totals.items()}
    return totals


def _postings_count(segment: Any, cache: PostingCache, text: str) -> int:
    return sum(len(cache.postings(segment, f, text)[0]) for f in SCORED_FIELDS)


def _probed_scores(
    segment: Any,
    stats: LiveStats,
    cache: PostingCache,
    text: str,
    wanted: list[int],
    b: float,
    k1: float,
) -> dict[int, float]:
    """Return `text`'s scores (summed over the scored fields, as _term_scores does) for the
    documents of sorted `wanted` that hold it."""
    scores: dict[int, float] = {}
    k1_plus_1 = k1 + 1
    for fieldname in SCORED_FIELDS:
        ids, weights = cache.postings(segment, fieldname, text)
        if not ids:
            continue
        idf = stats.idf(fieldname, text, cache)
        norms = stats.norms(segment, fieldname, cache, b, k1)
        end = len(ids)
        at = 0
        for n in wanted:
            at = bisect_left(ids, n, at, end)
            if at == end:
                break
            if ids[at] != n:
                continue
            tf = weights[at]
            value = idf * ((tf * k1_plus_1) / (tf + norms[n]))
            scores[n] = scores[n] + value if n in scores else value
    return scores


def _add(totals: dict[int, float], scores: dict[int, float]) -> None:
    """Add `scores` into `totals` (totals[n] + value where both hold n), looping in Python
    over the documents both hold only."""
    both = {n: totals[n] + scores[n] for n in (totals.keys() & scores.keys())}
    totals.update(scores)
    totals.update(both)


def _term_scores(
    segment: Any,
    stats: LiveStats,
    cache: PostingCache,
    text: str,
    fields: tuple[str, ...],
    boost: float,
    b: float,
    k1: float,
) -> dict[int, float]:
    """Return each document's BM25 score for one term, summed over `fields` (kept in
    `stats` for the next query; callers must not change the dictionary)."""
    key = _score_key(segment, fields, text, boost)
    found = stats.scores.get(key)
    if found is not None:
        stats.scores.move_to_end(key)
        return found
    scores: dict[int, float] = {}
    for fieldname in fields:
        postings = cache.postings(segment, fieldname, text)
        if not postings[0]:
            continue
        values = stats.field_values(segment, fieldname, text, postings, cache, b, k1)
        if boost != 1.0:
            field_scores = {n: value * boost for n, value in zip(postings[0], values, strict=True)}
        else:
            field_scores = dict(zip(postings[0], values, strict=True))
        if not scores:
            scores = field_scores
            continue
        for n, value in field_scores.items():
            scores[n] = scores[n] + value if n in scores else value
    stats.remember(key, scores)
    return scores


def _score_key(
    segment: Any, fields: tuple[str, ...], text: str, boost: float
) -> tuple[str, str, str, float]:
    return (segment_id(segment), ",".join(fields), text, boost)


def _size(postings: Postings) -> int:
    return max(len(postings[0]), 1)  # an absent term's entry counts too


def segment_id(segment: Any) -> str:
    return str(segment.segment().segment_id())


def read_postings(segment: Any, fieldname: str, text: str) -> Postings:
    """Return one segment's (document numbers, weights) for a term, deleted ones included."""
    # The raw posting list, deleted documents included (the deleted set changes while the
    # segment lives; callers filter).
    matcher = segment._terms.matcher(
        fieldname, segment._text_to_bytes(fieldname, text), segment.schema[fieldname].format
    )
    ids = array("i")
    weights = array("d")  # doubles: a weight is a Python float, kept exactly
    if not _read_blocks(matcher, ids, weights):
        while matcher.is_active():  # an inlined list, or another codec: the public, slower way
            ids.append(matcher.id())
            weights.append(matcher.weight())
            matcher.next()
    return ids, weights


_BLOCK_LENGTH = struct.Struct("!i")  # whoosh.system.pack_int


def _read_blocks(matcher: Any, ids: array[int], weights: array[float]) -> bool:
    """Decode a whoosh3 posting list straight from its segment's memory map, block by block,
    into `ids` and `weights` (False, nothing read, if it is not one): Whoosh's matcher
    spends ~35 µs of Python calls a block and undoes the id deltas in a generator; this is
    the same format read with C calls.

    A block is a signed length (negative on the last block), the pickled tuple
    (count, max id, max weight, compression, min length, max length), then the pickled
    (ids as deltas, weights, values), zlib-compressed when compression is set.
    """
    buf = getattr(getattr(matcher, "_postfile", None), "_buf", None)
    position = getattr(matcher, "_baseoffset", None)
    if not isinstance(buf, memoryview) or position is None or getattr(matcher, "_byteids", True):
        return False
    while True:
        (length,) = _BLOCK_LENGTH.unpack_from(buf, position)
        start = position + _BLOCK_LENGTH.size
        block = io.BytesIO(buf[start : start + abs(length)])
        info = pickle.load(block)
        count, compression = info[0], info[3]
        data = block.read()
        raw_ids, raw_weights = pickle.loads(zlib.decompress(data) if compression else data)[:2]
        ids.extend(accumulate(raw_ids))
        # as W3LeafMatcher._read_weights: None is all 1.0, one float is every weight
        if raw_weights is None:
            weights.extend([1.0] * count)
        elif isinstance(raw_weights, float):
            weights.extend([array("f", [raw_weights])[0]] * count)
        else:
            weights.extend(raw_weights)
        if length < 0:
            return True
        position = start + length
