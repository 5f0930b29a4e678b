"""Merging the tiers' ranked hits: confident first, each tier's order kept, a memory once."""

from __future__ import annotations

from memstore.core.model import CoreMemory, Hit
from memstore.service.tiers import merge_core, merge_hits


def hit(memory_id: str, score: float, *, weak: bool = False, tier: str = "") -> Hit:
    return Hit(
        memory_id,
        "webshop",
        "note",
        f"webshop/{memory_id}.md",
        memory_id,
        (),
        "cli",
        "",
        1,
        score,
        weak,
        tier=tier,
    )


def ids(hits: list[Hit]) -> list[str]:
    return [f"{h.tier}:{h.id}" if h.tier else h.id for h in hits]


def test_confident_hits_of_any_tier_come_before_weak_ones_then_by_score() -> None:
    personal = [hit("p1", 2.1), hit("p2", 0.4, weak=True)]
    acme = [hit("a1", 2.3, tier="acme"), hit("a2", 0.9, weak=True, tier="acme")]
    infra = [hit("i1", 1.2, tier="infra")]
    merged = merge_hits([personal, acme, infra], 10)
    assert ids(merged) == ["acme:a1", "p1", "infra:i1", "acme:a2", "p2"]
    assert ids(merge_hits([personal, acme, infra], 2)) == ["acme:a1", "p1"]


def test_each_tiers_own_order_is_kept() -> None:
    # a correction (lower score) placed above what it corrects stays above it
    personal = [hit("fix", 1.0), hit("old", 2.0)]
    acme = [hit("a1", 1.5, tier="acme")]
    assert ids(merge_hits([personal, acme], 5)) == ["acme:a1", "fix", "old"]


def test_the_same_memory_in_two_tiers_appears_once_as_the_teams_copy() -> None:
    personal = [hit("m1", 2.0), hit("p2", 1.0)]
    acme = [hit("a0", 1.8, tier="acme"), hit("m1", 0.7, weak=True, tier="acme")]
    merged = merge_hits([personal, acme], 5)
    assert ids(merged) == ["acme:m1", "acme:a0", "p2"]
    assert not merged[0].weak and merged[0].score == 2.0  # as sure as the surer copy


def test_core_memories_of_every_tier_once_each() -> None:
    mine = (CoreMemory("c1", "webshop", "a rule"), CoreMemory("c2", "global", "mine"))
    team = (CoreMemory("c1", "webshop", "a rule", tier="acme"),)
    assert merge_core([mine, team]) == (mine[1], team[0])
