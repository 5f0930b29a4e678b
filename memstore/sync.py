"""Sync: commit local edits, fetch, merge with memstore's rules, push — and never lose a word.

Runs under the vault's write lock. A merge is built in git's object store first; the work
tree and the branch move only after the merge commit exists, and a marker under .memstore/
lets the next sync finish a sync that was killed half-way. Never force-pushes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from memstore import remote
from memstore.errors import SyncError
from memstore.git import GitRepo, Trailers
from memstore.merge import merge_file
from memstore.vault import Vault

MARKER = "sync-merge"
ATTEMPTS = 3  # a push rejected because someone pushed first is retried after merging again


@dataclass
class SyncOutcome:
    """What one sync did."""

    committed_edits: str = ""
    fetched: str = ""  # the remote commit merged, '' when the remote branch is empty
    merge: str = "up to date"  # up to date | fast-forward | merged | pushed
    merge_commit: str = ""
    pushed: bool = False
    conflicts: list[str] = field(default_factory=list)  # both texts kept, conflict: true
    kept: list[str] = field(default_factory=list)  # deleted on one side, edited on the other
    recovered: bool = False  # finished a sync that was interrupted


def finish_interrupted(vault: Vault, git: GitRepo) -> bool:
    """Complete a merge whose commit exists but whose checkout did not finish."""
    pending = vault.read_state(MARKER)
    if not pending:
        return False
    head = git.head()
    if head != pending and git.first_parent(pending) == head:
        git.move_to(pending)
    vault.write_state(MARKER, "")
    return True


def sync(
    vault: Vault, git: GitRepo, trailers: Trailers, env: Mapping[str, str], name: str = "origin"
) -> SyncOutcome:
    """Bring the vault and remote `name` to the same history (the caller holds the lock)."""
    outcome = SyncOutcome(recovered=finish_interrupted(vault, git))
    if not remote.remote_url(vault.root, name, env):
        raise SyncError(
            f"the vault has no remote {name!r}; add one with 'memstore remote add URL' "
            "(any URL git push accepts, e.g. git@github.com:you/memory.git or a bare repo path)"
        )
    outcome.committed_edits = git.commit_all(
        f"sync: edits made outside memstore on {trailers.host}", trailers
    )
    branch = git.branch()
    for _ in range(ATTEMPTS):
        remote.fetch(vault.root, name, env)
        theirs = git.resolve(f"refs/remotes/{name}/{branch}")
        outcome.fetched = theirs
        _merge(vault, git, trailers, theirs, outcome)
        if theirs and git.head() == theirs:
            outcome.pushed = False
            return outcome
        if remote.push(vault.root, name, branch, env):
            outcome.pushed = True
            return outcome
    raise SyncError(
        f"the remote kept changing while syncing ({ATTEMPTS} tries); your commits are kept, "
        "run 'memstore sync' again"
    )


def _merge(
    vault: Vault, git: GitRepo, trailers: Trailers, theirs: str, outcome: SyncOutcome
) -> None:
    ours = git.head()
    if not theirs or theirs == ours:
        return
    base = git.merge_base(ours, theirs) if ours else ""
    if base == theirs:
        return  # we are ahead: nothing to bring in
    if base == ours or not ours:
        git.move_to(theirs)
        outcome.merge = "fast-forward"
        return

    def resolve(path: str, b: bytes | None, o: bytes | None, t: bytes | None) -> bytes | None:
        merged = merge_file(path, b, o, t)
        if merged.note == "conflict":
            outcome.conflicts.append(path)
        elif merged.note == "kept":
            outcome.kept.append(path)
        return merged.data

    tree = git.merge_trees(base, ours, theirs, resolve)
    message = f"sync: merge from {trailers.host}"
    commit = git.commit_merge(tree, ours, theirs, message, trailers)
    vault.write_state(MARKER, commit)  # a sync killed from here on is finished by the next
    git.move_to(commit)
    vault.write_state(MARKER, "")
    outcome.merge = "merged"
    outcome.merge_commit = commit
