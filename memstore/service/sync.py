"""Sync: commit local edits, fetch, merge with memstore's rules, push — and never lose a word.

Runs under the vault's write lock. A merge is built in git's object store first; the work
tree and the branch move only after the merge commit exists, and a marker under .memstore/
lets the next sync finish a sync that was killed half-way. Never force-pushes, but to
finish a `forget --purge` when asked (`--force-purged`: a lease on the commit fetched).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import partial

from memstore.core.codec import parse_memory
from memstore.core.conflicts import is_conflicted
from memstore.core.errors import SyncError, UncommittedEditError
from memstore.core.faults import crash_point
from memstore.core.merge import merge_file
from memstore.service import journal
from memstore.service.rebase import Rebased, rebase_onto_purged
from memstore.service.tree_merge import merge_trees
from memstore.vault import remote
from memstore.vault.edits import NAMED_EDITS_MAX, commit_edits
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo, Trailers
from memstore.vault.purges import (
    finish_local,
    finished_on,
    held_by,
    pending_purges,
    purged_upstream,
    refusal,
    rewrite_fetched,
    write_purges,
)

MARKER = journal.SYNC_MARKER
FORGOTTEN = "forgotten"  # memories forgotten here: {path: id}, to say when one comes back
FORGOTTEN_KEPT = 1000
ATTEMPTS = 3  # a push rejected because someone pushed first is retried after merging again


@dataclass(frozen=True)
class SyncOptions:
    """What a person allowed this sync to do beyond a plain merge and push."""

    allow_unrelated: bool = False  # merge a remote history that shares no commit with ours
    force_purged: bool = False  # force-push a history rewritten by `forget --purge`
    pull_only: bool = False  # a team tier's sync: fetch and merge, never push


@dataclass(frozen=True)
class Returned:
    """A memory this machine forgot that a merge brought back (edited on another machine)."""

    id: str
    path: str


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
    returned: list[Returned] = field(default_factory=list)  # of `kept`: the ones forgotten here
    purged_remote: list[str] = field(default_factory=list)  # purges this sync force-pushed
    rebased: Rebased | None = None  # re-based onto a history purged on another machine
    recovered: bool = False  # finished a sync that was interrupted
    purged_here: bool = False  # finished a `forget --purge` killed half-way in this clone


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


@dataclass(frozen=True)
class EarlyFetch:
    """A sync's fetch started before its other steps (`start_fetch`), with the remote
    commit this clone had before it."""

    earlier: str
    fetching: remote.Fetching

    def stop(self) -> None:
        """End the fetch: the caller failed before `sync` took it over."""
        self.fetching.stop()


def start_fetch(vault: Vault, git: GitRepo, name: str, env: Mapping[str, str]) -> EarlyFetch | None:
    """Start the fetch of remote `name` now, so it runs beside the caller's steps before
    `sync` (the flush of usage: seconds at 1,000,000 files); None when the vault has no
    such remote (`sync` says so) or holds a purge (finishing one prunes objects)."""
    if pending_purges(vault) or not remote.remote_url(vault.root, name, env):
        return None
    tracking = f"refs/remotes/{name}/{git.branch()}"
    return EarlyFetch(git.resolve(tracking), remote.start_fetch(vault.root, name, env))


def sync(
    vault: Vault,
    git: GitRepo,
    trailers: Trailers,
    env: Mapping[str, str],
    name: str,
    locked: Callable[[], AbstractContextManager[object]],
    options: SyncOptions = SyncOptions(),
    meanwhile: Callable[[], None] | None = None,
    early: EarlyFetch | None = None,
) -> SyncOutcome:
    """Bring the vault and remote `name` to the same history.

    `locked()` holds the vault's write lock: local steps (committing edits, merging,
    checking out) run under it; fetch and push do not, so an add never waits on the network.
    `meanwhile` runs while each push does (the caller's catch-up of what HEAD is then).
    `early`: the fetch the caller started (`start_fetch`); this sync waits for it or ends it.
    """
    git.status_env = env  # a large vault's status of every file is git's own (vault/git.py)
    running = early.fetching if early else None  # the fetch to end should a step fail
    try:
        with locked():
            outcome = SyncOutcome(recovered=finish_interrupted(vault, git, trailers.host))
            outcome.purged_here, early = _finish_purge(vault, git, trailers, env, early)
            running = early.fetching if early else None
            if not remote.remote_url(vault.root, name, env):
                raise SyncError(_no_such_remote(name, list(remote.remote_urls(vault.root, env))))
            branch = git.branch()
            tracking = f"refs/remotes/{name}/{branch}"
            # The remote commit this clone had before: where its own commits begin, should
            # the remote's history turn out rewritten by a purge (rebase.rebase_onto_purged).
            earlier = [early.earlier if early else git.resolve(tracking)]
            # Fetch while edits are committed (at 1,000,000 files their status takes seconds).
            fetching = running = running or remote.start_fetch(vault.root, name, env)
            outcome.committed_edits = _commit_edits(vault, git, trailers.host, outcome)
            begun = git.head()
    except BaseException:
        if running is not None:
            running.stop()
        raise
    fetch: Callable[[], None] = fetching.wait  # the first merge's; every later one fetches
    merging = _Merge(vault, git, trailers, options, outcome)
    attempt = 0
    while attempt < ATTEMPTS:
        fetch()
        fetch = partial(remote.fetch, vault.root, name, env)
        crash_point("sync-fetched")
        with locked():
            theirs = git.resolve(tracking)
            lease = _settle_purges(vault, git, name, branch, theirs, outcome, options, env)
            theirs = git.resolve(tracking)  # rewritten when finishing a purge
            outcome.fetched = theirs
            candidates = [*earlier, *git.ref_history(tracking)]
            if not merging.attempt(theirs, candidates):
                continue  # a file changed under the checkout: its edit is committed; again
            head = git.head()
        _note_conflicts(git, begun, head, outcome)
        with locked():
            _note_returned(vault, begun, head, git, outcome)
        if (theirs and head == theirs) or options.pull_only:
            outcome.pushed = False
            _drop_purged_objects(vault, env, locked, outcome)
            return outcome
        crash_point("sync-push")
        if remote.push(
            vault.root, name, branch, env, commit=head, lease=lease, meanwhile=meanwhile
        ):
            outcome.pushed = True
            if lease:
                with locked():
                    done = set(outcome.purged_remote)
                    write_purges(vault, finished_on(pending_purges(vault), name, done))
            _drop_purged_objects(vault, env, locked, outcome)
            return outcome
        attempt += 1
    raise SyncError(
        f"the remote kept changing while syncing ({ATTEMPTS} tries); your commits are kept, "
        "run 'memstore sync' again"
    )


def _finish_purge(
    vault: Vault, git: GitRepo, trailers: Trailers, env: Mapping[str, str], early: EarlyFetch | None
) -> tuple[bool, EarlyFetch | None]:
    """Finish a purge killed half-way in this clone (whether there was one) and prune its
    old objects; a fetch started before is ended then (what it fetched may be pruned)."""
    if not finish_local(git, vault, trailers):
        return False, early
    if early is not None:
        early.stop()
    remote.prune_unreachable(vault.root, env)
    return True, None


def _no_such_remote(name: str, known: list[str]) -> str:
    """The error for a sync with a remote the vault lacks, naming the fix that fits: the
    remotes it has (a typo of `--remote`), else how to add one."""
    named = "" if name == "origin" else f"{name} "
    add = f"'memstore remote add {named}URL'"
    if known:
        return (
            f"the vault has no remote {name!r} (it has: {', '.join(known)}); sync one with "
            f"'memstore sync --remote {known[0]}', or add this one with {add}"
        )
    return (
        f"the vault has no remote {name!r}; add one with {add} (any URL git push accepts, "
        "e.g. git@github.com:you/memory.git or a bare repo path)"
    )


def _drop_purged_objects(
    vault: Vault,
    env: Mapping[str, str],
    locked: Callable[[], AbstractContextManager[object]],
    outcome: SyncOutcome,
) -> None:
    """After a purge reached the remote, or this clone left purged history behind, prune
    the old objects here too (they hold the purged text)."""
    if outcome.purged_remote or outcome.rebased or outcome.purged_here:
        with locked():
            remote.prune_unreachable(vault.root, env)


def _settle_purges(
    vault: Vault,
    git: GitRepo,
    name: str,
    branch: str,
    theirs: str,
    outcome: SyncOutcome,
    options: SyncOptions,
    env: Mapping[str, str],
) -> str:
    """Refuse a remote that still holds history purged here, or (--force-purged) rewrite
    it the same way; return the remote commit a forced push must replace ('' none)."""
    pending = pending_purges(vault)
    if not pending:
        return ""
    configured = set(remote.remote_urls(vault.root, env))
    if any(r not in configured for p in pending for r in p.remotes):
        # A remote removed since: a purge left with none is finished by the first remote
        # seen without its old history, as one made when the vault had no remote.
        pending = [
            replace(p, remotes=tuple(r for r in p.remotes if r in configured)) for p in pending
        ]
        write_purges(vault, pending)
    held = held_by(git, pending, theirs) if theirs else []
    if theirs:
        # This remote's branch exists without the old history: the purge is done there
        # (it never had it, or another clone finished it). Only there: an empty remote, or
        # one the purge was not recorded for (a backup added since), clears nothing.
        kept = {p.id for p in held}
        done = {p.id for p in pending if p.id not in kept and (not p.remotes or name in p.remotes)}
        if done:
            write_purges(vault, finished_on(pending, name, done))
    if not held:
        return ""
    if not options.force_purged:
        raise refusal(held, vault, name, branch)
    rewrite_fetched(git, held, f"refs/remotes/{name}/{branch}")
    outcome.purged_remote = sorted({p.id for p in held})
    return theirs


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


def _both_hold_memories(git: GitRepo, ours: str, theirs: str) -> bool:
    """Return whether both commits hold memory files (a vault just made holds none: joining
    an unrelated remote then cannot stack conflicts)."""
    return all(any(p.endswith(".md") for p in git.paths_at(c)) for c in (ours, theirs))


def note_forgotten(vault: Vault, path: str, memory_id: str) -> None:
    """Remember that this machine forgot the memory at `path`, so a sync that brings it
    back (edited on another machine) says so."""
    records = _forgotten(vault)
    records.pop(path, None)
    records[path] = memory_id
    kept = dict(list(records.items())[-FORGOTTEN_KEPT:])
    vault.write_state(FORGOTTEN, json.dumps(kept))


def unnote_forgotten(vault: Vault, paths: set[str]) -> None:
    """Drop `paths` from the record of forgotten memories (a purge: a memory's file name
    holds the first words of its text, and no merge can bring it back)."""
    records = _forgotten(vault)
    if any(path in records for path in paths):
        kept = {k: v for k, v in records.items() if k not in paths}
        vault.write_state(FORGOTTEN, json.dumps(kept))


def _forgotten(vault: Vault) -> dict[str, str]:
    try:
        data = json.loads(vault.read_state(FORGOTTEN) or "{}")
    except ValueError:
        return {}  # local state is derived: a garbled record only costs a notice
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _note_returned(vault: Vault, begun: str, head: str, git: GitRepo, outcome: SyncOutcome) -> None:
    """Add to `outcome.returned` the memories forgotten here that this sync brought back,
    by a merge made here or one pulled from another machine."""
    records = _forgotten(vault)
    known = {back.path for back in outcome.returned}
    back = [
        path
        for path in (git.paths_between(begun, head) if begun and begun != head else [])
        if path in records
        and path not in known
        and git.read_work_file(path) is not None
        and git.read_at(begun, path) is None  # absent here before: not added again since
    ]
    outcome.returned += [Returned(records[path], path) for path in back]
    gone = [path for path in records if path in known or path in back]
    if gone:
        vault.write_state(
            FORGOTTEN, json.dumps({k: v for k, v in records.items() if k not in gone})
        )


def _commit_edits(
    vault: Vault, git: GitRepo, host: str, outcome: SyncOutcome, among: list[str] | None = None
) -> str:
    """Commit outside edits (among those paths; None: anywhere, git's status); return the
    last commit made ('' none), noting its paths."""
    before = git.head()
    made = commit_edits(vault, git, host, among)
    if not made:
        return ""
    outcome.edited = sorted({*outcome.edited, *git.paths_between(before, made[-1])})
    return made[-1]


@dataclass(frozen=True)
class _Merge:
    """The merge step of one sync: the vault and repository it works on, who merges, what
    the person allowed, and the outcome it fills in."""

    vault: Vault
    git: GitRepo
    trailers: Trailers
    options: SyncOptions
    outcome: SyncOutcome

    def attempt(self, theirs: str, candidates: list[str]) -> bool:
        """Commit edits saved meanwhile, merge `theirs`; False when a file changed under the
        checkout (its edit is then committed and the merge must run again)."""
        vault, git, outcome = self.vault, self.git, self.outcome
        # Edits saved while it fetched: only those the merge would write over count here
        # (the paths `theirs` differs in); the sync's start committed every other one, and
        # one saved since is committed by the next writer. A status looks at every file
        # (~3 µs each: seconds at 1,000,000), hashing a named file ~6 µs.
        start = git.head()
        among = git.paths_between(start, theirs) if theirs and theirs != start else []
        among_paths = among if len(among) <= NAMED_EDITS_MAX else None
        committed = _commit_edits(vault, git, self.trailers.host, outcome, among_paths)
        outcome.committed_edits = committed or outcome.committed_edits
        start = git.head()
        try:
            self._merge(theirs, candidates)
        except UncommittedEditError as err:
            committed = _commit_edits(vault, git, self.trailers.host, outcome)
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

    def _merge(self, theirs: str, candidates: list[str]) -> None:
        vault, git, trailers, outcome = self.vault, self.git, self.trailers, self.outcome
        ours = git.head()
        if not theirs or theirs == ours:
            return
        purged = purged_upstream(git, ours, theirs)
        # The remote's history was rewritten by a purge made elsewhere: never merge the old
        # history (it holds the purged files) back; carry our own commits over instead.
        rebased = (
            rebase_onto_purged(git, vault, purged, ours, theirs, candidates, trailers)
            if purged
            else None
        )
        if rebased is not None:
            git.move_to(rebased.commit)
            outcome.rebased = rebased
            outcome.merge = "fast-forward" if rebased.commit == theirs else "re-based"
            return
        base = git.merge_base(ours, theirs) if ours else ""
        if (
            ours
            and not base
            and not self.options.allow_unrelated
            and _both_hold_memories(git, ours, theirs)
        ):
            # As git does: a history sharing no commit with ours is another vault (or one
            # restored from files); merging it would stack a conflict per memory on every
            # machine.
            raise SyncError(
                f"the remote's history shares no commit with this vault's ({theirs[:8]} vs "
                f"{ours[:8]}): nothing was merged or pushed; run 'memstore sync "
                "--allow-unrelated' to merge it anyway"
            )
        if base == theirs:
            return  # we are ahead: nothing to bring in
        if base == ours or not ours:
            git.move_to(theirs, paths=git.paths_between(ours, theirs) if ours else None)
            outcome.merge = "fast-forward"
            return
        self._merge_commit(base, ours, theirs)

    def _merge_commit(self, base: str, ours: str, theirs: str) -> None:
        """Merge the three trees with memstore's rules, commit, and check the merge out."""
        vault, git, outcome = self.vault, self.git, self.outcome
        outcome.conflicts.clear()
        outcome.kept.clear()
        outcome.returned.clear()
        tree = merge_trees(git, base, ours, theirs, self._resolve)
        message = f"sync: merge from {self.trailers.host}"
        commit = git.commit_merge(tree, ours, theirs, message, self.trailers)
        crash_point("sync-merge-commit")
        vault.write_state(MARKER, commit)  # a sync killed from here on is finished by the next
        try:
            git.move_to(commit, paths=git.paths_between(ours, commit))
        finally:
            vault.write_state(MARKER, "")
        outcome.merge = "merged"
        outcome.merge_commit = commit

    def _resolve(
        self, path: str, b: bytes | None, o: bytes | None, t: bytes | None
    ) -> bytes | None:
        outcome = self.outcome
        merged = merge_file(path, b, o, t)
        if merged.note == "conflict":
            outcome.conflicts.append(path)
        elif merged.note == "kept":
            outcome.kept.append(path)
            if o is None and merged.data is not None and path.endswith(".md"):
                text = merged.data.decode("utf-8", "replace")
                outcome.returned.append(Returned(parse_memory(text, path=path).id, path))
        return merged.data
