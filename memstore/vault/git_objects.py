"""The vault repository's git objects: trees, blobs and commits read and built by id.

pygit2 is imported lazily so read-only commands that never commit do not pay for it.
Nothing here knows what a memory is: files are paths and bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memstore.core.codec import escape_name, is_utf8_name
from memstore.vault.git_lean import CACHE_BYTES as CACHE_BYTES
from memstore.vault.git_lean import objects, package

log = logging.getLogger("memstore.vault.git")

# A tree's file mode (pygit2.enums.FileMode.TREE), without importing pygit2 to say it.
TREE_MODE = 0o040000
# Who memstore's commits are by when the user has no git identity (and git's merges too:
# prepare_plain_git writes it into .git/config then).
FALLBACK_IDENTITY = {"user.name": "memstore", "user.email": "memstore@localhost"}


def take_back_stand_in(config: Any) -> list[str]:
    """Remove the stand-in identity from .git/config where the person has their own at
    another level (global, system); return what was removed, as `key=value removed (…)`."""
    local_level = _pygit2().enums.ConfigLevel.LOCAL  # the repository's own .git/config
    local = {entry.name for entry in config if entry.level == local_level}
    others = {entry.name for entry in config if entry.level != local_level}
    removed = []
    for key, value in FALLBACK_IDENTITY.items():
        if key in others and key in local and str(config[key]) == value:
            del config[key]
            removed.append(f"{key}={value} removed (yours applies)")
    return removed


def text_paths(paths: Iterable[str]) -> list[str]:
    """Return the paths that are UTF-8 text; say in one line which are not (left uncommitted:
    no commit message, id or index can hold their bytes)."""
    kept = []
    for path in paths:
        if path.isascii() or is_utf8_name(path):
            kept.append(path)
        elif path not in _REPORTED:  # once per process: a daemon would say it at every status
            _REPORTED.add(path)
            log.warning("skipped %s: its name is not UTF-8 (rename it)", escape_name(path))
    return kept


_REPORTED: set[str] = set()


def _pygit2() -> Any:  # imported by the other git modules of the vault
    return package()  # its object cache sized once (git_lean.CACHE_BYTES, TREE_CACHE_BYTES)


def entry_id(container: Any, path: str) -> Any:
    """The object id at `path` in a tree or git index, or None."""
    try:
        return container[path].id
    except KeyError:
        return None


def flatten(tree: Any, prefix: str = "") -> list[str]:
    paths = []
    for entry in tree:
        if entry.type_str == "tree":
            paths.extend(
                flatten(
                    entry.peel(_pygit2().Tree) if hasattr(entry, "peel") else entry,
                    f"{prefix}{entry.name}/",
                )
            )
        else:
            paths.append(f"{prefix}{entry.name}")
    return paths


def changes(repo: Any, old: Any, new: Any) -> tuple[list[str], list[str], list[str]]:
    """Return the file paths only `new` has, only `old` has, and both hold differently.

    What libgit2's tree diff names (added, deleted, modified; a file that became a folder or
    back is deleted and added), without reading a folder both trees hold unchanged: at
    100,000 memories the diff of two commits 500 memories apart cost 0.12-0.22 s of CPU in
    libgit2 and 0.007-0.011 s here, since libgit2 reads every entry of each changed folder
    through its iterators (a month folder holds up to 11,000 files at 1,000,000)."""
    added: list[str] = []
    deleted: list[str] = []
    modified: list[str] = []
    _walk_changes(repo, old, new, "", (added, deleted, modified))
    return sorted(added), sorted(deleted), sorted(modified)  # a diff's order: by path


def _walk_changes(
    repo: Any, old: Any, new: Any, prefix: str, out: tuple[list[str], list[str], list[str]]
) -> None:
    added, deleted, modified = out
    before = {entry.name: entry for entry in old} if old is not None else {}
    after = {entry.name: entry for entry in new} if new is not None else {}
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was is not None and now is not None and (was.id, was.filemode) == (now.id, now.filemode):
            continue
        was_tree = was is not None and was.filemode == TREE_MODE
        now_tree = now is not None and now.filemode == TREE_MODE
        if was_tree or now_tree:
            _walk_changes(
                repo,
                repo[was.id] if was_tree and was is not None else None,
                repo[now.id] if now_tree and now is not None else None,
                f"{prefix}{name}/",
                out,
            )
        path = f"{prefix}{name}"
        if was is not None and not was_tree and now is not None and not now_tree:
            modified.append(path)
        elif was is not None and not was_tree:
            deleted.append(path)
        elif now is not None and not now_tree:
            added.append(path)


BETWEEN_KEPT = 16  # pairs of commits whose differing paths are remembered


class GitObjects:
    """Reading a repository's objects, and building trees and blobs (no ref moves)."""

    _repo: Any
    root: Path

    def _signature(self) -> Any:
        pygit2 = objects()
        try:
            signature = self._repo.default_signature
            # The stand-in in .git/config would hide an identity set since: commit as the
            # person from now on, not only after the next sync or `remote add`
            stand_in = (signature.name, signature.email) == tuple(FALLBACK_IDENTITY.values())
            if stand_in and take_back_stand_in(self._repo.config):
                signature = self._repo.default_signature
            return signature
        except (KeyError, pygit2.GitError):
            return pygit2.Signature(FALLBACK_IDENTITY["user.name"], FALLBACK_IDENTITY["user.email"])

    def branch(self) -> str:
        """Return the current branch's name (the default branch when HEAD is unborn)."""
        ref = self._repo.references.get("HEAD")
        target = ref.target if ref is not None else "refs/heads/main"
        return str(target).removeprefix("refs/heads/") if isinstance(target, str) else "main"

    def tracked_remote(self) -> str:
        """Return the remote the current branch tracks (branch.<name>.remote), else ''."""
        try:
            value = self._repo.config[f"branch.{self.branch()}.remote"]
        except KeyError:
            return ""
        return str(value) if value != "." else ""

    def read_work_file(self, path: str) -> bytes | None:
        """Return the bytes of a work tree file, or None if there is none."""
        try:
            return (self.root / path).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def read_at(self, commit: str, path: str) -> bytes | None:
        """Return a file's bytes as of `commit`, or None if it did not exist then."""
        if not commit:
            return None
        tree = self._repo[commit].peel(_pygit2().Tree)
        try:
            return bytes(self._repo[tree[path].id].data)
        except KeyError:
            return None

    def holds_at(self, commit: str, path: str) -> bool:
        """Return whether `commit`'s tree has an entry at `path` (its blob is not read)."""
        return bool(commit) and entry_id(self._repo[commit].peel(_pygit2().Tree), path) is not None

    def ignored_untracked(self, paths: Iterable[str], head: str) -> set[str]:
        """Return those of `paths` git's ignore rules leave out and `head` does not hold:
        git's status never names them, so a commit of named paths must leave them too."""
        repo = self._repo  # a name that is not UTF-8 is left to changed_paths (it says so)
        named = [p for p in paths if p.isascii() or is_utf8_name(p)]
        return {p for p in named if repo.path_is_ignored(p) and not self.holds_at(head, p)}

    def paths_at(self, commit: str) -> list[str]:
        """Return the path of every file in `commit`'s tree."""
        return flatten(self._repo[commit].peel(_pygit2().Tree))

    def files_at(self, commit: str) -> dict[str, bytes]:
        """Return every file of `commit`'s tree (path → bytes)."""
        tree = self._repo[commit].peel(_pygit2().Tree)
        return {path: self.read_at(commit, path) or b"" for path in flatten(tree)}

    def tree_of(self, commit: str) -> str:
        """Return the id of a commit's tree."""
        return str(self._repo[commit].peel(_pygit2().Tree).id)

    def first_parent(self, commit: str) -> str:
        parents = self._repo[commit].parent_ids
        return str(parents[0]) if parents else ""

    def message_of(self, commit: str) -> str:
        return str(self._repo[commit].message)

    def paths_between(self, old: str, new: str) -> list[str]:
        """Return the paths that differ between two commits ('' old: all of `new`).

        Remembered per pair of commits (they never change): a sync asks the same pair up
        to five times, and at 1,000,000 memories each libgit2 diff of two commits 1,000
        memories apart cost 0.5-0.7 s (`changes` reads only the folders that differ)."""
        pygit2 = _pygit2()
        new_commit = self._repo[new]
        if not old:
            return flatten(new_commit.peel(pygit2.Tree))
        old_commit = self._repo[old]
        key = (str(old_commit.id), str(new_commit.id))
        known: dict[tuple[str, str], list[str]] = self.__dict__.setdefault("_between", {})
        if key not in known:
            added, deleted, modified = changes(
                self._repo, old_commit.peel(pygit2.Tree), new_commit.peel(pygit2.Tree)
            )
            if len(known) >= BETWEEN_KEPT:
                known.pop(next(iter(known)))
            known[key] = sorted({*added, *deleted, *modified})
        return list(known[key])

    def tree_changes(self, old: Any, new: Any) -> tuple[list[str], list[str], list[str]]:
        """Return the file paths only tree `new` holds, only `old` holds, and both differently."""
        return changes(self._repo, old, new)

    def tree_without(self, tree: Any, paths: set[str], prefix: str = "") -> Any:
        """Return the id of `tree` with `paths` (and folders left empty) taken out."""
        if not any(p.startswith(prefix) for p in paths):
            return tree.id
        builder = self._repo.TreeBuilder(tree)
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                sub = self.tree_without(self._repo[entry.id], paths, f"{path}/")
                if sub != entry.id:
                    builder.remove(entry.name)
                    if len(self._repo[sub]):
                        builder.insert(entry.name, sub, entry.filemode)
            elif path in paths:
                builder.remove(entry.name)
        return builder.write()

    def tree(self, commit: str) -> Any:
        """Return the tree object of a commit."""
        return self._repo[commit].peel(_pygit2().Tree)

    def lookup(self, oid: Any) -> Any:
        """Return the object (tree, blob or commit) with this id."""
        return self._repo[oid]

    def empty_tree(self) -> Any:
        """Return a tree with nothing in it (written to the object store)."""
        return self._repo[self._repo.TreeBuilder().write()]

    def tree_builder(self, tree: Any | None = None) -> Any:
        """Return a builder of a new tree starting from `tree` (None: empty)."""
        return self._repo.TreeBuilder(tree) if tree is not None else self._repo.TreeBuilder()

    def write_blob(self, data: bytes) -> Any:
        """Store `data` as a blob; return its id."""
        return self._repo.create_blob(data)
