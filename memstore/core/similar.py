"""Near-duplicate pairs among sets of terms, counted from inverted lists, never all pairs.

Two sets are near-duplicates when the smaller one has at least a `threshold` share of
its terms in the other (containment). Each set is probed once, in order of size: the
inverted lists of its terms, cut to the sets before it, are counted in one numpy
`bincount`, which gives its overlap with every earlier set that shares a term — exactly
the all-pairs comparison, at the cost of the lists' lengths in C rather than a Python
set intersection per candidate (a generated 22,000-memory workspace has 20 million
candidate pairs at containment 0.5: 34 s as intersections). `neighbours` also keeps each
set's few closest, for a caller that reads every pair closely.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Generic, TypeVar

from memstore.index.analysis import TOKEN_PATTERN, composed, expand_contractions, make_analyzer

Key = TypeVar("Key", bound=Hashable)
Progress = Callable[[int, int], None]

_TOKEN = re.compile(TOKEN_PATTERN)
_PROGRESS_EVERY = 200


@cache
def _analyzer() -> Any:
    return make_analyzer()


def term_sets(texts: Sequence[str]) -> list[frozenset[str]]:
    """Return the index terms of each text, the same as `index.terms(text)` for each."""
    # The analyzer's filters work token by token, so a text's terms are the union of its
    # tokens' terms: analyse each distinct token once, in one run over all of them (a
    # run per text, or per token, costs several times more; a test compares the results).
    tokens = [_TOKEN.findall(expand_contractions(composed(text))) for text in texts]
    distinct = list(dict.fromkeys(token for found in tokens for token in found))
    starts, offset = {}, 0
    for token in distinct:
        starts[offset] = token
        offset += len(token) + 1
    parts: dict[str, set[str]] = {token: set() for token in distinct}
    for part in _analyzer()(" ".join(distinct), mode="query", chars=True):
        parts[starts[part.startchar]].add(part.text)
    return [frozenset().union(*(parts[token] for token in found)) for found in tokens]


def containment(mine: frozenset[str], theirs: frozenset[str]) -> float:
    """Share of the smaller set's terms that the other set holds (0 when either is empty)."""
    return len(mine & theirs) / max(min(len(mine), len(theirs)), 1)


@dataclass
class Neighbours(Generic[Key]):
    """What `neighbours` finds: (smaller set's key, larger set's key) → containment."""

    pairs: dict[tuple[Key, Key], float] = field(default_factory=dict)  # all ≥ the threshold
    closest: dict[tuple[Key, Key], float] = field(default_factory=dict)  # a few ≥ `loose` a set


def similar_pairs(
    items: Iterable[tuple[Key, str, frozenset[str]]],
    threshold: float,
    progress: Progress | None = None,
) -> dict[tuple[Key, Key], float]:
    """Return {(key, key): containment} for every pair in one group reaching `threshold`.

    `items` are (key, group, terms); sets of different groups are never compared and an
    empty set pairs with nothing. `progress(done, total)` follows the sets probed.
    """
    return neighbours(items, threshold, progress=progress).pairs


def neighbours(
    items: Iterable[tuple[Key, str, frozenset[str]]],
    threshold: float,
    *,
    loose: float = 1.0,
    per_set: int = 0,
    progress: Progress | None = None,
) -> Neighbours[Key]:
    """Find every pair reaching `threshold` (as similar_pairs) and, for each set, its
    `per_set` closest smaller sets reaching `loose` (highest containment first, then key):
    a caller that reads every pair closely reads at most `per_set` a set."""
    groups: defaultdict[str, dict[Key, frozenset[str]]] = defaultdict(dict)
    for key, group, chosen in items:
        if chosen:
            groups[group][key] = chosen
    total = sum(len(sets) for sets in groups.values())
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None and (done % _PROGRESS_EVERY == 0 or done == total):
            progress(done, total)

    found: Neighbours[Key] = Neighbours()
    for sets in groups.values():
        _group_pairs(sets, min(threshold, loose), tick, found, threshold, per_set)
    return found


def _group_pairs(
    sets: dict[Key, frozenset[str]],
    lowest: float,
    tick: Callable[[], None],
    found: Neighbours[Key],
    threshold: float,
    per_set: int,
) -> None:
    """Add one group's pairs to `found`, probing each set once."""
    import numpy as np  # here: an add's contradiction check imports this module for its terms

    # Smallest first: every earlier set is no larger than the one probing, so the earlier
    # set is the one whose share is measured.
    order = sorted(sets, key=lambda key: len(sets[key]))
    members: defaultdict[str, list[int]] = defaultdict(list)
    for position, key in enumerate(order):
        for term in sets[key]:
            members[term].append(position)
    lists = {term: np.array(held, dtype=np.int64) for term, held in members.items()}
    sizes = np.array([len(sets[key]) for key in order], dtype=np.int64)
    for position, key in enumerate(order):
        if position:
            held = [lists[term] for term in sets[key]]
            before = [ids[: np.searchsorted(ids, position)] for ids in held]
            counts = np.bincount(np.concatenate(before), minlength=position)
            sharing = np.flatnonzero(counts)
            # int64 / int64 divides as Python's len(a & b) / len(b) does: the same floats
            shares = counts[sharing] / sizes[sharing]
            close = shares >= lowest
            pairs = [
                (order[other], share)
                for other, share in zip(
                    sharing[close].tolist(), shares[close].tolist(), strict=True
                )
            ]
            found.pairs.update(
                ((other, key), share) for other, share in pairs if share >= threshold
            )
            if per_set:
                best = sorted(pairs, key=lambda pair: (-pair[1], str(pair[0])))[:per_set]
                found.closest.update(((other, key), share) for other, share in best)
        tick()
