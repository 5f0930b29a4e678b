"""Memories one agent session wrote are each other's context: a hit raises its session neighbours.

A session's memories, in the order they were written (front matter `session`, then
`created`), tell one story: "the nightly build broke: the cache key changed" is followed by
"pinned the lockfile hash into the key", which says little of what "why did the nightly
build break?" asks. In a conversation the answer to a question is often the reply to the
turn that holds its words (docs/retrieval.md, "Memories of the same session"). So each of
the first k hits lends the memory written just before it and the one just after it in its
session a share of its score (SESSION_BOOST), when a view found that memory too. It
reorders hits, never adds one and never makes one confident: what a hit holds of the query
decides its tier, not its score.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from memstore.catalog.indexer import Entry, Indexer
from memstore.core.ranking import Candidate

# A memory next to one of the first k hits in its session gains this share of that hit's
# score (the larger share, when it is next to two). 0: off.
SESSION_BOOST = 0.2
# Memories written further apart than this are different work even under one session id
# (a server that ran for days): they are not each other's neighbours.
SESSION_SPAN = timedelta(days=1)
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


def session_neighbours_raised(
    indexer: Indexer,
    candidates: list[Candidate],
    values: Mapping[str, float],
    entries: Mapping[str, Entry],
    k: int,
) -> dict[str, float]:
    """Return the candidates' scores (`values`), each candidate written just before or
    after one of the first `k` in its session raised by SESSION_BOOST × that one's score
    (the scores lent are the ones given). Unchanged when none of them records a session."""
    raised = dict(values)
    if SESSION_BOOST <= 0:
        return raised
    ranked = sorted(candidates, key=lambda c: (-round(values[c.key], 6), c.key))
    lent: dict[str, float] = {}
    for candidate in ranked[:k]:
        lender = entries.get(candidate.key)
        window = _window(lender.created) if lender is not None and lender.session else None
        if lender is None or window is None:
            continue
        share = SESSION_BOOST * values[lender.path]
        for path in indexer.manifest.beside(lender, *window):
            if path in values:
                lent[path] = max(lent.get(path, 0.0), share)
    for path, share in lent.items():
        raised[path] += share
    return raised


def _window(created: str) -> tuple[str, str] | None:
    """Return the `created` bounds of a memory's neighbours (None: no readable time, so no
    order to be next in)."""
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    when = when.astimezone(UTC) if when.tzinfo else when
    return (when - SESSION_SPAN).strftime(_STAMP), (when + SESSION_SPAN).strftime(_STAMP)
