"""BM25F term at a time in plain Python: index/scoring.py's sums without numpy, the same floats.

A process that answers one search and exits (a CLI call without a daemon) spent more CPU
importing numpy (~60–180 ms, with the load) than scoring: this module does what
scoring.py's numpy arrays do with dictionaries and sets, in the same IEEE operations in
the same order, so every score is the same double (tests/index/test_plain_scoring.py
compares both over generated indexes and queries). A daemon keeps numpy: its caches
serve many queries, where arrays cost ~2 ns a posting against ~100 ns here.

A vector here is (document numbers ascending, scores) as two lists; `codes` are a
segment's length bytes (`bytes`), a workspace filter and the deleted documents are sets.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable
from typing import Any

TIE_MARGIN = 1e-5  # scoring.TIE_MARGIN (kept equal by a test)
Vector = tuple[list[int], list[float]]


def field_values(
    ids: Iterable[int],
    weights: Any,
    idf: float,
    table: tuple[float, ...],
    codes: bytes,
    k1: float,
) -> list[float]:
    """Return whoosh.scoring.bm25 for each posting: idf × ((tf × (k1 + 1)) / (tf + length
    part)), the length part looked up by the document's length byte (scoring's numpy
    expression, one element at a time: the same operations, the same doubles)."""
    k1_plus = k1 + 1
    if len(weights) == 1:  # one weight kept for every posting (scoring.read_postings)
        tf = weights[0]
        top = tf * k1_plus
        return [idf * (top / (tf + table[codes[n]])) for n in ids]
    pairs = zip(ids, weights, strict=True)
    return [idf * ((tf * k1_plus) / (tf + table[codes[n]])) for n, tf in pairs]


def summed(parts: list[Vector]) -> Vector:
    """Return fields' vectors of one term added up, field by field, from 0 (scoring's
    `summed[ids] += values` over a zeroed array)."""
    if not parts:
        return [], []
    if len(parts) == 1:
        return parts[0]
    total: dict[int, float] = {}
    for ids, values in parts:
        for n, value in zip(ids, values, strict=True):
            total[n] = total.get(n, 0.0) + value
    documents = sorted(total)
    return documents, [total[n] for n in documents]


def times(vector: Vector, boost: float) -> Vector:
    """Return the vector's scores times `boost` (unchanged for 1.0, as scoring does)."""
    if boost == 1.0:
        return vector
    return vector[0], [value * boost for value in vector[1]]


def live_length(codes: bytes, deleted: Collection[int], lengths: tuple[int, ...]) -> int:
    """Return the summed length of the live documents' field (`lengths`: a byte's length,
    0 for an absent field), as scoring.segment_field_lengths."""
    total = sum(map(lengths.__getitem__, codes))
    return total - sum(lengths[codes[n]] for n in deleted)


def segment_best(
    query: Any,
    vector: Any,
    deleted: Collection[int],
    keep: Collection[int] | None,
    limit: int,
    *,
    count: bool,
    exact_field: str,
    scored_fields: tuple[str, ...],
) -> tuple[list[tuple[float, int]], list[int]]:
    """Return one segment's best (score, document) pairs and, with `count`, how many of
    the query's distinct terms each holds: scoring._segment_best without arrays.

    `vector(text, fields, boost, b)` returns a term's (documents, scores) in the segment.
    A document's score gets the additions the array gets, in the same order from 0.0: in
    an all-terms query the terms' scores of a document holding every term; a document
    matched by none of the query's own terms keeps 0.0 (the array is zeroed there) and
    takes only the extra terms'.
    """
    total: dict[int, float] = {}
    matched: set[int] = set()
    holders: dict[int, int] | None = None
    if query.require_all:
        vectors = {t: vector(t, scored_fields, 1.0, None) for t in set(query.terms)}
        if all(ids for ids, _ in vectors.values()):
            held = [set(ids) for ids, _ in vectors.values()]
            holders = {}
            for ids in held:
                for n in ids:
                    holders[n] = holders.get(n, 0) + 1
            matched = set.intersection(*held)
            for text in query.terms:
                for n, value in zip(*vectors[text], strict=True):
                    if n in matched:
                        total[n] = total.get(n, 0.0) + value
    else:
        holders = {} if count else None
        counted: set[str] = set()
        for text in query.terms:
            ids, values = vector(text, scored_fields, 1.0, None)
            for n, value in zip(ids, values, strict=True):
                total[n] = total.get(n, 0.0) + value
            matched.update(ids)
            if holders is not None and text not in counted:
                for n in ids:
                    holders[n] = holders.get(n, 0) + 1
                counted.add(text)
    _add_extra(query, vector, total, matched, exact_field)
    matched.difference_update(deleted)
    if keep is not None:
        matched.intersection_update(keep)
    documents = sorted(matched)
    values = [total.get(n, 0.0) for n in documents]
    if 0 < limit < len(documents):
        last = heapq.nlargest(limit, values)[-1]  # np.partition's (len − limit)-th smallest
        chosen = [i for i, value in enumerate(values) if value >= last - TIE_MARGIN]
        documents = [documents[i] for i in chosen]
        values = [values[i] for i in chosen]
    counts: list[int] = []
    if count:
        counts = [0] * len(documents) if holders is None else [holders.get(n, 0) for n in documents]
    return list(zip(values, documents, strict=True)), counts


def _add_extra(
    query: Any, vector: Any, total: dict[int, float], matched: set[int], exact_field: str
) -> None:
    """Add the extra (content only, boosted) and exact terms' scores (scoring's order)."""
    for text in query.extra:
        if text in query.terms:
            continue
        ids, values = vector(text, ("content",), query.extra_boost, None)
        for n, value in zip(ids, values, strict=True):
            total[n] = total.get(n, 0.0) + value
        matched.update(ids)
    if query.exact_boost:
        for text in query.exact:
            ids, values = vector(text, (exact_field,), query.exact_boost, 0.0)
            for n, value in zip(ids, values, strict=True):
                # the array adds value × matched: 0.0 for the others, who are never returned
                total[n] = total.get(n, 0.0) + (value if n in matched else 0.0)


def holding(postings: Iterable[Any]) -> frozenset[int]:
    """Return the documents of any of the posting lists (a workspace filter)."""
    found: set[int] = set()
    for ids in postings:
        found.update(ids)
    return frozenset(found)
