"""The contradiction hint, asked after the add returned (service/hints.py), names the same
memories as the add's own hint did before, when it searched before writing; and it is
computed outside the vault lock, so a writer in another process never waits for it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from memstore.core.contradictions import disagreement
from memstore.core.model import Contradiction
from memstore.core.similar import containment, term_sets
from memstore.index import Query
from memstore.index import reader as index_reader
from memstore.service import hints
from memstore.service.store import Store
from memstore.vault.files import Vault

PAIRS = Path(__file__).resolve().parents[1] / "data" / "contradictions.jsonl"


def hint_before_the_write(store: Store, body: str, workspace: str) -> list[Contradiction]:
    """The hint as `Writer.add` computed it until the ninth session, before the new memory
    was written (kept here as the reference): the 5 best any-word hits of the workspace."""
    indexer = store.indexer
    search = indexer.search
    query = Query.of(body)
    if search.keeps_rarest():
        holders = search.term_frequencies(query)
        rarest = sorted(query.terms, key=lambda t: (holders[t], t))[: search.any_term_limit]
        if not any(holders[t] for t in rarest):
            query = Query(body, tuple(t for t in query.terms if holders[t]))
    hits = search.search(query, workspaces={workspace}, limit=5, any_term=True)
    entries = {e.path: e for e in indexer.by_path([h.document.key for h in hits])}
    close = [
        (h.document, entries[h.document.key])
        for h in hits
        if h.document.key in entries
        and not entries[h.document.key].archived
        and entries[h.document.key].kind not in ("core", "trace")
    ]
    found = []
    if close:
        mine, *theirs = term_sets([body, *(doc.content for doc, _ in close)])
        for (doc, entry), terms in zip(close, theirs, strict=True):
            if containment(mine, terms) < 0.5:
                continue
            one = disagreement(body, doc.content)
            if one and not indexer.superseded_by(entry.id):
                found.append(Contradiction(entry.id, one.kind, one.detail))
    return found


@pytest.mark.parametrize("large", [True, False])
def test_the_hint_after_the_add_names_what_the_hint_before_it_named(
    store: Store, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """Every pair of tests/data/contradictions.jsonl in one workspace: the stored sides first,
    then each new side, its hint asked before the add (the old way) and after it (now)."""
    if large:  # the any-word query keeps its 3 rarest terms, as in a vault of 1,000 or more
        monkeypatch.setattr(index_reader, "COMMON_TERM_MIN", 50)
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        store.add(row["a"], workspace="web")
    compared = hinted = 0
    differ: list[object] = []
    for row in rows:
        body = row["b"].strip() + "\n"
        before = hint_before_the_write(store, body, "web")
        result = store.add(row["b"], workspace="web")
        if result.status != "added":
            continue
        assert result.contradicts == ()  # the add itself looks for none
        after = store.hint(result, row["b"]).contradicts
        if sorted(after, key=str) != sorted(before, key=str):
            differ.append((row["b"], before, list(after)))
        compared += 1
        hinted += bool(after)
    assert differ == []
    assert compared > 150 and hinted > 40


def test_the_hint_is_asked_while_another_writer_holds_the_vault(store: Store) -> None:
    """Another process's writer holding the vault lock does not hold up a hint (it used to
    be looked for inside the add's transaction)."""
    old = store.add(
        "The dev server listens on port 8080; change it in vite.config.ts.", workspace="web"
    )
    text = "The dev server listens on port 3000; change it in vite.config.ts."
    added = store.add(text, workspace="web")
    holding, release = threading.Event(), threading.Event()

    def writer() -> None:
        with Vault(store.vault.root).lock(5.0):
            holding.set()
            release.wait(30)

    other = threading.Thread(target=writer)
    other.start()
    try:
        assert holding.wait(30)
        hinted = store.hint(added, text)
    finally:
        release.set()
        other.join(timeout=60)
    assert not other.is_alive(), "the other writer did not let the vault go"
    assert [(c.id, c.detail) for c in hinted.contradicts] == [(old.id, "port 3000 vs 8080")]


def test_no_hint_for_a_duplicate_or_a_trace(store: Store) -> None:
    stored = "The dev server listens on port 8080; change it in vite.config.ts."
    changed = "The dev server listens on port 3000; change it in vite.config.ts."
    store.add(stored, workspace="web")
    trace = store.add(changed, workspace="web", kind="trace")
    assert store.hint(trace, changed).contradicts == ()
    again = store.add(changed, workspace="web")
    assert again.status == "duplicate_merged" and store.hint(again, changed).contradicts == ()
    assert hints.CONTRADICTION_CANDIDATES == 5
