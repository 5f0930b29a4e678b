"""Memories sync kept in two versions: list them, tell whose version is whose, settle one.

"Mine" is this vault's version: the merge that kept both texts put the version of the
vault that ran it in its first parent. So when this vault made the merge (git's reflog
shows HEAD reaching it from that parent; without a reflog, its `Memstore-Host` trailer
names this host, or it has none: git's own merge by `git pull` here), mine is the first
parent's text; when another vault made it and this one pulled it, mine is the other text
(two vaults on one machine are told apart too). Version numbers in the file follow the texts' sort order, not
their machines (the merge must not depend on who merges), so this is read from history.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from memstore.core.codec import parse_memory
from memstore.core.conflicts import (
    KEEP_CHOICES,
    Versions,
    is_conflicted,
    settled_body,
    split_versions,
    without_conflict_flag,
)
from memstore.core.errors import InvalidInputError
from memstore.core.model import Memory, check_workspace, summary
from memstore.service.editing import (
    Draft,
    check_edit,
    edit_until_valid,
    editing_copy,
)
from memstore.service.store import Store
from memstore.service.transaction import Transaction
from memstore.vault.git import GitRepo

MARKER_TERMS = "memstore version"  # words every version marker line holds
HISTORY_STEPS = 100_000  # first-parent commits looked back for the merge that kept both
_HOST = re.compile(r"^Memstore-Host: (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Conflict:
    """One memory holding versions kept by a merge."""

    id: str
    workspace: str
    path: str
    versions: tuple[str, ...]
    mine: int  # the number of this machine's version; 0 when history cannot tell


@dataclass(frozen=True)
class Settled:
    """What settling a conflict wrote."""

    id: str
    workspace: str
    path: str
    kept: str  # mine | theirs | both | version N | edited
    commit: str


def find_conflicts(store: Store, workspace: str | None = None) -> list[Conflict]:
    """Return the memories (of `workspace`, None: all) whose text holds versions, by path."""
    store.catch_up()
    index = store.indexer.search
    scope = None if workspace is None else {check_workspace(workspace)}
    hits = index.search(MARKER_TERMS, workspaces=scope, limit=max(index.count(), 1))
    found = []
    for path in sorted(h.document.key for h in hits if is_conflicted(h.document.content)):
        if not store.vault.path(path).is_file():
            continue  # the index lags a removal: the file is the truth
        memory = store.vault.read(path)
        versions = split_versions(memory.body)
        if versions is not None:
            mine = mine_version(store, path, versions.texts)
            found.append(Conflict(memory.id, memory.workspace, path, versions.texts, mine))
    return found


def mine_version(store: Store, path: str, texts: Sequence[str]) -> int:
    """Return the number (1-based) of this vault's version of a conflicted file at HEAD;
    0 when history cannot tell (no merge found, or its sides match neither text)."""
    git = store.git
    commit = git.head()
    parent = git.first_parent(commit)
    for _ in range(HISTORY_STEPS):
        if not parent or _texts_at(git, parent, path) != tuple(texts):
            break
        commit, parent = parent, git.first_parent(parent)
    else:
        return 0
    before = git.read_at(parent, path) if parent else None
    if before is None:
        return 0
    body = _plain(parse_memory(before.decode("utf-8", errors="replace"), path=path).body)
    ours = [n for n, text in enumerate(texts, 1) if text == body]
    if len(ours) != 1:
        return 0
    if _is_made_here(store, commit, parent):
        return ours[0]
    return 3 - ours[0] if len(texts) == 2 else 0


def _texts_at(git: GitRepo, commit: str, path: str) -> tuple[str, ...] | None:
    data = git.read_at(commit, path)
    versions = split_versions(data.decode("utf-8", errors="replace")) if data else None
    return versions.texts if versions else None


def _plain(body: str) -> str:
    """A body as a version of it reads: newlines only, no blank lines around it."""
    return "\n".join(body.splitlines()).strip("\n")


def _is_made_here(store: Store, commit: str, parent: str) -> bool:
    """Say whether this vault made merge `commit` (whose first parent is `parent`): HEAD
    came to it from that parent. Without a reflog to tell, by its Memstore-Host trailer
    (none: git's own merge, by `git pull` here)."""
    came_from = store.vault.arrived_from(commit)
    if came_from is not None:
        return came_from == parent
    return _merged_by(store.git, commit, parent) in ("", store.settings.host)


def _merged_by(git: GitRepo, commit: str, parent: str) -> str:
    """Return the host named by `commit`'s Memstore-Host trailer ('' when it has none)."""
    for entry in git.log(HISTORY_STEPS, since=parent):
        if entry.commit == commit:
            match = _HOST.search(entry.message)
            return match.group(1).strip() if match else ""
    return ""


def settle(store: Store, id_prefix: str, keep: str) -> Settled:
    """Keep `keep` of a conflicted memory: mine, theirs, both, or a version's number.

    One `resolve(<workspace>): …` commit through the write lane; the index sees it at once.
    """
    with store.transaction(catch_up=False) as tx:
        entry = tx.resolve(id_prefix)
        current = store.vault.read(entry.path)
        versions = conflicted_versions(current, entry.id)
        if current.problem:
            raise InvalidInputError(
                f"memory {entry.id}'s front matter cannot be read ({current.problem}); settle "
                f"it with 'memstore conflicts resolve {entry.id} --edit' and fix it there"
            )
        numbers = _chosen(keep, versions, lambda: _mine(store, entry.path, versions))
        settled = replace(
            current, body=settled_body(versions, numbers), extra=without_conflict_flag(current)
        )
        kept = keep if keep in KEEP_CHOICES else f"version {numbers[0]}"
        commit = _write(tx, entry.path, settled, current, kept)
    return Settled(entry.id, entry.workspace, entry.path, kept, commit)


def check_settled(draft: Draft, data: bytes) -> Memory:
    """Return the memory a person's edit of a conflict settles on, or raise
    InvalidInputError saying in one line what is still wrong (nothing is written)."""
    memory = check_edit(draft, data)
    if is_conflicted(memory.body):
        raise InvalidInputError(
            "the text still holds version marker lines (<!-- memstore: version … -->); "
            "keep the right text and delete the marker lines"
        )
    return replace(memory, extra=without_conflict_flag(memory))


def save_settled(store: Store, draft: Draft, data: bytes) -> Settled:
    """Write a person's settled text of a conflict: one `resolve(…)` commit, index updated.

    Raises InvalidInputError, writing nothing, if the file changed while it was edited.
    """
    memory = check_settled(draft, data)
    with store.transaction(catch_up=False) as tx:
        entry = tx.resolve(draft.id)
        current = store.vault.read(entry.path)
        if entry.path != draft.path or current != draft.before:
            raise InvalidInputError(
                f"{draft.path} changed while you edited it; nothing was saved (your text is "
                f"in {draft.copy}); run 'memstore conflicts resolve {draft.id} --edit' again"
            )
        commit = _write(tx, entry.path, memory, current, "edited")
    return Settled(entry.id, entry.workspace, entry.path, "edited", commit)


def settle_by_editing(
    open_store: Callable[[], AbstractContextManager[Store]],
    id_prefix: str,
    edit: Callable[[Path], None],
    retry: Callable[[str], bool],
) -> Settled | None:
    """Let a person settle a conflict in their editor: `edit(copy)` runs it on a copy of
    the file; on a mistake `retry(problem)` says whether to open the text again.

    Returns None when the text came back unchanged (nothing saved). Raises
    InvalidInputError, saving nothing, when the person gives up on a text that still
    holds markers or a broken front matter; their text stays in the copy, which it names.
    """
    with editing_copy(open_store, id_prefix, "memstore-resolve-") as draft:
        conflicted_versions(draft.before, draft.id)
        return edit_until_valid(open_store, draft, edit, retry, check_settled, save_settled)


def conflicted_versions(memory: Memory, memory_id: str) -> Versions:
    """Return a memory's versions; raise InvalidInputError when it holds only one."""
    versions = split_versions(memory.body)
    if versions is None or len(versions.texts) < 2:
        raise InvalidInputError(
            f"memory {memory_id} holds one version, nothing to resolve "
            "('memstore conflicts' lists the memories that hold two)"
        )
    return versions


def _chosen(keep: str, versions: Versions, mine: Callable[[], int]) -> list[int]:
    count = len(versions.texts)
    if keep == "both":
        return list(range(1, count + 1))
    if keep.isdigit() and 1 <= int(keep) <= count:
        return [int(keep)]
    if keep not in ("mine", "theirs"):
        raise InvalidInputError(
            f"--keep {keep!r} is not a choice; use mine, theirs, both or a version number "
            f"1-{count} (as 'memstore conflicts' shows them)"
        )
    number = mine() if count == 2 else 0
    if not number:
        raise InvalidInputError(
            f"cannot tell which of the {count} versions is this machine's from the history; "
            f"keep one by number instead: --keep 1 … --keep {count} ('memstore conflicts' "
            "shows them)"
        )
    return [number if keep == "mine" else 3 - number]


def _mine(store: Store, path: str, versions: Versions) -> int:
    return mine_version(store, path, versions.texts)


def _write(tx: Transaction, path: str, memory: Memory, current: Memory, kept: str) -> str:
    message = f"resolve({memory.workspace}): {summary(memory.body)} (kept {kept})"
    return tx.write_memory(path, memory, message, basis=current)
