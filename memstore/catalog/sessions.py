"""Memories one agent session wrote are each other's context: a hit raises its session neighbours.

A session's memories, in the order they were written (front matter `session`, then
`created`), tell one story: "the nightly build broke: the cache key changed" is followed by
"fixed by pinning the lockfile hash", and the second names nothing the question "why did
the nightly build break?" asks. In a conversation the answer to a question is often the
reply to the turn that holds its words (docs/retrieval.md, "Memories of the same session").
So each of the first hits lends the memory written just before it and the one just after it
in its session a share of its score (SESSION_BOOST); a neighbour that no view found joins
the candidates with that share alone. It reorders and adds hits, never makes one confident:
what a hit holds of the query decides its tier, not its score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memstore.catalog.indexer import Entry, Indexer
from memstore.core.ranking import Candidate
from memstore.index import Document

# A memory next to one of the first SESSION_LENDERS hits in its session gains this share of
# that hit's score (the larger share, when it is next to two). 0: off.
SESSION_BOOST = 0.2
SESSION_LENDERS = 20
# Memories written further apart than this are different work even under one session id
# (a server that ran for days): they are not each other's neighbours.
SESSION_SPAN = timedelta(days=1)
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class Beside:
    """The candidates after the session's neighbours joined: scores, documents, entries."""

    candidates: list[Candidate]
    values: dict[str, float]
    documents: dict[str, Document]
    entries: dict[str, Entry]


def with_session_neighbours(
    indexer: Indexer,
    candidates: list[Candidate],
    values: Mapping[str, float],
    documents: Mapping[str, Document],
    entries: Mapping[str, Entry],
    *,
    scope: set[str] | None,
    archived: bool,
) -> Beside:
    """Return the candidates with each neighbour of the first SESSION_LENDERS (by score) in
    its session raised by SESSION_BOOST × that hit's score; a neighbour no view found joins
    (in `scope`; archived ones only with `archived`). Unchanged when no lender records a
    session."""
    found = Beside(list(candidates), dict(values), dict(documents), dict(entries))
    if SESSION_BOOST <= 0:
        return found
    ranked = sorted(candidates, key=lambda c: (-round(values[c.key], 6), c.key))
    lenders = [entries[c.key] for c in ranked[:SESSION_LENDERS] if c.key in entries]
    lent: dict[str, float] = {}
    for lender in lenders:
        window = _window(lender.created) if lender.session else None
        if window is None:
            continue
        for path in indexer.manifest.beside(lender, *window):
            share = SESSION_BOOST * values[lender.path]
            lent[path] = max(lent.get(path, 0.0), share)
    if not lent:
        return found
    _join(indexer, found, [p for p in lent if p not in found.documents], scope, archived)
    for path, share in lent.items():
        if path in found.documents:
            found.values[path] = found.values.get(path, 0.0) + share
    return found


def _window(created: str) -> tuple[str, str] | None:
    """Return the `created` bounds of a memory's neighbours (None: no readable time, so no
    order to be next in)."""
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    when = when.astimezone(UTC) if when.tzinfo else when
    return (when - SESSION_SPAN).strftime(_STAMP), (when + SESSION_SPAN).strftime(_STAMP)


def _join(
    indexer: Indexer, found: Beside, paths: list[str], scope: set[str] | None, archived: bool
) -> None:
    """Add the neighbours at `paths` that no view found to `found`, as candidates holding
    nothing of the query (what decay and usage need comes from their manifest entries)."""
    if not paths:
        return
    documents = indexer.search.get(paths)
    for entry in indexer.by_path(paths):
        document = documents.get(entry.path)
        if document is None or (scope is not None and document.workspace not in scope):
            continue
        if entry.archived and not archived:
            continue
        found.documents[entry.path] = document
        found.entries[entry.path] = entry
        found.candidates.append(
            Candidate(
                key=entry.path,
                lexical=0.0,
                coverage=0.0,
                strict=False,
                entities=0,
                created=entry.created,
                last_recalled=entry.last_recalled,
                seen=entry.seen,
                recalled=entry.recalled,
                confirmed=entry.confirmed,
            )
        )
