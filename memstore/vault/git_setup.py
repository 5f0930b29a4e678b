"""The repository set up beside plain git: merge driver, a clone's remote branch, pull and push."""

from __future__ import annotations

import contextlib
import shlex
from typing import Any

from memstore.core.errors import VaultError
from memstore.vault.git_objects import FALLBACK_IDENTITY, GitObjects, _pygit2, take_back_stand_in


class GitSetup(GitObjects):
    """The repository's configuration and branches as a clone starts (part of GitRepo)."""

    def register_merge_driver(self, executable: str = "memstore") -> bool:
        """Register memstore's merge rules as the git merge driver for *.md; True if new.

        The driver lives in .git/config (git never copies it with a clone), so each machine
        runs `memstore init` once on its clone. `executable` is best an absolute path: git
        clients started outside a shell (editors, GUIs) may not have memstore on PATH.
        """
        config = self._repo.config
        driver = f"{shlex.quote(executable)} merge-file %O %A %B %P"
        current = config["merge.memstore.driver"] if "merge.memstore.driver" in config else ""  # noqa: SIM401 (pygit2 Config has no get)
        if current == driver:
            return False
        config["merge.memstore.name"] = (
            "memstore merge rules (counters add up, sets unite, no text lost)"
        )
        config["merge.memstore.driver"] = driver
        return True

    def merge_driver_command(self) -> str:
        """Return the command git runs for memstore's merge driver ('' if none is set)."""
        config = self._repo.config
        return str(config["merge.memstore.driver"]) if "merge.memstore.driver" in config else ""

    def branch_to_adopt(self) -> str:
        """Return the remote branch `adopt_remote_branch` would check out (a ref name), ''
        when there is none: HEAD has commits, or no single remote branch stands out."""
        if not self._repo.head_is_unborn:
            return ""
        remote_branches = self.remote_branches()
        # <remote>/main exactly (not feature/main), origin's first
        mains = sorted(
            (name for name in remote_branches if name.count("/") == 3 and name.endswith("/main")),
            key=lambda name: (name != "refs/remotes/origin/main", name),
        )
        chosen = mains[:1] or (remote_branches if len(remote_branches) == 1 else [])
        return chosen[0] if chosen else ""

    def remote_branches(self) -> list[str]:
        """Return the remote-tracking branches (ref names), sorted."""
        return sorted(
            name
            for name in self._repo.references
            if name.startswith("refs/remotes/") and not name.endswith("/HEAD")
        )

    def unseen_remote(self) -> str:
        """Return "NAME (URL)" of a remote this repository has never fetched from, when HEAD
        has no commits and the branch tracks nothing (a clone, even an empty one, tracks its
        remote; `git init` then `git remote add` does not); else ''."""
        repo = self._repo
        if not repo.head_is_unborn or self.remote_branches() or self.tracked_remote():
            return ""
        found = [(remote.name, remote.url) for remote in repo.remotes]
        return f"{found[0][0]} ({found[0][1]})" if found else ""

    def adopt_remote_branch(self) -> str:
        """In a repository without commits, check out the remote's branch; return its name.

        A clone of a bare repository whose HEAD names a branch nobody pushed (git's default
        `master` beside memstore's `main`) checks out nothing; committing there would start
        a second, unrelated history. This takes `<remote>/main`, or the only remote branch,
        and points HEAD at a local branch of that name. Without one, HEAD moves to `main`.
        Returns '' when there was nothing to adopt.
        """
        repo = self._repo
        if not repo.head_is_unborn:
            return ""
        unborn = self.branch()  # a clone's HEAD: the branch the remote's HEAD named
        chosen = self.branch_to_adopt()
        if not chosen:
            repo.set_head("refs/heads/main")
            self._move_tracking(unborn, "main")
            return ""
        branch = chosen.split("/", 3)[3]
        if f"refs/heads/{branch}" in repo.references:
            return ""  # a local branch of that name exists: never move it
        commit = str(repo.references[chosen].target)
        pygit2 = _pygit2()
        try:
            # SAFE: a file already in the work tree is never overwritten (the checkout fails)
            repo.checkout_tree(repo[commit], strategy=pygit2.enums.CheckoutStrategy.SAFE)
        except pygit2.GitError as err:
            raise VaultError(
                f"cannot check out {chosen.removeprefix('refs/remotes/')} in {self.root}: "
                f"{err}; move the files in the way aside and run 'memstore init' again"
            ) from err
        repo.references.create(f"refs/heads/{branch}", commit)
        repo.set_head(f"refs/heads/{branch}")
        remote_name = chosen.split("/")[2]
        self._move_tracking(unborn, "")
        repo.config[f"branch.{branch}.remote"] = remote_name
        repo.config[f"branch.{branch}.merge"] = f"refs/heads/{branch}"
        return f"{remote_name}/{branch}"

    def _move_tracking(self, old: str, new: str) -> None:
        """Drop the branch.`old`.* a clone wrote for a branch HEAD no longer names (so no
        stale `branch.master.*` stays); with `new`, that branch tracks the same remote."""
        config = self._repo.config
        if old == new or f"refs/heads/{old}" in self._repo.references:
            return
        try:
            remote = str(config[f"branch.{old}.remote"])
        except KeyError:
            return
        for key in ("remote", "merge"):
            with contextlib.suppress(KeyError):
                del config[f"branch.{old}.{key}"]
        if new and f"branch.{new}.remote" not in config:
            config[f"branch.{new}.remote"] = remote
            config[f"branch.{new}.merge"] = f"refs/heads/{new}"

    def prepare_plain_git(self, remote: str = "") -> list[str]:
        """Set up this repository so a plain `git pull` / `git push` works; return what changed.

        In .git/config only, never over a value set there: merge on pull (so git runs
        memstore's merge driver), the current branch's upstream on `remote` (when given),
        and an identity for git's merge commits when the user has none anywhere. That
        identity is memstore's own fallback signature, and it is removed again once the
        user has one of their own (a local value would hide it).
        """
        config = self._repo.config
        local_level = _pygit2().enums.ConfigLevel.LOCAL  # the repository's own .git/config
        local = {entry.name for entry in config if entry.level == local_level}
        changed = []
        if "pull.rebase" not in local:
            config["pull.rebase"] = "false"
            changed.append("pull.rebase=false")
        branch = self.branch()
        if remote and f"branch.{branch}.remote" not in local:
            config[f"branch.{branch}.remote"] = remote
            config[f"branch.{branch}.merge"] = f"refs/heads/{branch}"
            changed.append(f"branch {branch} tracks {remote}/{branch}")
        others = {entry.name for entry in config if entry.level != local_level}
        return changed + _prepare_identity(config, local, others)


def _prepare_identity(config: Any, local: set[str], others: set[str]) -> list[str]:
    """Give git an identity in .git/config when the user has none; take it back once they do."""
    changed = []
    for key, value in FALLBACK_IDENTITY.items():
        if key not in others and key not in local:
            config[key] = value
            changed.append(f"{key}={value} (you have none)")
    return changed + take_back_stand_in(config)
