"""Commits built beside the vault lock: on a HEAD read earlier, moved to only if HEAD is still there.

A writer of many files (the periodic counter flush: at 1,000,000 memories ~130 month trees
of ~5,000 entries rewritten, 2-3 s) builds its blobs, trees and commit with no lock held,
on the commit HEAD was when it read the files; under the vault lock it then only moves
HEAD, and only if HEAD has not moved meanwhile (`advance`). Objects written for a commit
never used are unreachable and go with git's gc. Part of GitRepo.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from memstore.core.errors import VaultError
from memstore.core.faults import crash_point
from memstore.vault.git_lean import objects
from memstore.vault.git_log import Trailers
from memstore.vault.git_objects import GitObjects
from memstore.vault.index_staging import note_index_lag

log = logging.getLogger(__name__)


class GitPrebuilt(GitObjects):
    """A commit's objects written first, HEAD moved to it later (part of GitRepo)."""

    head: Callable[[], str]
    _tree_with: Callable[..., Any]
    _refuse_secrets: Callable[[dict[str, bytes], Any], None]
    _stage: Callable[[tuple[str, ...], tuple[str, ...]], None]
    _index_is_large: Callable[[], bool]

    def build_on(
        self, head: str, files: Mapping[str, tuple[bytes, int]], message: str, trailers: Trailers
    ) -> str:
        """Write the blobs of `files` (path → bytes and git's file mode), the trees and a
        commit of them on commit `head`; return its id. HEAD is not moved: no lock is
        needed (objects are written whole, under their hash). Every file is scanned as
        `commit` scans it.

        Raises:
            SecretError: a file holds what looks like a credential.
            VaultError: the objects cannot be written.
        """
        pygit2 = objects()
        repo = self._repo
        try:
            base = repo[head].peel(pygit2.Commit).tree
            data = {path: content for path, (content, _) in files.items()}
            self._refuse_secrets(data, base)
            changes: dict[str, Any] = {path: repo.create_blob(d) for path, d in data.items()}
            modes = {path: mode for path, (_, mode) in files.items()}
            tree = self._tree_with(base, changes, modes)
            signature = self._signature()
            from memstore.core.secrets import withhold_secret

            full = f"{withhold_secret(message, tuple(files)).rstrip()}\n\n{trailers.render()}"
            return str(repo.create_commit(None, signature, signature, full, tree, [head]))
        except (OSError, pygit2.GitError) as err:
            raise VaultError(f"cannot commit to {self.root}: {err}") from err

    def advance(self, head: str, commit: str, paths: tuple[str, ...]) -> bool:
        """Under the vault lock: move HEAD (its branch) from `head` to `commit`, made by
        `build_on` with the files `paths` hold on disk now, and bring git's index along
        as `commit(defer_index=True)` does; say whether it moved. HEAD no longer at `head`
        (another writer's commit meanwhile) changes nothing: the caller builds again.

        Raises:
            VaultError: the branch cannot be moved.
        """
        pygit2 = objects()
        if self.head() != head:
            return False
        repo = self._repo
        deferred = self._index_is_large() and not any("\n" in path for path in paths)
        if deferred:
            note_index_lag(self.root, paths, os.getpid())  # named before committing
        summary = repo[commit].message.partition("\n")[0]
        try:
            name = repo.head.name  # the branch HEAD names ("HEAD" itself when detached)
            repo.references[name].set_target(commit, f"commit: {summary}")
        except (OSError, pygit2.GitError) as err:
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
