"""Near-duplicate pairs among sets of terms, found from each set's rarest terms, never all pairs.

Two sets are near-duplicates when the smaller one has at least a `threshold` share of
its terms in the other (containment). For a set X of m terms that needs k(m) shared terms,
at most m − k(m) of X's terms can be missing from the other set, so any m − k(m) + 1 of
X's terms include a shared one. Indexing each set under its m − k(m) + 1 rarest terms
(its *prefix*) and probing with every term of each larger set therefore finds every
pair the all-pairs comparison finds: the filter is exact, not a sample. Rare terms keep
the posting lists short, so the work follows the pairs that share something rare.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from functools import cache
from typing import Any, TypeVar

from index.analysis import TOKEN_PATTERN, expand_contractions, make_analyzer

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
    tokens = [_TOKEN.findall(expand_contractions(text)) for text in texts]
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


@cache
def required_overlap(size: int, threshold: float) -> int:
    """Fewest shared terms that make a set of `size` terms reach `threshold` containment."""
    # The same float comparison containment() callers make: 0.7 * 10 is 7.000000000000001.
    return next((k for k in range(1, size + 1) if k / size >= threshold), size)


def similar_pairs(
    items: Iterable[tuple[Key, str, frozenset[str]]],
    threshold: float,
    progress: Progress | None = None,
) -> dict[tuple[Key, Key], float]:
    """Return {(key, key): containment} for every pair in one group reaching `threshold`.

    `items` are (key, group, terms); sets of different groups are never compared and an
    empty set pairs with nothing. `progress(done, total)` follows the sets probed.
    """
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

    found: dict[tuple[Key, Key], float] = {}
    for sets in groups.values():
        found.update(_group_pairs(sets, threshold, tick))
    return found


def _group_pairs(
    sets: dict[Key, frozenset[str]], threshold: float, tick: Callable[[], None]
) -> dict[tuple[Key, Key], float]:
    """Return the pairs of one group reaching `threshold`, probing each set once."""
    frequency = Counter(term for chosen in sets.values() for term in chosen)
    postings: defaultdict[str, list[Key]] = defaultdict(list)
    found: dict[tuple[Key, Key], float] = {}
    # Smallest first: every set already indexed is no larger than the one probing, so
    # the indexed set is the one whose share is measured and whose prefix must match.
    for key in sorted(sets, key=lambda key: len(sets[key])):
        mine = sets[key]
        candidates: set[Key] = set()
        for term in mine:
            if term in postings:
                candidates.update(postings[term])
        for other in candidates:
            theirs = sets[other]
            share = len(theirs & mine) / len(theirs)
            if share >= threshold:
                found[(other, key)] = share
        rarest = sorted(mine, key=frequency.__getitem__)
        for term in rarest[: len(mine) - required_overlap(len(mine), threshold) + 1]:
            postings[term].append(key)
        tick()
    return found
