"""When a file in a code repository last changed: the newest commit touching a path (pygit2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstore.vault.git_objects import _pygit2

_WALK_LIMIT = 2000  # commits walked back before giving up: a cite older than that says less


@dataclass(frozen=True)
class PathChange:
    """A commit that changed (or added or removed) a path."""

    commit: str
    time: int  # commit time, seconds since the epoch
    blob: str  # the path's blob id after the commit ("" when the commit removed it)


class PathHistory:
    """One code repository's history of paths, cached by HEAD and path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._repo: Any = None
        self._found: dict[tuple[str, str], PathChange | None] = {}

    def last_change(self, path: str) -> PathChange | None:
        """Return the newest commit of HEAD's history that changed `path`, or None."""
        repo = self._open()
        if repo is None or repo.head_is_unborn:
            return None
        head = str(repo.head.target)
        if (head, path) not in self._found:
            self._found[(head, path)] = self._walk(repo, path)
        return self._found[(head, path)]

    def _open(self) -> Any:
        if self._repo is None:
            pygit2 = _pygit2()
            try:
                self._repo = pygit2.Repository(str(self.root))
            except pygit2.GitError:
                return None
        return self._repo

    def _walk(self, repo: Any, path: str) -> PathChange | None:
        pygit2 = _pygit2()
        walker = repo.walk(repo.head.target, pygit2.enums.SortMode.TIME)
        for count, commit in enumerate(walker):
            if count >= _WALK_LIMIT:
                return None
            mine = _blob_at(commit.tree, path)
            parents = [_blob_at(parent.tree, path) for parent in commit.parents] or [None]
            if all(parent != mine for parent in parents):
                return PathChange(str(commit.id), commit.commit_time, str(mine or ""))
        return None


def _blob_at(tree: Any, path: str) -> Any:
    try:
        return tree[path].id
    except KeyError:
        return None
