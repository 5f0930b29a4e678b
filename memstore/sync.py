"""Sync: commit local edits, fetch, merge with memstore's rules, push — and never lose a word.

Runs under the vault's write lock. A merge is built in git's object store first; the work
tree and the branch move only after the merge commit exists, and a marker under .memstore/
lets the next sync finish a sync that was killed half-way. Never force-pushes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from memstore import remote
from memstore.conflicts import is_conflicted
from memstore.edits import commit_edits
from memstore.errors import SyncError, UncommittedEditError
from memstore.faults import crash_point
from memstore.git import GitRepo, Trailers
from memstore.merge import merge_file
from memstore.vault import Vault

MARKER = "sync-merge"
ATTEMPTS = 3  # a push rejected because someone pushed first is retried after merging again


@dataclass
class SyncOutcome:
    """What one sync did."""

    committed_edits: str = ""
    edited: list[str] = field(default_factory=list)  # the paths those edit commits hold
    fetched: str = ""  # the remote commit merged, '' when the remote branch is empty
    merge: str = "up to date"  # up to date | fast-forward | merged | pushed
    merge_commit: str = ""
    pushed: bool = False
    conflicts: list[str] = field(default_factory=list)  # both texts kept, conflict: true
    kept: list[str] = field(default_factory=list)  # deleted on one side, edited on the other
    recovered: bool = False  # finished a sync that was interrupted


def finish_interrupted(vault: Vault, git: GitRepo, host: str) -> bool:
    """Complete a merge whose commit exists but whose checkout did not finish.

    A killed checkout leaves some files at the merge's version: those are memstore's own
    and may be overwritten. A file that differs from both HEAD and the merge is a person's
    edit: it is committed on its own first, and the next merge starts from there.
    """
    pending = vault.read_state(MARKER)
    if not pending:
        return False
    head = git.head()
    if head != pending and git.first_parent(pending) == head:
        dirty = git.changed_paths()
        ours = [p for p in dirty if git.read_work_file(p) == git.read_at(pending, p)]
        if len(ours) == len(dirty):
            git.move_to(pending, force=True)
        else:
            # Put memstore's half-checked-out files back to HEAD, keep the person's edits.
            git.restore_paths(head, ours)
            commit_edits(vault, git, host, [p for p in dirty if p not in ours])
    vault.write_state(MARKER, "")
    return True


def sync(
    vault: Vault,
    git: GitRepo,
    trailers: Trailers,
    env: Mapping[str, str],
    name: str,
    locked: Callable[[], AbstractContextManager[object]],
) -> SyncOutcome:
    """Bring the vault and remote `name` to the same history.

    `locked()` holds the vault's write lock: local steps (committing edits, merging,
    checking out) run under it; fetch and push do not, so an add never waits on the network.
    """
    with locked():
        outcome = SyncOutcome(recovered=finish_interrupted(vault, git, trailers.host))
        if not remote.remote_url(vault.root, name, env):
            raise SyncError(
                f"the vault has no remote {name!r}; add one with 'memstore remote add URL' "
                "(any URL git push accepts, e.g. git@github.com:you/memory.git or a bare repo "
                "path)"
            )
        outcome.committed_edits = _commit_edits(vault, git, trailers.host, outcome)
        begun = git.head()
    branch = git.branch()
    attempt = 0
    while attempt < ATTEMPTS:
        remote.fetch(vault.root, name, env)
        crash_point("sync-fetched")
        with locked():
            theirs = git.resolve(f"refs/remotes/{name}/{branch}")
            outcome.fetched = theirs
            if not _merge_locked(vault, git, trailers, theirs, outcome):
                continue  # a file changed under the checkout: its edit is committed; again
            head = git.head()
        _note_conflicts(git, begun, head, outcome)
        if theirs and head == theirs:
            outcome.pushed = False
            return outcome
        crash_point("sync-push")
        if remote.push(vault.root, name, branch, env, commit=head):
            outcome.pushed = True
            return outcome
        attempt += 1
    raise SyncError(
        f"the remote kept changing while syncing ({ATTEMPTS} tries); your commits are kept, "
        "run 'memstore sync' again"
    )


def _merge_locked(
    vault: Vault, git: GitRepo, trailers: Trailers, theirs: str, outcome: SyncOutcome
) -> bool:
    """Commit edits saved meanwhile, merge `theirs`; False when a file changed under the
    checkout (its edit is then committed and the merge must run again)."""
    committed = _commit_edits(vault, git, trailers.host, outcome)
    outcome.committed_edits = committed or outcome.committed_edits
    start = git.head()
    try:
        _merge(vault, git, trailers, theirs, outcome)
    except UncommittedEditError as err:
        committed = _commit_edits(vault, git, trailers.host, outcome)
        if not committed:
            raise SyncError(
                f"{err}; nothing was overwritten — move that file aside and sync again"
            ) from err
        outcome.committed_edits = committed
        return False
    finally:
        if git.head() != start:
            vault.make_private(git.paths_between(start, git.head()))
    return True


def _note_conflicts(git: GitRepo, begun: str, head: str, outcome: SyncOutcome) -> None:
    """Add to `outcome.conflicts` the memories that hold versions kept by a merge and that
    this sync brought in: a merge another machine made arrives as a file with markers."""
    arrived = []
    for path in git.paths_between(begun, head) if begun != head else []:
        # The work tree holds HEAD's files now; reading them costs ~50x less than git's tree.
        data = git.read_work_file(path) if path.endswith(".md") else None
        if data and b"<!-- memstore:" in data and is_conflicted(data.decode("utf-8", "replace")):
            arrived.append(path)
    outcome.conflicts = list(dict.fromkeys([*outcome.conflicts, *sorted(arrived)]))


def _commit_edits(vault: Vault, git: GitRepo, host: str, outcome: SyncOutcome) -> str:
    """Commit outside edits; return the last commit made ('' none), noting its paths."""
    before = git.head()
    made = commit_edits(vault, git, host, None)
    if not made:
        return ""
    outcome.edited = sorted({*outcome.edited, *git.paths_between(before, made[-1])})
    return made[-1]


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

    outcome.conflicts.clear()
    outcome.kept.clear()
    tree = git.merge_trees(base, ours, theirs, resolve)
    message = f"sync: merge from {trailers.host}"
    commit = git.commit_merge(tree, ours, theirs, message, trailers)
    crash_point("sync-merge-commit")
    vault.write_state(MARKER, commit)  # a sync killed from here on is finished by the next
    try:
        git.move_to(commit)
    finally:
        vault.write_state(MARKER, "")
    outcome.merge = "merged"
    outcome.merge_commit = commit
