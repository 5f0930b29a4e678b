"""How the semantic view's list joins the lexical one (retrieval.fuse_similar): it may add and
reorder weak hits, never demote a confident one, and reorders only when the views agree."""

from __future__ import annotations

from dataclasses import replace

from memstore.catalog.retrieval import SEMANTIC_HEAD, fuse_similar
from memstore.core.model import Hit
from memstore.service.store import Store

TEXTS = {
    name: f"alpha note {name} about {topic}"
    for name, topic in (
        ("a", "deploys"),
        ("b", "prices"),
        ("c", "time zones"),
        ("d", "uploads"),
        ("x", "caching"),
        ("y", "queues"),
    )
}


def memories(store: Store) -> dict[str, Hit]:
    """Add TEXTS; return name → a lexical hit for it."""
    paths = {name: store.add(text, workspace="web").path for name, text in TEXTS.items()}
    found = {h.path: h for h in store.search("alpha", workspace="web", k=20).hits}
    return {name: found[path] for name, path in paths.items()}


def lexical(hits: dict[str, Hit], names: str, confident: str = "") -> list[Hit]:
    return [replace(hits[n], weak=n not in confident) for n in names]


def names(fused: list[Hit], hits: dict[str, Hit]) -> str:
    by_path = {h.path: n for n, h in hits.items()}
    return "".join(by_path[h.path] for h in fused)


def test_a_weak_first_hit_the_vectors_miss_keeps_its_place(store: Store) -> None:
    hits = memories(store)
    assert SEMANTIC_HEAD == 2
    # c and b are found by both views, a by lexical only: a stays first, b second
    similar = [hits[n].path for n in "cbx"]
    fused = fuse_similar(store.indexer, lexical(hits, "abc"), similar, 5, archived=False)
    assert names(fused, hits) == "abcx"


def test_a_confident_hit_is_never_demoted(store: Store) -> None:
    hits = memories(store)
    similar = [hits[n].path for n in "axy"]
    fused = fuse_similar(
        store.indexer, lexical(hits, "adb", confident="b"), similar, 5, archived=False
    )
    assert names(fused, hits)[0] == "b"
    assert not fused[0].weak and all(h.weak for h in fused[1:])


def test_views_that_agree_reorder_the_tail(store: Store) -> None:
    hits = memories(store)
    similar = [hits[n].path for n in "da"]  # d ranked first by the vectors, a shared
    fused = fuse_similar(store.indexer, lexical(hits, "abcd"), similar, 5, archived=False)
    assert names(fused, hits) == "abdc"


def test_views_that_disagree_leave_lexical_order_and_add_after_it(store: Store) -> None:
    hits = memories(store)
    similar = [hits[n].path for n in "xy"]
    fused = fuse_similar(store.indexer, lexical(hits, "abcd"), similar, 6, archived=False)
    assert names(fused, hits) == "abcdxy"
    assert [h.view for h in fused[-2:]] == ["semantic", "semantic"]
