"""The vault's git repository (pygit2): init, adopt, one commit per change, history.

pygit2 is imported lazily so read-only commands that never commit do not pay for it.
"""

from __future__ import annotations

import configparser
import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstore.errors import VaultError


@dataclass(frozen=True)
class Trailers:
    """Who made a change, written under the commit message."""

    source: str
    session: str
    host: str

    def render(self) -> str:
        return (
            f"Memstore-Source: {self.source}\n"
            f"Memstore-Session: {self.session}\n"
            f"Memstore-Host: {self.host}\n"
        )


@dataclass(frozen=True)
class LogEntry:
    """One commit, for showing what happened."""

    commit: str
    summary: str
    message: str
    time: int


def _pygit2() -> Any:
    import pygit2

    return pygit2


def find_enclosing_repository(path: Path) -> Path | None:
    """Return the work tree root of the git repository containing `path`, if any."""
    for folder in [path, *path.parents]:
        if (folder / ".git").exists():
            return folder
    return None


class GitRepo:
    """The git repository whose work tree is exactly the vault."""

    def __init__(self, repo: Any, root: Path) -> None:
        self._repo = repo
        self.root = root

    @classmethod
    def open(cls, root: Path) -> GitRepo:
        """Open the repository rooted at the vault; refuse one rooted above it."""
        owner = find_enclosing_repository(root)
        if owner is None:
            raise VaultError(f"{root} is not a git repository; run: memstore init {root}")
        if owner.resolve() != root.resolve():
            raise VaultError(parent_repository_message(root, owner))
        pygit2 = _pygit2()
        try:
            return cls(pygit2.Repository(str(root)), root)
        except pygit2.GitError as err:
            raise VaultError(f"cannot open the git repository at {root}: {err}") from err

    @classmethod
    def init(cls, root: Path) -> GitRepo:
        """Create a repository at `root` (which must not be inside another one)."""
        owner = find_enclosing_repository(root)
        if owner is not None and owner.resolve() != root.resolve():
            raise VaultError(parent_repository_message(root, owner))
        if owner is not None:
            return cls.open(root)
        pygit2 = _pygit2()
        try:
            repo = pygit2.init_repository(str(root), initial_head="main")
        except pygit2.GitError as err:
            raise VaultError(f"cannot create a git repository at {root}: {err}") from err
        return cls(repo, root)

    def head(self) -> str:
        """Return the commit id HEAD points at, or '' in a repository with no commits."""
        if self._repo.head_is_unborn:
            return ""
        return str(self._repo.head.target)

    def _signature(self) -> Any:
        pygit2 = _pygit2()
        try:
            return self._repo.default_signature
        except (KeyError, pygit2.GitError):
            return pygit2.Signature("memstore", "memstore@localhost")

    def commit(
        self,
        message: str,
        trailers: Trailers,
        *,
        add: tuple[str, ...] = (),
        remove: tuple[str, ...] = (),
    ) -> str:
        """Stage `add` and `remove` (vault-relative paths) and commit them; return the id."""
        pygit2 = _pygit2()
        repo = self._repo
        try:
            index = repo.index
            # The index object is cached per Repository: reload it, or a commit made by
            # another process since we opened the repository would be dropped from HEAD.
            index.read(False)
            for path in add:
                index.add(path)
            for path in remove:
                if path in index:
                    index.remove(path)
            tree = index.write_tree()  # before index.write(), so the tree cache is saved
            index.write()
            parents = [] if repo.head_is_unborn else [repo.head.target]
            signature = self._signature()
            full = f"{message.rstrip()}\n\n{trailers.render()}"
            oid = repo.create_commit("HEAD", signature, signature, full, tree, parents)
        except pygit2.GitError as err:
            raise VaultError(f"cannot commit to {self.root}: {err}") from err
        return str(oid)

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


def parent_repository_message(root: Path, owner: Path) -> str:
    """Explain why memstore will not commit into a repository rooted above the vault."""
    return (
        f"{root} is inside the git repository at {owner}; a vault needs a repository of "
        f"its own: copy the folder outside it (cp -r {root} ~/memstore) and run "
        f"'memstore init ~/memstore', or run 'memstore demo'"
    )


_REMOTE_NAME = re.compile(r"([^/:]+?)(?:\.git)?/*$")


def detect_workspace(cwd: Path) -> str | None:
    """Return the workspace for work in `cwd`: the repository's remote name, else its folder.

    Reads .git/config directly (no pygit2) because it runs on every search.
    """
    root = find_enclosing_repository(cwd)
    if root is None:
        return None
    remote = _remote_url(root / ".git")
    if remote:
        match = _REMOTE_NAME.search(remote.strip())
        if match:
            return match.group(1)
    return root.name


def _remote_url(git_dir: Path) -> str:
    if git_dir.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = git_dir.read_text(encoding="utf-8", errors="replace").strip()
        if not text.startswith("gitdir:"):
            return ""
        git_dir = (git_dir.parent / text.removeprefix("gitdir:").strip()).resolve()
        common = git_dir / "commondir"
        if common.exists():
            git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(git_dir / "config", encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return ""
    sections = [s for s in parser.sections() if s.startswith("remote ")]
    sections.sort(key=lambda s: (s != 'remote "origin"', s))
    for section in sections:
        url = parser.get(section, "url", fallback="")
        if url:
            return url
    return ""
