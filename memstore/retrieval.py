"""Recall's pipeline over the index: lexical and entity views, fused, ranked and tiered."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from index import Document, IndexHit, extract_entities
from memstore.indexer import Entry, Indexer
from memstore.model import Hit, SearchResult
from memstore.ranking import Candidate, is_confident, is_dominant, score

CANDIDATES = 30  # per view, before ranking cuts to k


def find(
    indexer: Indexer, text: str, scope: set[str] | None, k: int, now: datetime
) -> SearchResult:
    """Return the `k` best memories for `text` in `scope` (None: every workspace)."""
    index = indexer.search
    strict = index.search(text, workspaces=scope, limit=CANDIDATES)
    loose = [] if strict else index.search(text, workspaces=scope, limit=CANDIDATES, any_term=True)
    lexical: dict[str, IndexHit] = {h.document.key: h for h in strict or loose}
    entities = [entity for entity, _ in extract_entities(text)]
    named = index.entity_keys(entities) if entities else {}
    documents: dict[str, Document] = {key: h.document for key, h in lexical.items()}
    others = sorted(
        (key for key in named if key not in lexical), key=lambda key: (-named[key], key)
    )
    documents.update(index.get(others[:CANDIDATES]))
    if scope is not None:
        documents = {key: doc for key, doc in documents.items() if doc.workspace in scope}
    if not documents:
        return SearchResult()
    entries = {entry.path: entry for entry in indexer.by_path(list(documents))}
    candidates = [
        _candidate(
            key,
            lexical.get(key),
            bool(strict),
            named.get(key, 0),
            entries.get(key),
            index.coverage(doc, text),
        )
        for key, doc in documents.items()
    ]
    best = max(c.lexical for c in candidates)
    ranked = sorted(
        candidates, key=lambda c: (-round(score(c, best, len(entities), now), 6), c.key)
    )[:k]
    unknown = index.unknown_terms(text)
    values = [score(c, best, len(entities), now) for c in ranked]
    hits = [
        _hit(documents[c.key], c, value, unknown) for c, value in zip(ranked, values, strict=True)
    ]
    runner_up = values[1] if len(values) > 1 else 0.0
    if hits[0].weak and is_dominant(values[0], runner_up, hits[0].coverage):
        hits[0] = replace(hits[0], weak=False)
    return SearchResult(tuple(hits), weak=all(hit.weak for hit in hits))


def hit_for(document: Document, score: float, weak: bool) -> Hit:
    """Return a hit for a memory found through another (its correction), not by the query."""
    candidate = Candidate(document.key, 0.0, 0.0, False, 0)
    return replace(_hit(document, candidate, score, 0), weak=weak, view="correction")


def _candidate(
    key: str,
    hit: IndexHit | None,
    strict: bool,
    entities: int,
    entry: Entry | None,
    coverage: float,
) -> Candidate:
    signals = {}
    if entry is not None:
        signals = {
            "created": entry.created,
            "last_recalled": entry.last_recalled,
            "seen": entry.seen,
            "recalled": entry.recalled,
            "confirmed": entry.confirmed,
        }
    return Candidate(
        key=key,
        lexical=hit.score if hit else 0.0,
        coverage=hit.coverage if hit else coverage,
        strict=bool(hit) and strict,
        entities=entities,
        **signals,  # type: ignore[arg-type]
    )


def _hit(doc: Document, candidate: Candidate, value: float, unknown: int) -> Hit:
    views = [
        name
        for name, found in (
            ("lexical" if candidate.strict else "any-word", candidate.lexical > 0),
            ("entity", candidate.entities > 0),
        )
        if found
    ]
    return Hit(
        id=doc.id,
        workspace=doc.workspace,
        kind=doc.kind,
        path=doc.key,
        content=doc.content,
        keywords=doc.keywords,
        source=doc.source,
        created=doc.created,
        seen=doc.seen,
        score=round(value, 4),
        weak=not is_confident(candidate, unknown),
        coverage=candidate.coverage,
        view="+".join(views),
    )
