"""Commits and the vault's history: trailers, the log, what a commit changed, when a path came."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memstore.core.errors import InvalidInputError
from memstore.vault.git_objects import GitObjects, _pygit2


@dataclass(frozen=True)
class Trailers:
    """Who made a change, written under the commit message."""

    source: str
    session: str
    host: str

    def __post_init__(self) -> None:
        for name in ("source", "session", "host"):
            check_trailer_value(name, getattr(self, name))

    def render(self) -> str:
        # A person's edit belongs to no session: it has no Session trailer to revert by.
        session = f"Memstore-Session: {self.session}\n" if self.session else ""
        return f"Memstore-Source: {self.source}\n{session}Memstore-Host: {self.host}\n"


_TRAILER_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}")


def check_trailer_value(name: str, value: str) -> str:
    """Return `value` if it fits on one trailer line, else raise InvalidInputError."""
    if value and not _TRAILER_VALUE.fullmatch(value):
        variable = {"source": "MEMSTORE_SOURCE", "session": "MEMSTORE_SESSION"}.get(
            name, "MEMSTORE_HOST"
        )
        raise InvalidInputError(
            f"invalid {name} {value[:40]!r} for a commit trailer; set {variable} to letters, "
            "digits and . _ : @ + - (one line, at most 128 characters)"
        )
    return value


@dataclass(frozen=True)
class Commit:
    """One commit of the vault's history and the paths it changed."""

    id: str
    message: str
    time: int
    paths: frozenset[str]
    parent: str
    # More than one parent: a merge (a sync bringing in another machine's work); its paths
    # are what the other side changed, measured against this side's parent.
    merge: bool = False

    def trailer(self, name: str) -> str:
        match = re.search(rf"^Memstore-{name}: (.+)$", self.message, re.MULTILINE)
        return match.group(1).strip() if match else ""


@dataclass(frozen=True)
class LogEntry:
    """One commit, for showing what happened."""

    commit: str
    summary: str
    message: str
    time: int


class GitLog(GitObjects):
    """Walking HEAD's history (part of GitRepo)."""

    def resolve(self, ref: str) -> str:
        """Return the commit id `ref` names, or '' if it does not exist."""
        found = self._repo.references.get(ref)
        return str(found.resolve().target) if found is not None else ""

    def merge_base(self, ours: str, theirs: str) -> str:
        """Return the best common ancestor of two commits ('' for unrelated histories)."""
        base = self._repo.merge_base(ours, theirs)
        return str(base) if base is not None else ""

    def contains(self, tip: str, commit: str) -> bool:
        """Return whether `commit` is `tip` or one of its ancestors."""
        if not tip or not commit or self._repo.get(commit) is None:
            return False
        return tip == commit or bool(self._repo.descendant_of(tip, commit))

    def messages_between(self, old: str, new: str) -> list[str]:
        """Return the messages of the commits `new` has and `old` has not, newest first."""
        pygit2 = _pygit2()
        walker = self._repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL)
        if old:
            walker.hide(old)
        return [commit.message for commit in walker]

    def commit_merge(
        self, tree: str, ours: str, theirs: str, message: str, trailers: Trailers
    ) -> str:
        """Create a merge commit of `tree` with parents ours and theirs (HEAD is not moved)."""
        return self.commit_tree(tree, [ours, theirs], message, trailers)

    def commit_tree(
        self, tree: str, parents: list[str], message: str, trailers: Trailers, more: str = ""
    ) -> str:
        """Create a commit of `tree` on `parents` (HEAD is not moved); `more` are extra
        trailer lines."""
        signature = self._signature()
        full = f"{message.rstrip()}\n\n{trailers.render()}{more}"
        return str(self._repo.create_commit(None, signature, signature, full, tree, parents))

    def history(self) -> list[Commit]:
        """Every commit of HEAD's history, newest first, with the paths each one changed."""
        if self._repo.head_is_unborn:
            return []
        pygit2 = _pygit2()
        out = []
        for commit in self._repo.walk(
            self._repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
        ):
            parent = commit.parents[0].tree if commit.parents else None
            diff = (
                commit.tree.diff_to_tree(parent, swap=True)
                if parent is not None
                else commit.tree.diff_to_tree(swap=True)
            )
            paths = {d.delta.new_file.path for d in diff} | {d.delta.old_file.path for d in diff}
            out.append(
                Commit(
                    str(commit.id),
                    commit.message,
                    commit.commit_time,
                    frozenset(paths),
                    str(commit.parent_ids[0]) if commit.parent_ids else "",
                    len(commit.parent_ids) > 1,
                )
            )
        return out

    def added_order(self, paths: Iterable[str]) -> dict[str, int]:
        """Return where in HEAD's history each path was added: a larger number, a later commit.

        Paths the history never added (not committed yet) are left out. Walks from HEAD back
        only until every path's adding commit is found: the cost follows how old they are.
        """
        return {path: -age for path, (age, _) in self._adding_commits(paths).items()}

    def added_by(self, paths: Iterable[str]) -> dict[str, str]:
        """Return who added each path: its adding commit's `Memstore-Source` trailer, else
        (a person's own `git commit`) the commit's author name. Paths never committed are
        left out; the walk stops as `added_order`'s does."""
        found = {}
        for path, (_, commit) in self._adding_commits(paths).items():
            trailer = re.search(r"^Memstore-Source: (.+)$", commit.message, re.MULTILINE)
            found[path] = trailer.group(1).strip() if trailer else commit.author.name
        return found

    def _adding_commits(self, paths: Iterable[str]) -> dict[str, tuple[int, Any]]:
        """Each path's adding commit in HEAD's history, with its age (0: HEAD)."""
        pending = set(paths)
        if not pending or self._repo.head_is_unborn:
            return {}
        pygit2 = _pygit2()
        found: dict[str, tuple[int, Any]] = {}
        folders: dict[Any, frozenset[str]] = {}  # a folder's tree id -> its names

        def holds(tree: Any, path: str) -> bool:
            # One read of each version of a folder, not one per path and commit: a month
            # folder holds thousands of files, and most commits leave it unchanged.
            folder, _, name = path.rpartition("/")
            try:
                sub = tree[folder] if folder else tree
            except KeyError:
                return False
            if sub.id not in folders:
                folders[sub.id] = frozenset(entry.name for entry in sub)
            return name in folders[sub.id]

        walker = self._repo.walk(
            self._repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
        )
        for age, commit in enumerate(walker):  # newest first
            tree, parents = commit.tree, [parent.tree for parent in commit.parents]
            for path in [p for p in pending if holds(tree, p)]:
                if not any(holds(parent, path) for parent in parents):
                    found[path] = (age, commit)
                    pending.discard(path)
            if not pending:
                break
        return found

    def log(self, limit: int = 20, *, since: str = "") -> list[LogEntry]:
        """Return the newest commits first; with `since`, only those after that commit."""
        if self._repo.head_is_unborn:
            return []
        pygit2 = _pygit2()
        entries = []
        walker = self._repo.walk(
            self._repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
        )
        if since:
            # An unknown commit (history rewritten) hides nothing: show the newest commits.
            with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
                walker.hide(since)
        for commit in walker:
            entries.append(
                LogEntry(
                    str(commit.id),
                    commit.message.splitlines()[0],
                    commit.message,
                    commit.commit_time,
                )
            )
            if len(entries) >= limit:
                break
        return entries
