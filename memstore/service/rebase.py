"""Re-basing this clone onto a remote history that a purge rewrote on another machine.

The purged history ends with a marker commit (purges.PURGED_TRAILER); this clone's own
commits since its last sync are replayed onto it one by one with memstore's merge rules,
without the purged files, instead of merging the old history (which holds them) back.
"""

from __future__ import annotations

from dataclasses import dataclass

from memstore.core.errors import SyncError
from memstore.core.merge import merge_file
from memstore.service.tree_merge import merge_trees
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo, Trailers
from memstore.vault.purges import purged_here_too


@dataclass(frozen=True)
class Rebased:
    """What re-basing this clone onto a purged remote history did."""

    commit: str  # the new head
    ids: tuple[str, ...]  # the memories purged elsewhere
    local: int  # this clone's own commits carried over (each replayed on its own)
    dropped: tuple[str, ...]  # of them, paths of purged memories this clone had changed


def rebase_onto_purged(
    git: GitRepo,
    vault: Vault,
    purged: set[str],
    ours: str,
    theirs: str,
    candidates: list[str],
    trailers: Trailers,
) -> Rebased | None:
    """Carry this clone's own commits onto `theirs` (a purged rewrite of the history they
    were made on), without the purged paths; return the commit to move to.

    Our own commits are those since the remote commit we last had (`candidates`: the
    remote-tracking ref before this fetch, then its reflog): each is replayed on top of
    `theirs` alone with memstore's merge rules, keeping its message (trailers included:
    `revert --session` still finds an agent's commits), author and committer, so no old
    commit (which may hold the purged text) is pushed again. A commit that touched the
    purged memory gets `[purged memory ID]` for its subject; one that changed nothing
    else is left out.
    """
    fork = next((c for c in candidates if c != theirs and git.contains(ours, c)), "")
    if not fork:
        raise SyncError(
            f"the remote's history was rewritten to purge memory "
            f"{', '.join(sorted(purged))} and this vault's history cannot be "
            "re-based onto it automatically: copy out any memory added here since your last "
            f"sync, then run 'git fetch origin && git reset --hard origin/{git.branch()}' in "
            f"{vault.root}"
        )
    if git.contains(theirs, fork):
        return None  # our last remote commit is in the purged history: a plain merge is safe
    ids = tuple(sorted(purged - purged_here_too(git, ours, theirs) or purged))  # to name
    local = len(git.messages_between(fork, ours))
    suffixes = tuple(f"-{i}.md" for i in purged)  # as forget --purge finds a memory's paths
    paths = {p for c in (fork, ours) for p in git.paths_at(c) if p.endswith(suffixes)}
    dropped = tuple(
        sorted(p for p in paths if local and git.read_at(ours, p) != git.read_at(fork, p))
    )
    if not local:
        return Rebased(theirs, ids, 0, dropped)

    def resolve(path: str, b: bytes | None, o: bytes | None, t: bytes | None) -> bytes | None:
        return merge_file(path, b, o, t).data

    head = theirs
    for commit in git.first_parent_line(fork, ours):
        parent = git.first_parent(commit)
        tree = merge_trees(git, parent, commit, head, resolve, dropped=frozenset(paths))
        if tree == git.tree_of(head):
            continue  # it changed only purged memories (or what the remote has already)
        message = git.message_of(commit)
        if git.touches(commit, paths):  # its subject may quote the purged memory's text
            subject, _, rest = message.partition("\n")
            verb = subject.split(":", 1)[0] if ":" in subject else "edit"
            message = f"{verb}: [purged memory {', '.join(ids)}]\n{rest}"
        head = git.replay(commit, tree, head, message)
    return Rebased(head, ids, local, dropped)
