"""The contradiction hint of an add, computed after the add returned: never under the vault lock.

`Store.add` returns once the memory is durable (file, commit, index, journal) and the vault
lock is released; whoever shows the add (the CLI, MCP's memory_add, the daemon's add) then
asks `Store.hint` which memories of its workspace the new one disagrees with. So concurrent
writers never wait for a hint, and what a person or agent sees is what it was.

The candidates are the memories closest to the new text, as the add's search found them
before: an any-word BM25 search of the workspace (in a large index its rarest terms), the
new memory itself left out. Each close one (term containment ≥ CONTRADICTION_CLOSE) is
compared by memstore.core.contradictions.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from memstore.core.contradictions import disagreement
from memstore.core.model import AddResult, Contradiction
from memstore.core.similar import containment, term_sets
from memstore.index import Query, SearchIndex, SearchIndexError
from memstore.service.checks import check_text

if TYPE_CHECKING:
    from memstore.service.store import Store

CONTRADICTION_CANDIDATES = 5  # closest memories an add compares itself with
# Term containment a pair needs before it is compared (the audit's candidate pairs too): a
# changed value lowers the overlap, so dedupe's 0.7 would miss short memories.
CONTRADICTION_CLOSE = 0.5
UNHINTED = ("core", "trace")  # kinds never named as the memory a new one contradicts
log = logging.getLogger(__name__)


def hinted(store: Store, result: AddResult, text: str) -> AddResult:
    """Return `result` with the memories of its workspace the new memory (`text`, as given
    to add) contradicts; unchanged unless it added a new memory that is not a trace.

    Only a workspace's own memories: one of `global` may be the rule a workspace's memory
    makes an exception to, and superseding it would mark it corrected in every workspace.
    Left out: what the add supersedes, archived and superseded memories, core memories (a
    person's rules, sent beside every recall, which a supersede does not take out of that
    block) and traces (a record of one session, not a claim that stays true; the capture
    hook stores them and never reads a hint). Whatever goes wrong in it is logged, never
    raised: the memory is stored already. Called under the store's mutex (Reader.hint).
    """
    if result.status != "added":
        return result
    try:
        try:
            found = _contradicted(store, result, check_text(text))
        except SearchIndexError as err:  # damage the add's catch-up did not meet
            store.maintenance.rebuild_damaged(err)
            found = _contradicted(store, result, check_text(text))
    except SearchIndexError as err:
        log.warning("could not look for memories the new one contradicts: %s", err)
        return result
    except Exception:  # a hint: whatever goes wrong in it must not fail a stored add
        log.warning("could not look for memories the new one contradicts", exc_info=True)
        return result
    return replace(result, contradicts=found)


def _contradicted(store: Store, result: AddResult, body: str) -> tuple[Contradiction, ...]:
    indexer = store.indexer
    mine = indexer.by_path([result.path])
    if mine and mine[0].kind == "trace":
        return ()
    skip = {result.id, *(mine[0].supersedes if mine else ())}
    hits = indexer.search.search(
        _candidate_query(indexer.search, body),
        workspaces={result.workspace},
        limit=CONTRADICTION_CANDIDATES + 1,  # the new memory itself is among them
        any_term=True,
    )
    hits = [h for h in hits if h.document.key != result.path][:CONTRADICTION_CANDIDATES]
    entries = {e.path: e for e in indexer.by_path([h.document.key for h in hits])}
    close = [
        (h.document, entry)
        for h in hits
        if (entry := entries.get(h.document.key)) is not None
        and entry.id not in skip
        and not entry.archived
        and entry.kind not in UNHINTED
    ]
    if not close:
        return ()
    # the candidates left, read in one analysis with the new text
    terms, *theirs = term_sets([body, *(doc.content for doc, _ in close)])
    found = []
    for (doc, entry), terms_of_doc in zip(close, theirs, strict=True):
        if containment(terms, terms_of_doc) < CONTRADICTION_CLOSE:
            continue
        found_one = disagreement(body, doc.content)
        if found_one and not indexer.superseded_by(entry.id):
            found.append(Contradiction(entry.id, found_one.kind, found_one.detail))
    return tuple(found)


def _candidate_query(search: SearchIndex, body: str) -> Query:
    """Return the query that finds the memories a new `body` is compared with: its text,
    unless its rarest words are all its own.

    A large index's any-word search keeps a query's few rarest terms (`any_term_limit`); a
    new text's own words (a ticket, a build id, a host name) are the rarest of all and match
    nothing, so with as many of them no memory was ever compared (0 of 200 changed memories
    of a 100,000-memory vault found, docs/benchmarks.md section 9, fourth pass). Then the
    words some memory holds are searched instead: the same hits where any is found (a word
    no memory holds adds nothing to a score), the rarest of them in a large index.
    Asked after the add, the search's order of rarity is the same (every term of the new
    memory's has one holder more).
    """
    query = Query.of(body)
    if not search.keeps_rarest():
        return query  # every term is searched: a word no memory holds only adds nothing
    # the new memory, indexed already, holds each of its terms: the others are counted
    holders = {t: max(n - 1, 0) for t, n in search.term_frequencies(query).items()}
    rarest = sorted(query.terms, key=lambda t: (holders[t], t))[: search.any_term_limit]
    if any(holders[t] for t in rarest):
        return query
    return Query(body, tuple(t for t in query.terms if holders[t]))
