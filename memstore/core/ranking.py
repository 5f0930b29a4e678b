"""Ranking recall results: view fusion, boosts and decay, tiers, corrections, token budgets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TypeVar

from memstore.core.model import Hit

CHARS_PER_TOKEN = 4  # a rough, stated estimate; see docs/benchmarks.md for its error
HIT_OVERHEAD_TOKENS = 30  # id, workspace, kind, keywords, score around each hit's text
CORE_BUDGET_TOKENS = 400

T = TypeVar("T")


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens a model spends on `text`."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def demote_superseded(hits: Sequence[Hit]) -> list[Hit]:
    """Move each hit just below the correction that supersedes it, when both were found."""
    ordered = list(hits)
    for _ in range(len(ordered)):  # bounded: a supersede cycle cannot loop forever
        ids = [hit.id for hit in ordered]
        for i, hit in enumerate(ordered):
            later = [ids.index(c) for c in hit.superseded_by if c in ids and ids.index(c) > i]
            if later:
                # After pop(i) the correction sits at max(later) - 1: insert right after it.
                ordered.insert(max(later), ordered.pop(i))
                break
        else:
            break
    return ordered


def attach_corrections(hit: Hit, related: Sequence[str], limit: int = 2) -> Hit:
    """Return `hit` with its neighbours: its corrections first, then `related`, at most `limit`."""
    neighbors = list(dict.fromkeys([*hit.superseded_by, *related]))
    neighbors = [n for n in neighbors if n != hit.id][:limit]
    return replace(hit, neighbors=tuple(neighbors))


def pack(items: Sequence[T], sizes: Sequence[int], budget: int | None) -> tuple[list[T], int]:
    """Keep items, in order, whose sizes fit the budget; an item is kept whole or not at all.

    Returns the kept items and how many were left out (None: no budget, keep all).
    """
    if budget is None:
        return list(items), 0
    kept: list[T] = []
    used = 0
    for item, size in zip(items, sizes, strict=True):
        if used + size > budget:
            continue
        kept.append(item)
        used += size
    return kept, len(items) - len(kept)


# --- ranking candidates --------------------------------------------------------------
# Every constant below is measured on the shipped evaluation fixture (memstore eval) and,
# where it applies, on LoCoMo; docs/retrieval.md gives the figures behind each.

ENTITY_WEIGHT = 0.5  # a shared exact entity (path, identifier, URL …) next to BM25F
STRICT_BONUS = 1.0  # a memory holding every query word ranks above ones holding some
STRENGTH_WEIGHT = 0.15  # how much a memory in active use outranks a forgotten one
SEEN_WEIGHT = 0.05  # per doubling of how often the same memory was stored
STABILITY_DAYS = 60.0  # decay time of a memory never recalled
RECALL_GAIN = 0.5  # each recall adds half a stability
CONFIRM_GAIN = 2.0  # a person's confirmation counts four recalls
CONSOLIDATE_AFTER = 5  # recalls after which a memory decays four times slower
CONSOLIDATED_FACTOR = 4.0
CONFIDENT_COVERAGE = 0.6  # a weak hit holding this share of the query's terms is confident
DOMINANT_RATIO = 0.6  # a first hit whose runner-up scores at most this share of it …
DOMINANT_COVERAGE = 0.5  # … and that holds this share of the query's terms is confident


@dataclass(frozen=True)
class Candidate:
    """One memory a view proposed, with what ranking needs to know about it."""

    key: str
    lexical: float  # BM25F score; 0 when only the entity view found it
    coverage: float  # share of the query's terms it contains
    strict: bool  # it contains every query term
    entities: int  # query entities it names
    created: str = ""
    last_recalled: str = ""
    seen: int = 1
    recalled: int = 0
    confirmed: int = 0


def days_between(earlier: str, now: datetime) -> float:
    """Days from an ISO timestamp to `now` (0 when unknown or in the future)."""
    if not earlier:
        return 0.0
    try:
        then = datetime.fromisoformat(earlier.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max((now - then).total_seconds() / 86400, 0.0)


def strength(candidate: Candidate, now: datetime) -> float:
    """Reinforcement and decay: exp(-time since last use / stability), in (0, 1]."""
    stability = STABILITY_DAYS * (
        1 + RECALL_GAIN * candidate.recalled + CONFIRM_GAIN * candidate.confirmed
    )
    if candidate.recalled >= CONSOLIDATE_AFTER or candidate.confirmed:
        stability *= CONSOLIDATED_FACTOR
    last_use = max(candidate.last_recalled, candidate.created)
    return math.exp(-days_between(last_use, now) / stability)


def score(candidate: Candidate, best_lexical: float, query_entities: int, now: datetime) -> float:
    """Fuse the views and apply the boosts; decay lowers a score, it never removes a hit."""
    lexical = candidate.lexical / best_lexical if best_lexical > 0 else 0.0
    entity = (
        ENTITY_WEIGHT * min(candidate.entities, query_entities) / query_entities
        if query_entities
        else 0.0
    )
    boost = (
        1
        + STRENGTH_WEIGHT * strength(candidate, now)
        + SEEN_WEIGHT * math.log2(max(candidate.seen, 1))
    )
    return (lexical + entity + (STRICT_BONUS if candidate.strict else 0.0)) * boost


def is_dominant(first: float, second: float, coverage: float) -> bool:
    """A first hit far ahead of the rest, matching a good part of the query, is confident:
    a question the vault cannot answer tends to spread its words over several memories."""
    return first > 0 and second / first <= DOMINANT_RATIO and coverage >= DOMINANT_COVERAGE


def is_confident(candidate: Candidate, unknown_terms: int) -> bool:
    """Confident: every query term matched, or an exact entity, or most terms and no term
    the vault has never seen (a word no memory contains marks a question it cannot answer)."""
    if candidate.strict or candidate.entities:
        return True
    return unknown_terms == 0 and candidate.coverage >= CONFIDENT_COVERAGE
