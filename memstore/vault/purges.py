"""Purged history across machines: record a purge, keep sync from merging it back, finish it.

`forget --purge` rewrites this clone's history without a memory's files. The remote and
the other clones keep the old history until the rewritten one is force-pushed, and a
plain merge of it would bring the memory back. So the purge is recorded here (under
.memstore/state: the old commits it replaced and what it made of them); sync refuses a remote that still
holds one of them, and `sync --force-purged` rewrites what the remote gained since the
same way and force-pushes with a lease. The purge ends with a marker commit
(`Memstore-Purged: <id>` trailer lines) by which every other clone's sync recognises the
rewrite and re-bases its own unpushed changes onto it (service/rebase.py) instead of merging the
old history back.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace

from memstore.core.errors import SyncError
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo, Trailers

PURGES = "purges"
PURGED_TRAILER = "Memstore-Purged"
_MARKER_LINE = re.compile(rf"^{PURGED_TRAILER}: ([a-z0-9]+)$", re.MULTILINE)


@dataclass(frozen=True)
class Purge:
    """One `forget --purge` this clone made and the remote has not taken yet."""

    id: str
    paths: tuple[str, ...]
    roots: tuple[str, ...]  # the first old commits the rewrite replaced
    replacement: str  # what stands in commit messages for the memory's text
    # Every old commit → the commit the purge made of it: a fetch brings the old history
    # back, and it is rewritten by this map (the memory's text is kept nowhere here).
    rewritten: dict[str, str]
    # The remotes the purge must still be finished on: those configured when it was made.
    # One leaves when its branch is seen without the old history (or is force-pushed);
    # a sync with any other remote (a new, empty backup) neither needs nor clears it.
    remotes: tuple[str, ...] = ()
    # Whether this clone's own refs were moved to the rewritten commits and the marker
    # commit made: the record is written first, so a purge killed half-way is finished
    # by the next sync (finish_local) instead of leaving history no record protects.
    applied: bool = True


def record_purge(vault: Vault, purge: Purge) -> None:
    """Remember a purge until every remote it must reach has taken it (--force-purged)."""
    if purge.roots:
        write_purges(vault, [*pending_purges(vault), purge])


def pending_purges(vault: Vault) -> list[Purge]:
    """Return the purges made here that the remote may still hold, oldest first."""
    try:
        data = json.loads(vault.read_state(PURGES) or "[]")
        return [
            Purge(
                str(item["id"]),
                tuple(item["paths"]),
                tuple(item["roots"]),
                str(item["replacement"]),
                {str(k): str(v) for k, v in item["rewritten"].items()},
                tuple(str(r) for r in item.get("remotes", ["origin"])),
                bool(item.get("applied", True)),
            )
            for item in data
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise SyncError(
            f"the record of purges in {vault.state_dir / 'state' / PURGES} cannot be read "
            f"({err}); if the remote no longer holds the purged memories, delete that file"
        ) from err


def write_purges(vault: Vault, purges: list[Purge]) -> None:
    vault.write_state(PURGES, json.dumps([asdict(p) for p in purges]))


def finished_on(purges: list[Purge], name: str, ids: set[str]) -> list[Purge]:
    """Return `purges` with remote `name` done for those in `ids` (a purge no remote still
    needs is dropped). A purge recorded with no remote is done by the first that is."""
    left = []
    for purge in purges:
        if purge.id in ids:
            purge = replace(purge, remotes=tuple(r for r in purge.remotes if r != name))
            if not purge.remotes:
                continue
        left.append(purge)
    return left


def finish_local(git: GitRepo, vault: Vault, trailers: Trailers) -> bool:
    """Finish, in this clone, a purge killed after it was recorded: move the refs to the
    rewritten commits (and rewrite what was committed since), then make the marker
    commit. Return whether there was one to finish. Runs under the write lock."""
    purges = pending_purges(vault)
    unfinished = [p for p in purges if not p.applied]
    if not unfinished:
        return False
    for purge in unfinished:
        git.rewrite_without(set(purge.paths), "", purge.replacement, known=purge.rewritten)
        head = git.head()
        parent = git.first_parent(head)
        made = git.messages_between(parent, head)[:1] if parent else []
        if not any(f"{PURGED_TRAILER}: {purge.id}" in m for m in made):
            git.move_to(commit_marker(git, head, [purge], trailers))
    write_purges(vault, [replace(p, applied=True) for p in purges])
    return True


def mark_applied(vault: Vault, purge_id: str) -> None:
    """Record that this clone's refs and marker commit for purge `purge_id` are done."""
    purges = pending_purges(vault)
    write_purges(vault, [replace(p, applied=True) if p.id == purge_id else p for p in purges])


def held_by(git: GitRepo, purges: list[Purge], commit: str) -> list[Purge]:
    """Return the purges whose old history `commit` still holds."""
    return [p for p in purges if any(git.contains(commit, root) for root in p.roots)]


def refusal(held: list[Purge], vault: Vault, name: str, branch: str) -> SyncError:
    """The one-line error of a sync that would merge purged history back."""
    ids = ", ".join(sorted({p.id for p in held}))
    return SyncError(
        f"remote {name!r} still holds memory {ids} you purged (forget --purge): merging it "
        f"would bring it back, so nothing was merged or pushed; finish the purge with "
        f"'memstore sync --remote {name} --force-purged' (add --yes where no terminal can "
        f"confirm; it rewrites {name}/{branch} the same way, keeping what others pushed "
        "since, and force-pushes with a lease)"
    )


def rewrite_fetched(git: GitRepo, purges: list[Purge], ref: str) -> None:
    """Rewrite the fetched history (`ref`, the remote-tracking branch) as each purge
    rewrote ours (its old commits become the ones the purge made; commits made elsewhere
    since are carried over without the files). Local branches are left alone: they were
    rewritten by the purge, and a memory added again here since is kept."""
    for purge in purges:
        git.rewrite_without(
            set(purge.paths),
            "",
            purge.replacement,
            checkout=False,
            known=purge.rewritten,
            refs=[ref],
        )


def commit_marker(git: GitRepo, head: str, purges: list[Purge], trailers: Trailers) -> str:
    """Commit (on `head`, HEAD not moved) the marker other clones recognise a purge by."""
    # Ids only: a memory's file name holds the first words of its text.
    lines = "".join(f"{PURGED_TRAILER}: {i}\n" for i in sorted({p.id for p in purges}))
    ids = ", ".join(sorted({p.id for p in purges}))
    message = (
        f"purge: memory {ids} removed from history\n\n"
        "This history was rewritten by 'memstore forget --purge'. A clone that still has the "
        "old history re-bases its own changes onto this one at its next 'memstore sync'."
    )
    return git.commit_tree(git.tree_of(head), [head], message, trailers, lines)


def purged_upstream(git: GitRepo, ours: str, theirs: str) -> set[str]:
    """Return the ids of the purges marked in the commits `theirs` has and `ours` lacks."""
    if not ours or not theirs or git.contains(ours, theirs):
        return set()
    return _marked(git.messages_between(ours, theirs))


def purged_here_too(git: GitRepo, ours: str, theirs: str) -> set[str]:
    """Return the ids of the purges `ours` marked in commits `theirs` lacks: ones this clone
    already took, whose marker commit a later purge's rewrite gave a new hash upstream (a
    sync then names only the new purge)."""
    return _marked(git.messages_between(theirs, ours)) if ours and theirs else set()


def _marked(messages: list[str]) -> set[str]:
    found: set[str] = set()
    for message in messages:
        if PURGED_TRAILER in message:
            found.update(m.group(1) for m in _MARKER_LINE.finditer(message))
    return found
