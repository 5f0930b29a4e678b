"""memstore's merge rules for one memory file: one pure function, the same for sync and git.

merge_memory(base, ours, theirs) combines two edits of a memory so that counters add up
exactly, keyword sets and supersede links are unions, and no line anyone added is lost.
The result never depends on which side is "ours" (swap them: the same file), so machines
that merge in different orders agree. Counters are grow-only per clone (`seen_by`: each
entry's larger value) plus an unattributed part that adds up each side's change, so
identical sides merge to themselves except for unattributed increments (two independent
changes by an older memstore or by hand).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Any, Literal

from memstore.core.citations import merge_cites
from memstore.core.codec import normalize_text, parse_memory, render_memory
from memstore.core.errors import InvalidInputError
from memstore.core.model import KINDS, Memory
from memstore.core.vault_config import (
    VAULT_CONFIG_NAME,
    format_vault_config,
    merge_vault_config,
    parse_vault_config,
)

# When both sides changed a kind differently, the more deliberate kind wins: a person's
# `core` over a `lesson` over a `note` …, independent of which machine merges.
KIND_RANK = {
    kind: rank for rank, kind in enumerate(("imported", "trace", "note", "lesson", "core"))
}
CONFLICT_HEADER = (
    "<!-- memstore: this memory was edited differently on two machines; both versions are "
    "kept below. Keep the right text, delete the rest and the markers, and remove "
    "`conflict: true`. -->"
)
VERSION_MARK = "<!-- memstore: version {n} of 2 -->"


@dataclass(frozen=True)
class MergeResult:
    """The merged memory, and whether its body needed both versions kept."""

    memory: Memory
    conflict: bool


def merge_memory(base: Memory | None, ours: Memory, theirs: Memory) -> MergeResult:
    """Merge two versions of one memory file (base is None when both sides added it).

    Two identical sides still add up their unattributed counts (an older memstore's or a
    hand edit's): identical files on two machines mean two independent changes (a change
    that travelled through git is in the base). Per-clone counts (`seen_by`) merge by max.
    """
    if base is not None and ours == base:
        return MergeResult(theirs, False)
    if base is not None and theirs == base:
        return MergeResult(ours, False)
    body, conflict = merge_text(base.body if base else None, ours.body, theirs.body)
    if not (ours.has_front_matter or theirs.has_front_matter):
        return MergeResult(replace(ours, body=body, problem=""), conflict)
    extra = merge_extra(base.extra if base else (), ours.extra, theirs.extra)
    if conflict and not any(key == "conflict" for key, _ in extra):
        extra = (*extra, ("conflict", "conflict: true"))
    merged = Memory(
        id=pick(base.id if base else None, ours.id, theirs.id),
        workspace=ours.workspace,
        body=body,
        kind=merge_kind(base.kind if base else None, ours.kind, theirs.kind),
        keywords=union(base.keywords if base else (), ours.keywords, theirs.keywords),
        source=pick(base.source if base else None, ours.source, theirs.source),
        session=pick(base.session if base else None, ours.session, theirs.session),
        created=min_timestamp(ours.created, theirs.created),
        **merge_counter("seen", base, ours, theirs),
        **merge_counter("recalled", base, ours, theirs),
        last_recalled=max(ours.last_recalled, theirs.last_recalled),
        **merge_counter("confirmed", base, ours, theirs),
        archived=pick(base.archived if base else None, ours.archived, theirs.archived),
        supersedes=union(base.supersedes if base else (), ours.supersedes, theirs.supersedes),
        cites=merge_cites(base.cites if base else (), ours.cites, theirs.cites),
        extra=extra,
        newline=ours.newline if ours.newline == theirs.newline else "\n",
    )
    return MergeResult(merged, conflict)


Counter = Literal["seen", "recalled", "confirmed"]


def merge_counter(
    name: Counter, base: Memory | None, ours: Memory, theirs: Memory
) -> dict[str, Any]:
    """Merge counter `name` and its per-replica map (a grow-only counter).

    Each replica's entry only ever grows on its own machine, so the merge takes each
    entry's larger value: commutative, idempotent, and exact however merges are ordered.
    The unattributed part (the counter minus its map's sum: an old file's plain value, a
    hand edit, a memstore that predates the map) adds up as before, base + each side's
    change. The counter is the sum of the two.
    """
    by = f"{name}_by"
    shares: dict[str, int] = {}
    for replica, count in (*getattr(ours, by), *getattr(theirs, by)):
        shares[replica] = max(shares.get(replica, 0), count)
    loose = [unattributed(m, name) for m in (ours, theirs)]
    if base is None:
        rest = loose[0] + loose[1]
    else:
        start = unattributed(base, name)
        rest = start + (loose[0] - start) + (loose[1] - start)
    return {name: max(rest + sum(shares.values()), 0), by: tuple(sorted(shares.items()))}


def unattributed(memory: Memory, name: Counter) -> int:
    """Return the part of counter `name` its per-replica map does not explain."""
    by: tuple[tuple[str, int], ...] = getattr(memory, f"{name}_by")
    return int(getattr(memory, name)) - sum(count for _, count in by)


def tally(memory: Memory, name: Counter, replica: str, by: int = 1) -> Memory:
    """Return `memory` with counter `name` raised by `by`, on replica `replica`'s entry."""
    shares = dict(getattr(memory, f"{name}_by"))
    shares[replica] = shares.get(replica, 0) + by
    return replace(
        memory,
        **{name: getattr(memory, name) + by, f"{name}_by": tuple(sorted(shares.items()))},
    )


def union(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]) -> tuple[str, ...]:
    """Sets: what either side has; base order first, then additions in sorted order."""
    if list(ours) == list(theirs):
        return tuple(ours)
    kept = [item for item in base if item in ours or item in theirs]
    added = sorted({*ours, *theirs} - set(kept))
    return tuple(dict.fromkeys([*kept, *added]))


def pick(base: str | None, ours: str, theirs: str) -> str:
    """Scalars: the side that changed it; if both did, the greater value (a fixed rule)."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return max(ours, theirs)


def merge_kind(base: str | None, ours: str, theirs: str) -> str:
    if ours != theirs and ours != base and theirs != base:
        return max(ours, theirs, key=lambda kind: KIND_RANK.get(kind, len(KINDS)))
    return pick(base, ours, theirs)


def min_timestamp(ours: str, theirs: str) -> str:
    """created: the earliest known time (an empty value is unknown, not earliest)."""
    known = [t for t in (ours, theirs) if t]
    return min(known) if known else ""


def merge_extra(
    base: Sequence[tuple[str, str]],
    ours: Sequence[tuple[str, str]],
    theirs: Sequence[tuple[str, str]],
) -> tuple[tuple[str, str], ...]:
    """User keys, kept as raw YAML: the side that changed each; both changed → the greater text.

    Order: both sides' order when they agree, else the base's order then new keys sorted.
    """
    base_map, ours_map, theirs_map = dict(base), dict(ours), dict(theirs)
    present = set(ours_map) | set(theirs_map)
    if list(ours_map) == list(theirs_map):
        order = list(ours_map)
    else:
        order = [k for k in base_map if k in present] + sorted(present - set(base_map))
    merged = []
    for key in order:
        a, b, o = ours_map.get(key), theirs_map.get(key), base_map.get(key)
        if a is None or b is None:  # one side removed it: keep it only if the other changed it
            survivor = a if b is None else b
            if survivor is not None and survivor != o:
                merged.append((key, survivor))
            continue
        merged.append((key, pick(o, a, b)))
    return tuple(merged)


def merge_text(base: str | None, ours: str, theirs: str) -> tuple[str, bool]:
    """Three-way line merge; when both sides changed the same lines, keep both whole texts."""
    if ours == theirs:
        return ours, False
    if base is not None:
        merged = merge_lines(
            base.splitlines(keepends=True),
            ours.splitlines(keepends=True),
            theirs.splitlines(keepends=True),
        )
        if merged is not None:
            return "".join(merged), False
    first, second = sorted((ours, theirs))
    return conflict_body(first, second), True


def conflict_body(first: str, second: str) -> str:
    parts = [
        CONFLICT_HEADER,
        VERSION_MARK.format(n=1),
        first.rstrip("\n"),
        VERSION_MARK.format(n=2),
        second.rstrip("\n"),
    ]
    return "\n".join(parts) + "\n"


def merge_lines(base: list[str], ours: list[str], theirs: list[str]) -> list[str] | None:
    """Merge line lists; None when both sides changed the same region differently."""
    result: list[str] = []
    b0 = o0 = t0 = 0
    for b1, o1, t1, size in _sync_regions(base, ours, theirs):
        chunk_b, chunk_o, chunk_t = base[b0:b1], ours[o0:o1], theirs[t0:t1]
        if chunk_o == chunk_b:
            result += chunk_t
        elif chunk_t == chunk_b or chunk_o == chunk_t:
            result += chunk_o
        else:
            return None
        result += base[b1 : b1 + size]
        b0, o0, t0 = b1 + size, o1 + size, t1 + size
    return result


def _sync_regions(
    base: list[str], ours: list[str], theirs: list[str]
) -> list[tuple[int, int, int, int]]:
    """Return (base, ours, theirs, length) runs unchanged on both sides, ending with a sentinel."""
    to_ours = SequenceMatcher(None, base, ours, autojunk=False).get_matching_blocks()
    to_theirs = SequenceMatcher(None, base, theirs, autojunk=False).get_matching_blocks()
    regions = []
    i = j = 0
    while i < len(to_ours) and j < len(to_theirs):
        a, b = to_ours[i], to_theirs[j]
        start = max(a.a, b.a)
        end = min(a.a + a.size, b.a + b.size)
        if start < end:
            regions.append((start, a.b + (start - a.a), b.b + (start - b.a), end - start))
        if a.a + a.size < b.a + b.size:
            i += 1
        else:
            j += 1
    regions.append((len(base), len(ours), len(theirs), 0))
    return regions


# What a person should hear about a file's merge: nothing (""), "conflict" (both texts kept)
# or "kept" (deleted on one side, edited on the other: the edit stays).
MergeNote = Literal["", "conflict", "kept"]


@dataclass(frozen=True)
class FileMerge:
    """The merged bytes of one file (None: delete it) and what a person should hear about."""

    data: bytes | None
    note: MergeNote = ""


def merge_file(
    path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None
) -> FileMerge:
    """Merge one file of the vault from its three versions (a missing side is None)."""
    if ours is None or theirs is None:
        survivor = ours if theirs is None else theirs
        if base is None or survivor is None:
            return FileMerge(survivor)
        if path.endswith(".md") and not _says_more(path, base, survivor):
            return FileMerge(None)  # only counters changed: the deletion stands
        return FileMerge(survivor, "kept")  # a change to text wins over a deletion
    texts = [_decode(b) for b in (base, ours, theirs)]
    if texts[1] is None or texts[2] is None:  # not text: keep both files' bytes apart
        return FileMerge(max(ours, theirs), "conflict")
    old, mine, yours = texts
    if path == VAULT_CONFIG_NAME and mine is not None and yours is not None:
        with suppress(InvalidInputError):  # a broken file merges as text, marked
            merged = merge_vault_config(
                parse_vault_config(old) if old is not None else None,
                parse_vault_config(mine),
                parse_vault_config(yours),
            )
            return FileMerge(format_vault_config(merged).encode("utf-8"))
    if not path.endswith(".md"):
        merged_text, conflict = merge_text(texts[0], texts[1], texts[2])
        return FileMerge(merged_text.encode("utf-8"), "conflict" if conflict else "")
    memories = [parse_memory(t, path=path) if t is not None else None for t in texts]
    result = merge_memory(memories[0], memories[1], memories[2])  # type: ignore[arg-type]
    return FileMerge(
        render_memory(result.memory).encode("utf-8"), "conflict" if result.conflict else ""
    )


def _decode(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _says_more(path: str, base: bytes, changed: bytes) -> bool:
    """Return whether `changed` differs from `base` in text or keywords, not just counters."""
    old, new = (
        parse_memory(b.decode("utf-8", errors="replace"), path=path) for b in (base, changed)
    )
    return normalize_text(old.body) != normalize_text(new.body) or set(old.keywords) != set(
        new.keywords
    )


def restore_memory(current: Memory, exported: Memory) -> Memory:
    """Fold an exported copy of a memory into the vault's: idempotent, nothing lost.

    Restoring the same export again changes nothing: counters take the larger value (an
    export is a snapshot, not an independent change), sets unite, and an exported text the
    current one does not already contain is kept beside it, marked as a conflict.
    """
    if current == exported:
        return current
    body = current.body
    if normalize_text(exported.body) and normalize_text(exported.body) not in normalize_text(
        current.body
    ):
        first, second = sorted((current.body, exported.body))
        body = conflict_body(first, second)
    extra = tuple(dict({**dict(exported.extra), **dict(current.extra)}).items())
    if body != current.body and not any(key == "conflict" for key, _ in extra):
        extra = (*extra, ("conflict", "conflict: true"))
    return replace(
        current,
        body=body,
        keywords=union(current.keywords, current.keywords, exported.keywords),
        supersedes=union(current.supersedes, current.supersedes, exported.supersedes),
        cites=merge_cites((), current.cites, exported.cites),
        seen=max(current.seen, exported.seen),
        recalled=max(current.recalled, exported.recalled),
        confirmed=max(current.confirmed, exported.confirmed),
        last_recalled=max(current.last_recalled, exported.last_recalled),
        created=min_timestamp(current.created, exported.created),
        extra=extra,
    )
