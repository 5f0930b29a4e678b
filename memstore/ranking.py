"""Ordering and fitting recall results: corrections above what they correct, token budgets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from memstore.model import Hit

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
