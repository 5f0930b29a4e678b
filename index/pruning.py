"""Top-k BM25 without reading common words' posting lists whole: the same documents and scores.

At a million memories a common word's posting list in one segment holds tens of thousands
of postings, and reading one costs ~30 µs a block of 128 (index/postings.py): scoring every
posting of every query word was half of a recall's CPU. Two ways skip most of them
(scoring.score asks here first for each segment; a query whose lists there are all shorter
than LONG_POSTINGS, or with accented exact words, is scored by _segment_best, every posting):

- All words: only documents holding the rarest word can match, so its list is read whole and
  each other word's blocks are read only where they hold one of those documents (a block's
  header names its last document).
- Any word (max-score): each word's contribution to a document is at most what its blocks'
  headers allow (heaviest weight, shortest length). Words are read whole in the order of that
  bound, highest first, until the k-th best score so far is higher than the remaining words'
  bounds together: no document none of them holds can then reach the first k, and the
  remaining words are looked up, block by block, for the documents that still can.

A document's score is then added up exactly as _segment_best adds it — the same terms'
values, in the query's order, from 0 — so the floats are the same; bounds are widened by a
relative 1e-6 (weights are stored as float32) and documents are dropped only below the k-th
best score less twice the tie margin, so every document that ties with the last place to six
decimals is still returned. tests/index/test_pruning.py compares both over generated indexes.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from .postings import Blocks, read_blocks

# A list of fewer postings than this in a segment is read whole (and kept, scoring.py).
LONG_POSTINGS = 1024
# Blocks' headers kept across queries (~40 bytes a block: ~8 MB at most).
CACHE_BLOCKS = 200_000
WIDEN = 1.000001  # a bound's relative margin: float32 weights, rounding of the bound itself
Vector = tuple[Any, Any]


class BlockCache:
    """Each (segment, field, term)'s block headers, read once (least recent out)."""

    def __init__(self, limit: int = CACHE_BLOCKS) -> None:
        self.limit = limit
        self._found: OrderedDict[tuple[str, str, str], Blocks | None] = OrderedDict()
        self._size = 0

    def get(self, segment: Any, sid: str, fieldname: str, text: str) -> Blocks | None:
        key = (sid, fieldname, text)
        if key in self._found:
            self._found.move_to_end(key)
            return self._found[key]
        found = self._found[key] = read_blocks(segment, fieldname, text)
        self._size += 1 if found is None else len(found.last)
        while self._size > self.limit and len(self._found) > 1:
            _, gone = self._found.popitem(last=False)
            self._size -= 1 if gone is None else len(gone.last)
        return found

    def forget_except(self, live: set[str]) -> None:
        """Drop the headers of segments no longer in the index."""
        for key in [k for k in self._found if k[0] not in live]:
            gone = self._found.pop(key)
            self._size -= 1 if gone is None else len(gone.last)


class Lists:
    """One segment's terms for one query: whole vectors (scoring._term_vector), their
    bounds, and their values at given documents read block by block."""

    def __init__(
        self,
        np: Any,
        segment: Any,
        sid: str,
        blocks: BlockCache,
        whole: Callable[[str, tuple[str, ...], float], Vector],
        kept: Callable[[str, tuple[str, ...], float], Vector | None],
        field_values: Callable[[str, str, Any], Any],
        norms: Callable[[str], Any],
        idf: Callable[[str, str], float],
    ) -> None:
        self.np, self.segment, self.sid, self.blocks = np, segment, sid, blocks
        self.whole, self.kept, self.field_values, self.norms, self.idf = (
            whole,
            kept,
            field_values,
            norms,
            idf,
        )

    def size(self, text: str, fields: tuple[str, ...]) -> int:
        """Return how many postings the term has in the segment over `fields` (an upper
        bound of its documents there)."""
        total = 0
        for fieldname in fields:
            found = self.blocks.get(self.segment, self.sid, fieldname, text)
            if found is not None:
                total += found.postings
            elif (fieldname, text) in self.segment:
                total += self.segment.doc_frequency(fieldname, text)
        return total

    def bound(self, text: str, fields: tuple[str, ...], boost: float, k1: float) -> float:
        """Return at least the highest value the term's vector has in the segment."""
        found = self.kept(text, fields, boost)
        if found is not None:
            return float(found[1].max()) * WIDEN if len(found[1]) else 0.0
        total = 0.0
        for fieldname in fields:
            blocks = self.blocks.get(self.segment, self.sid, fieldname, text)
            if blocks is None:
                vector = self.whole(text, (fieldname,), boost)
                total += float(vector[1].max()) if len(vector[1]) else 0.0
                continue
            np = self.np
            tf = np.frombuffer(blocks.heaviest, np.float64)
            shortest = self.norms(fieldname)[np.frombuffer(blocks.shortest, np.uint8)]
            idf = self.idf(fieldname, text)
            total += float((idf * ((tf * (k1 + 1)) / (tf + shortest))).max()) * boost
        return total * WIDEN

    def at(self, text: str, fields: tuple[str, ...], boost: float, documents: Any) -> Vector:
        """Return which of `documents` (ascending) hold the term and the term's vector
        value at each (0 elsewhere): scoring._term_vector's values, from the blocks that
        can hold them."""
        np = self.np
        held = np.zeros(len(documents), dtype=bool)
        values = np.zeros(len(documents))
        found = self.kept(text, fields, boost)
        parts: list[tuple[Any, Any]] = []
        if found is None:
            for fieldname in fields:
                ids, scores = self._field_at(text, fieldname, boost, documents)
                if len(ids):
                    parts.append((ids, scores))
        elif len(found[0]):
            parts.append(found)
        for ids, scores in parts:  # fields added in order from 0, as _term_vector adds them
            place = np.minimum(np.searchsorted(ids, documents), len(ids) - 1)
            hit = ids[place] == documents
            values[hit] += scores[place[hit]]
            held |= hit
        return held, values

    def _field_at(self, text: str, fieldname: str, boost: float, documents: Any) -> Vector:
        np = self.np
        blocks = self.blocks.get(self.segment, self.sid, fieldname, text)
        if blocks is None or 2 * len(documents) >= blocks.postings:
            return self.whole(text, (fieldname,), boost)
        last = np.frombuffer(blocks.last, np.int32)
        which = np.unique(np.searchsorted(last, documents))
        postings = blocks.read(which[which < len(last)].tolist())
        values = self.field_values(fieldname, text, postings)
        ids = np.frombuffer(postings[0], np.int32)
        return ids, values * boost if boost != 1.0 else values


def all_words(
    lists: Lists, query: Any, eligible: Any, fields: tuple[str, ...], sizes: dict[str, int]
) -> tuple[Any, Any, int]:
    """Return the documents (ascending) holding every one of the query's terms among
    `eligible` (a mask), their scores and the count of distinct terms each holds (`sizes`:
    each term's postings in the segment)."""
    np = lists.np
    distinct = list(dict.fromkeys(query.terms))
    order = sorted(distinct, key=lambda t: (sizes[t], t))
    ids, scores = lists.whole(order[0], fields, 1.0)
    chosen = eligible[ids]
    documents = ids[chosen]
    values = {order[0]: scores[chosen]}
    for text in order[1:]:
        if not len(documents):
            break
        held, found = lists.at(text, fields, 1.0, documents)
        documents = documents[held]
        values = {t: v[held] for t, v in values.items()}
        values[text] = found[held]
    total = np.zeros(len(documents))
    if len(documents):
        for text in query.terms:
            total += values[text]
    return documents, total, len(distinct)


def any_word(
    lists: Lists,
    query: Any,
    eligible: Any,
    limit: int,
    margin: float,
    fields: tuple[str, ...],
    k1: float,
) -> tuple[Any, Any, Any]:
    """Return the documents (ascending) among `eligible` that hold any of the query's
    terms or extra terms and can be among the `limit` best (or within `margin` of the
    last of them), their scores and how many of the distinct terms each holds."""
    np = lists.np
    times = Counter(query.terms)
    extra = Counter(t for t in query.extra if t not in times)
    words: list[tuple[str, tuple[str, ...], float]] = [(t, fields, 1.0) for t in times] + [
        (t, ("content",), query.extra_boost) for t in extra
    ]
    bounds = {
        w: lists.bound(*w, k1) * (times[w[0]] if w[1] is fields else extra[w[0]]) for w in words
    }
    words.sort(key=lambda w: -bounds[w])
    size = len(eligible)
    sums, seen = np.zeros(size), np.zeros(size, dtype=bool)
    rest = sum(bounds.values())
    read = 0
    for word in words:
        last = _kth(np, sums, seen & eligible, limit)
        if last is not None and rest < last - margin:
            break
        ids, scores = lists.whole(*word)
        sums[ids] += scores * (times[word[0]] if word[1] is fields else extra[word[0]])
        seen[ids] = True
        rest -= bounds[word]
        read += 1
    documents = np.flatnonzero(seen & eligible)
    last = _kth(np, sums, seen & eligible, limit)
    if last is not None and read < len(words):
        documents = documents[sums[documents] + max(rest, 0.0) >= last - margin]
    # Scores summed in the query's order over the segment (the words read whole added as
    # whole vectors, the others' values at the documents left; 0 added is no change)
    whole = set(words[:read])
    looked = {w: lists.at(*w, documents) for w in words[read:]}
    total = np.zeros(size)
    holders = np.zeros(size, dtype=np.int32)
    counted = [(t, fields, 1.0) for t in times]
    added = [(t, fields, 1.0) for t in query.terms]
    added += [(t, ("content",), query.extra_boost) for t in query.extra if t not in times]
    for words_, into, part in ((added, total, 1), (counted, holders, 0)):
        for word in words_:
            if word in whole:
                ids, scores = lists.whole(*word)
                into[ids] += scores if part else 1
            else:
                into[documents] += looked[word][part]
    return documents, total[documents], holders[documents]


def _kth(np: Any, sums: Any, mask: Any, limit: int) -> float | None:
    """Return the `limit`-th highest of `sums` where `mask` is set (None: fewer)."""
    values = sums[mask]
    if len(values) < limit:
        return None
    return float(np.partition(values, len(values) - limit)[len(values) - limit])


def segment_best(
    segment: Any,
    stats: Any,
    cache: Any,
    query: Any,
    b: float,
    k1: float,
    limit: int,
    keep: Any,
    *,
    count: bool,
) -> tuple[list[tuple[float, int]], list[int]] | None:
    """Return scoring._segment_best's pairs and counts for a query one of whose words has
    LONG_POSTINGS or more postings in the segment, reading fewer of them (None: any other
    query, which _segment_best scores itself)."""
    from .scoring import SCORED_FIELDS, TIE_MARGIN, _score_key, _term_vector, segment_id

    extra = [t for t in query.extra if t not in query.terms]
    if cache.plain or limit < 1 or (query.exact and query.exact_boost):
        return None
    if query.require_all and extra:
        return None
    import numpy as np

    def whole(text: str, fields: tuple[str, ...], boost: float) -> Vector:
        return _term_vector(segment, stats, cache, text, fields, boost, b, k1)

    lists = Lists(
        np,
        segment,
        segment_id(segment),
        cache.blocks,
        whole,
        lambda text, fields, boost: stats.vector(_score_key(segment, fields, text, boost)),
        lambda fieldname, text, postings: stats.field_values(
            segment, fieldname, text, postings, cache, b, k1
        ),
        lambda fieldname: stats.norm_table(fieldname, b, k1),
        lambda fieldname, text: stats.idf(fieldname, text, cache),
    )
    sizes = {t: lists.size(t, SCORED_FIELDS) for t in set(query.terms)}
    if max(sizes.values(), default=0) < LONG_POSTINGS:
        return None
    eligible = np.ones(segment.doc_count_all(), dtype=bool)
    eligible[cache.deleted(segment)] = False
    if keep is not None:
        eligible &= keep
    if query.require_all:
        documents, values, distinct = all_words(lists, query, eligible, SCORED_FIELDS, sizes)
        holders = np.full(len(documents), distinct, dtype=np.int32)
    else:
        margin = 2 * TIE_MARGIN
        documents, values, holders = any_word(
            lists, query, eligible, limit, margin, SCORED_FIELDS, k1
        )
    if 0 < limit < len(documents):
        last = np.partition(values, len(values) - limit)[len(values) - limit]
        chosen = values >= last - TIE_MARGIN
        documents, values, holders = documents[chosen], values[chosen], holders[chosen]
    counts = holders.tolist() if count else []
    return list(zip(values.tolist(), documents.tolist(), strict=True)), counts


def live_frequency(segment: Any, fieldname: str, text: str, cache: Any) -> int:
    """Return how many of a segment's live documents hold `text` in `fieldname`: its
    postings less its deleted documents', these looked for only in the blocks that can
    hold them (a long list is not read whole for its document frequency)."""
    if not segment.has_deletions():
        return int(segment.doc_frequency(fieldname, text))
    from .scoring import segment_id

    sid = segment_id(segment)
    known = cache.lacks is not None and cache.lacks(sid, fieldname, text)
    blocks = None if known else cache.blocks.get(segment, sid, fieldname, text)
    gone = segment.deleted_docs_set
    if blocks is None:
        ids = cache.postings(segment, fieldname, text)[0]
        return len(ids) - len(gone.intersection(ids)) if len(ids) else 0
    import numpy as np

    last = np.frombuffer(blocks.last, np.int32)
    deleted = np.sort(np.fromiter(gone, dtype=np.int64, count=len(gone)))
    which = np.unique(np.searchsorted(last, deleted))
    ids = blocks.read(which[which < len(last)].tolist())[0]
    return blocks.postings - len(gone.intersection(ids))
