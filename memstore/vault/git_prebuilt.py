"""Commits built beside the vault lock: on a HEAD read earlier, moved to only if HEAD is still there.

A writer of many files (the periodic counter flush: at 1,000,000 memories ~130 month trees
of ~5,000 entries rewritten, 2-3 s) builds its blobs, trees and commit with no lock held,
on the commit HEAD was when it read the files; under the vault lock it then only moves
HEAD, and only if HEAD has not moved meanwhile (`advance`; the caller waits for a person's
`git commit` under way first). Commits made meanwhile are folded in (`fold_onto`: the
commit made again on the new HEAD, reusing the trees of the folders they left alone).
Objects written for a commit never used are unreachable and go with git's gc. Part of
GitRepo.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memstore.core.errors import VaultError
from memstore.core.faults import crash_point
from memstore.vault.git_lean import objects
from memstore.vault.git_log import Trailers
from memstore.vault.git_objects import GitObjects
from memstore.vault.index_staging import note_index_lag

log = logging.getLogger(__name__)


@dataclass
class Prebuilt:
    """A commit built on `head` by build_on, and its parts: each folder's new tree, each
    file's blob and mode (what fold_onto reuses on a later HEAD)."""

    head: str
    commit: str = ""  # none: stopped before it was made
    message: str = ""
    trees: dict[str, Any] = field(default_factory=dict)
    blobs: dict[str, Any] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)


class GitPrebuilt(GitObjects):
    """A commit's objects written first, HEAD moved to it later (part of GitRepo)."""

    head: Callable[[], str]
    _tree_with: Callable[..., Any]
    _refuse_secrets: Callable[[dict[str, bytes], Any], None]
    _stage: Callable[[tuple[str, ...], tuple[str, ...]], None]
    _index_is_large: Callable[[], bool]

    def build_on(
        self,
        head: str,
        files: Mapping[str, tuple[bytes, int]],
        message: str,
        trailers: Trailers,
        stopping: Callable[[], bool] = lambda: False,
    ) -> Prebuilt:
        """Write the blobs of `files` (path → bytes and git's file mode), the trees and a
        commit of them on commit `head` (no commit when `stopping` said so between two
        folders: what was written is left unreachable, for git's gc). HEAD is not moved:
        no lock is needed (objects are written whole, under their hash). Every file is
        scanned as `commit` scans it.

        Raises:
            SecretError: a file holds what looks like a credential.
            VaultError: the objects cannot be written.
        """
        pygit2 = objects()
        repo = self._repo
        from memstore.core.secrets import withhold_secret

        full = f"{withhold_secret(message, tuple(files)).rstrip()}\n\n{trailers.render()}"
        built = Prebuilt(head, message=full)
        try:
            base = repo[head].peel(pygit2.Commit).tree
            self._refuse_secrets({path: data for path, (data, _) in files.items()}, base)
            folders: dict[str, dict[str, Any]] = {}
            for path, (content, mode) in files.items():
                folder, _, name = path.rpartition("/")
                built.blobs[path] = folders.setdefault(folder, {})[name] = repo.create_blob(content)
                built.modes[path] = mode
            # Each folder's tree on its own, a stop looked for between two (at 1,000,000
            # memories in month folders each is ~5,000 entries, ~20-60 ms to write). A
            # folder holding another changed folder (a month's files beside its day
            # folders) has its files set by the last step, with the inner folders' trees.
            for folder, blobs in folders.items():
                if not folder or any(other.startswith(folder + "/") for other in folders):
                    continue
                if stopping():
                    return built
                inner = {name: built.modes[f"{folder}/{name}"] for name in blobs}
                built.trees[folder] = self._tree_with(_subtree(repo, base, folder), blobs, inner)
            return self._commit_on(built, head, reuse=set(built.trees))
        except (OSError, pygit2.GitError) as err:
            raise VaultError(f"cannot commit to {self.root}: {err}") from err

    def fold_onto(self, built: Prebuilt, head: str) -> Prebuilt | None:
        """The same files' commit on `head`, a HEAD other commits moved on since `built`
        was: folders those commits left alone keep their trees, the others are built
        again from `head`'s (a few, each a tree write). None: one of the files itself
        changed since (its new bytes were made from what is gone).

        Raises:
            VaultError: the objects cannot be written.
        """
        pygit2 = objects()
        try:
            changed = self.paths_between(built.head, head)
        except KeyError:  # the HEAD it was built on is gone (a purge rewrote history)
            return None
        if set(built.blobs).intersection(changed):
            return None
        moved = {
            folder
            for folder in built.trees
            if any(path == folder or path.startswith(folder + "/") for path in changed)
        }
        try:
            folded = Prebuilt(head, "", built.message, built.trees, built.blobs, built.modes)
            return self._commit_on(folded, head, reuse=set(built.trees) - moved)
        except (OSError, pygit2.GitError) as err:
            raise VaultError(f"cannot commit to {self.root}: {err}") from err

    def _commit_on(self, built: Prebuilt, head: str, reuse: set[str]) -> Prebuilt:
        """Make `built`'s commit on `head`: the folders of `reuse` as their built trees,
        every other file as its blob (its folders' trees written from `head`'s)."""
        pygit2 = objects()
        repo = self._repo
        changes: dict[str, Any] = {folder: built.trees[folder] for folder in reuse}
        modes = {**built.modes, **dict.fromkeys(reuse, pygit2.GIT_FILEMODE_TREE)}
        for path, blob in built.blobs.items():
            if path.rpartition("/")[0] not in reuse:
                changes[path] = blob
        tree = self._tree_with(repo[head].peel(pygit2.Commit).tree, changes, modes)
        signature = self._signature()
        commit = repo.create_commit(None, signature, signature, built.message, tree, [head])
        built.commit = str(commit)
        return built

    def advance(self, head: str, commit: str, paths: tuple[str, ...]) -> bool:
        """Under the vault lock: move HEAD (its branch) from `head` to `commit`, made by
        `build_on` with the files `paths` hold on disk now, and bring git's index along
        as `commit(defer_index=True)` does; say whether it moved. HEAD no longer at `head`
        (another writer's commit meanwhile) changes nothing: the caller builds again.

        Raises:
            VaultError: the branch cannot be moved.
        """
        pygit2 = objects()
        repo = self._repo
        try:
            # The branch is looked up once and compared and moved as that one object:
            # libgit2 refuses to move a reference another process moved since its look-up,
            # so a person's `git commit` landing after the comparison is never pushed off.
            branch = repo.references[repo.head.name]  # "HEAD" itself when detached
            if str(branch.target) != head:
                return False
            summary = repo[commit].message.partition("\n")[0]
        except (KeyError, OSError, pygit2.GitError) as err:  # KeyError: pruned meanwhile
            raise VaultError(f"cannot commit to {self.root}: {err}") from err
        deferred = self._index_is_large() and not any("\n" in path for path in paths)
        if deferred:
            note_index_lag(self.root, paths, os.getpid())  # named before committing
        try:
            branch.set_target(commit, f"commit: {summary}")
        except (OSError, pygit2.GitError) as err:
            if self.head() != head:
                return False  # moved by another process after the look-up: build again
            raise VaultError(f"cannot commit to {self.root}: {err}") from err
        crash_point("git-commit")
        if deferred:
            return True
        try:  # the commit stands: a stale git index is repaired by the next command
            self._stage(paths, ())
        except (OSError, VaultError, pygit2.GitError) as err:
            log.warning(
                "committed %s, but git's index was not updated (%s); the next memstore "
                "command repairs it",
                commit[:8],
                err,
            )
        return True


def _subtree(repo: Any, tree: Any, folder: str) -> Any:
    """The tree at `folder` in `tree`, or None (no such folder, or a file there)."""
    try:
        found = tree[folder]
    except KeyError:
        return None
    return repo[found.id] if found.type_str == "tree" else None
