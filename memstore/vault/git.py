"""The vault's git repository (pygit2): init, adopt, one commit per change, history.

pygit2 is imported lazily so read-only commands that never commit do not pay for it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstore.core.codec import escape_name, is_utf8_name, parse_memory
from memstore.core.errors import InvalidInputError, SecretError, UncommittedEditError, VaultError
from memstore.core.faults import crash_point
from memstore.core.repo_name import find_enclosing_repository
from memstore.core.secrets import find_added_secret, withhold_secret

log = logging.getLogger(__name__)

# Decides one file both sides changed: (path, base, ours, theirs) bytes → merged bytes, or
# None to delete it. A missing side is None.
Resolver = Callable[[str, bytes | None, bytes | None, bytes | None], bytes | None]


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

    def trailer(self, name: str) -> str:
        match = re.search(rf"^Memstore-{name}: (.+)$", self.message, re.MULTILINE)
        return match.group(1).strip() if match else ""


@dataclass
class Rewrite:
    """What a history rewrite (GitRepo.rewrite_without) did."""

    changed: int = 0
    roots: list[str] = field(default_factory=list)  # first old commits rewritten
    mapping: dict[str, str] = field(default_factory=dict)  # old commit → new


@dataclass(frozen=True)
class LogEntry:
    """One commit, for showing what happened."""

    commit: str
    summary: str
    message: str
    time: int


def _text_paths(paths: Iterable[str]) -> list[str]:
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


def _pygit2() -> Any:
    import pygit2

    return pygit2


# Paths committed while git's index was left behind (see GitRepo.commit): "<pid> <path>"
# lines, in .git/ beside the index they describe.
INDEX_LAG = "memstore-index-lag"
# A git index this big (about 30,000 files) costs a write proportional to the vault on
# every commit: commits that may defer it then leave it to sync_index (docs/file-format.md).
DEFER_INDEX_BYTES = 4_000_000
# Who memstore's commits are by when the user has no git identity (and git's merges too:
# prepare_plain_git writes it into .git/config then).
_FALLBACK_IDENTITY = {"user.name": "memstore", "user.email": "memstore@localhost"}


class GitRepo:
    """The git repository whose work tree is exactly the vault."""

    def __init__(self, repo: Any, root: Path) -> None:
        self._repo = repo
        self.root = root
        self.defer_index_bytes = DEFER_INDEX_BYTES
        # (path, kind) of files already said to be held back for a credential: said once
        # per process, not at every sync step or watcher batch.
        self.told_held: set[tuple[str, str]] = set()

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
            return pygit2.Signature(
                _FALLBACK_IDENTITY["user.name"], _FALLBACK_IDENTITY["user.email"]
            )

    def commit(
        self,
        message: str,
        trailers: Trailers,
        *,
        add: tuple[str, ...] = (),
        remove: tuple[str, ...] = (),
        defer_index: bool = False,
        allow_secret: bool = False,
    ) -> str:
        """Commit `add` and `remove` (vault-relative paths) on top of HEAD; return the id.

        The new tree is HEAD's tree with only these paths changed (built directly: only
        the trees on their way are rewritten), and the git index is updated for the same
        paths so `git status` stays clean. Other changes a person staged by hand are
        neither committed nor lost. With `defer_index`, a large git index (written whole
        each time) is left for `sync_index`, and the paths are noted for it first.

        Every commit memstore makes of a file passes here, so here every file is scanned:
        a line it adds that looks like a credential refuses the whole commit (SecretError,
        naming the file and the kind, never the text), unless `allow_secret` (a person's
        `add --allow-secret`). A message that would show a credential names the files.

        Raises:
            SecretError: a file holds what looks like a credential.
        """
        pygit2 = _pygit2()
        repo = self._repo
        paths = (*add, *remove)
        deferred = defer_index and self._index_is_large() and not any("\n" in p for p in paths)
        try:
            base = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree
            data = {p: self.root.joinpath(p).read_bytes() for p in add}
            if not allow_secret:
                self._refuse_secrets(data, base)
            if deferred:
                self._note_lag(paths)  # before the commit: a kill after it still names them
            changes: dict[str, Any] = {p: repo.create_blob(d) for p, d in data.items()}
            changes.update({p: None for p in remove})
            tree = self._tree_with(base, changes)
            parents = [] if repo.head_is_unborn else [repo.head.target]
            signature = self._signature()
            full = f"{withhold_secret(message, paths).rstrip()}\n\n{trailers.render()}"
            oid = repo.create_commit("HEAD", signature, signature, full, tree, parents)
        except (OSError, pygit2.GitError) as err:
            raise VaultError(f"cannot commit to {self.root}: {err}") from err
        crash_point("git-commit")
        if deferred:
            return str(oid)
        # The commit stands from here on: a failure to update git's index only leaves
        # `git status` stale, which the next memstore command repairs.
        try:
            self._stage(add, remove)
        except (OSError, pygit2.GitError) as err:
            log.warning(
                "committed %s, but git's index was not updated (%s); the next memstore "
                "command repairs it",
                str(oid)[:8],
                err,
            )
        return str(oid)

    def secrets_among(self, paths: Iterable[str]) -> dict[str, str]:
        """Return {path: kind} for the work tree files among `paths` whose uncommitted lines
        hold what looks like a credential (the scan `commit` makes)."""
        base = self._head_tree()
        found = {}
        for path in paths:
            data = self.read_work_file(path)
            kind = find_added_secret(data, _blob_bytes(base, path)) if data is not None else None
            if kind:
                found[path] = kind
        return found

    def check_secrets(self, files: dict[str, bytes]) -> None:
        """Refuse (SecretError) files about to be written whose new lines hold a credential:
        for a writer that changes several files, so it can refuse before touching any."""
        self._refuse_secrets(files, self._head_tree())

    def _head_tree(self) -> Any:
        """Return HEAD's tree, None on an unborn branch.

        Raises:
            VaultError: HEAD cannot be read (a repository removed or broken).
        """
        pygit2 = _pygit2()
        try:
            return None if self._repo.head_is_unborn else self._repo.head.peel(pygit2.Commit).tree
        except pygit2.GitError as err:
            raise VaultError(f"cannot read HEAD in {self.root}: {err}") from err

    def _refuse_secrets(self, data: dict[str, bytes], base: Any) -> None:
        for path, content in data.items():
            kind = find_added_secret(content, _blob_bytes(base, path))
            if kind:
                raise SecretError(secret_message(path, kind))

    def _stage(self, add: tuple[str, ...], remove: tuple[str, ...]) -> None:
        index = self._repo.index
        # The index object is cached per Repository: reload it, or changes another
        # process wrote to it since we opened the repository would be overwritten.
        index.read(False)
        lagging = self.index_lag()[1]
        self._stage_as_head(index, lagging)  # one write brings deferred paths along
        for path in add:
            index.add(path)
        for path in remove:
            if path in index:
                index.remove(path)
        index.write()
        if lagging:
            self._lag_file().unlink(missing_ok=True)

    def _index_is_large(self) -> bool:
        try:
            return (self.root / ".git" / "index").stat().st_size >= self.defer_index_bytes
        except OSError:
            return False

    def _lag_file(self) -> Path:
        return self.root / ".git" / INDEX_LAG

    def _note_lag(self, paths: tuple[str, ...]) -> None:
        with open(self._lag_file(), "a", encoding="utf-8") as lag:
            lag.write("".join(f"{os.getpid()} {path}\n" for path in paths))

    def index_lag(self) -> tuple[set[int], list[str]]:
        """Return the processes that deferred git's index and the paths they committed."""
        return read_index_lag(self.root)

    def sync_index(self) -> list[str]:
        """Bring git's index up to HEAD for the paths commits left it behind on; return them.

        An entry becomes what HEAD holds: a file a person changed since shows as their
        unstaged change, as it would after any commit.
        """
        lagging = self.index_lag()[1]
        if not lagging:
            return []
        pygit2 = _pygit2()
        try:
            index = self._repo.index
            index.read(False)
            self._stage_as_head(index, lagging)
            index.write()
        except (OSError, pygit2.GitError) as err:
            raise VaultError(f"cannot update git's index in {self.root}: {err}") from err
        self._lag_file().unlink(missing_ok=True)
        return lagging

    def _stage_as_head(self, index: Any, paths: list[str]) -> None:
        if not paths:
            return
        pygit2 = _pygit2()
        tree = None if self._repo.head_is_unborn else self._repo.head.peel(pygit2.Commit).tree
        for path in paths:
            try:
                committed = tree[path] if tree is not None else None
            except KeyError:
                committed = None
            if committed is None:
                if path in index:
                    index.remove(path)
            elif path not in self.changed_paths([path]):
                index.add(path)  # the file as committed, with its stat data: status stays fast
            else:
                index.add(pygit2.IndexEntry(path, committed.id, committed.filemode))

    def _tree_with(self, base: Any, changes: dict[str, Any]) -> Any:
        """Return the id of `base` (a tree or None) with paths set to blobs or removed."""
        pygit2 = _pygit2()
        repo = self._repo
        builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
        here: dict[str, Any] = {}
        below: dict[str, dict[str, Any]] = {}
        for path, blob in changes.items():
            head, _, rest = path.partition("/")
            if rest:
                below.setdefault(head, {})[rest] = blob
            else:
                here[head] = blob
        for name, blob in here.items():
            if blob is None:
                if base is not None and name in base:
                    builder.remove(name)
            else:
                builder.insert(name, blob, pygit2.enums.FileMode.BLOB)
        for name, sub in below.items():
            current = base[name] if base is not None and name in base else None
            subtree = (
                repo[current.id] if current is not None and current.type_str == "tree" else None
            )
            oid = self._tree_with(subtree, sub)
            if len(repo[oid]):
                builder.insert(name, oid, pygit2.enums.FileMode.TREE)
            elif current is not None:
                builder.remove(name)
        return builder.write()

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

    def ref_history(self, ref: str) -> list[str]:
        """Return the commits `ref` pointed at, newest first, as its reflog remembers them."""
        found = self._repo.references.get(ref)
        if found is None:
            return []
        try:
            entries = list(found.log())
        except _pygit2().GitError:
            return []
        ids = [str(e.oid_new) for e in entries] + [str(e.oid_old) for e in entries[-1:]]
        return [i for i in dict.fromkeys(ids) if i.strip("0")]

    def repair_index(self, paths: Iterable[str] | None = None) -> list[str]:
        """Point git's index back at HEAD for files whose entry a killed commit left stale;
        return them. `paths` limits the check (None: every entry that differs from HEAD).
        Files that differ from HEAD on disk (a person's work) are left alone.
        """
        pygit2 = _pygit2()
        repo = self._repo
        if repo.head_is_unborn:
            return []
        self.sync_index()  # deferred on purpose: not a killed commit's leftovers
        try:
            index = repo.index
            index.read(False)
            tree = repo.head.peel(pygit2.Commit).tree
            if paths is None:
                stale = {
                    d.new_file.path or d.old_file.path for d in index.diff_to_tree(tree).deltas
                }
            else:
                stale = {p for p in paths if _entry_id(index, p) != _entry_id(tree, p)}
            fixed = [p for p in sorted(stale) if p not in self.changed_paths([p])]
            for path in fixed:
                if (self.root / path).is_file():
                    index.add(path)
                elif path in index:
                    index.remove(path)
            if fixed or paths is None:
                index.write()  # also dates the index after HEAD, so the check stays cheap
        except (OSError, pygit2.GitError) as err:
            raise VaultError(f"cannot repair git's index in {self.root}: {err}") from err
        return fixed

    def changed_paths(self, paths: Iterable[str] | None = None) -> list[str]:
        """Return the files that differ from HEAD: of `paths`, or (None) anywhere.

        Checking named paths hashes just those files; None asks git's status, whose cost
        grows with the vault.
        """
        if paths is None:
            return self._status_paths()
        paths = _text_paths(paths)
        pygit2 = _pygit2()
        tree = self._head_tree()
        changed = []
        for path in dict.fromkeys(paths):
            try:
                committed = tree[path].id if tree is not None else None
            except KeyError:
                committed = None
            file = self.root / path
            try:
                on_disk = pygit2.hashfile(str(file)) if file.is_file() else None
            except (OSError, pygit2.GitError):
                on_disk = None
            if committed != on_disk:
                changed.append(path)
        return changed

    def _status_paths(self) -> list[str]:
        pygit2 = _pygit2()
        flags = pygit2.enums.FileStatus
        quiet = flags.CURRENT | flags.IGNORED
        self.sync_index()
        try:
            status = self._repo.status()
        except pygit2.GitError as err:
            raise VaultError(f"cannot read git status in {self.root}: {err}") from err
        return sorted(_text_paths(path for path, state in status.items() if state & ~quiet))

    def merge_trees(
        self,
        base: str,
        ours: str,
        theirs: str,
        resolve: Resolver,
        *,
        dropped: frozenset[str] = frozenset(),
    ) -> str:
        """Merge the trees of three commits; `resolve` decides files both sides changed.

        Returns the merged tree's id. Subtrees equal on two sides are taken whole, so the
        work is proportional to what changed, not to the size of the vault. `dropped`
        paths are taken out of the base and ours first (purged from theirs' history).
        """
        repo = self._repo

        def tree_of(commit: str) -> Any:
            if not commit:
                return None
            tree = repo[commit].peel(_pygit2().Tree)
            if dropped and commit != theirs:
                tree = repo[self._tree_without(tree, set(dropped), "")]
            return tree

        trees = self._follow_moves(tree_of(base), tree_of(ours), tree_of(theirs))
        return str(self._merge_tree(*trees, "", resolve))

    def _follow_moves(self, base: Any, ours: Any, theirs: Any) -> tuple[Any, Any, Any]:
        """Carry each side's moves of a file (same name, another folder: a memory moved to
        another workspace) into the other side and the base, so an edit on one side and a
        move on the other meet in one file instead of leaving two with one id. One memory
        both sides added in different folders of its workspace (two layouts, or two months)
        meets the same way, at the first of its two paths."""
        if ours is None or theirs is None:
            return base, ours, theirs
        start = base if base is not None else self._repo[self._repo.TreeBuilder().write()]
        mine, mine_added = self._moves(start, ours)
        yours, yours_added = self._moves(start, theirs)
        moved = {**yours, **mine}
        for old, new in yours.items():
            if old in mine and mine[old] != new:  # both moved it: one fixed choice
                keep, drop = sorted((mine[old], new))
                moved[old], moved[drop] = keep, keep
        moved.update(self._added_twice(mine_added, yours_added, ours, theirs))
        # Follow a move only where nothing else stands at its destination: otherwise plain
        # delete-vs-change keeps the other side's edit at the old path.
        moved = {
            old: new
            for old, new in moved.items()
            if _entry_id(start, new) is None
            and not any(
                _entry_id(t, old) is not None and _entry_id(t, new) is not None
                for t in (ours, theirs)
            )
        }
        if not moved:
            return base, ours, theirs
        return (
            self._apply_moves(base, moved) if base is not None else None,
            self._apply_moves(ours, moved),
            self._apply_moves(theirs, moved),
        )

    def _moves(self, base: Any, side: Any) -> tuple[dict[str, str], dict[str, list[str]]]:
        """Return a side's moves (old path → new) and what it added, by file name."""
        diff = base.diff_to_tree(side)
        gone = [d.old_file.path for d in diff.deltas if d.status_char() == "D"]
        added = [d.new_file.path for d in diff.deltas if d.status_char() == "A"]
        by_name: dict[str, list[str]] = {}
        for path in added:
            by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        moves = {
            old: by_name[name][0]
            for old in gone
            if len(by_name.get(name := old.rsplit("/", 1)[-1], [])) == 1
        }
        return moves, by_name

    def _added_twice(
        self, mine: dict[str, list[str]], yours: dict[str, list[str]], ours: Any, theirs: Any
    ) -> dict[str, str]:
        """One memory each side added under a different folder of one workspace: the later
        of its two paths → the first (the same on every machine, whichever side merges)."""
        moved = {}
        for name in mine.keys() & yours.keys():
            if len(mine[name]) != 1 or len(yours[name]) != 1:
                continue
            here, there = mine[name][0], yours[name][0]
            if here == there or here.split("/", 1)[0] != there.split("/", 1)[0]:
                continue
            if self._same_memory(here, ours[here].id, there, theirs[there].id):
                first, second = sorted((here, there))
                moved[second] = first
        return moved

    def _same_memory(self, here: str, one: Any, there: str, other: Any) -> bool:
        """Whether two blobs are memory files with one id in their front matter."""
        memories = [
            parse_memory(bytes(self._repo[oid].data).decode("utf-8", "replace"), path=path)
            for path, oid in ((here, one), (there, other))
        ]
        return all(m.has_front_matter and not m.problem for m in memories) and (
            memories[0].id == memories[1].id
        )

    def _apply_moves(self, tree: Any, moved: dict[str, str]) -> Any:
        changes: dict[str, Any] = {}
        for old, new in moved.items():
            entry = _entry_id(tree, old)
            if entry is None:
                continue
            changes[old] = None
            changes[new] = entry
        return self._repo[self._tree_with(tree, changes)] if changes else tree

    def _merge_tree(self, base: Any, ours: Any, theirs: Any, prefix: str, resolve: Resolver) -> Any:
        pygit2 = _pygit2()
        repo = self._repo
        ids = [t.id if t is not None else None for t in (base, ours, theirs)]
        # A side equal to the base changed nothing: take the other whole. Both sides changed
        # (even identically) means independent edits: descend, so counters add up.
        if ids[0] == ids[2]:
            return ids[1]
        if ids[0] == ids[1]:
            return ids[2]
        entries: dict[str, int] = {}
        for tree in (base, ours, theirs):
            for entry in tree or ():
                entries.setdefault(entry.name, entry.filemode)
        # Start from ours and change only what differs: an entry whose name is not UTF-8 can
        # be carried over but not inserted (pygit2 takes names as text)
        builder = repo.TreeBuilder(ours) if ours is not None else repo.TreeBuilder()
        for name in sorted(entries):
            sides = [
                tree[name] if tree is not None and name in tree else None
                for tree in (base, ours, theirs)
            ]
            path = f"{prefix}{name}"
            if any(e is not None and e.type_str == "tree" for e in sides):
                subtrees = [e if e is not None and e.type_str == "tree" else None for e in sides]
                b, o, t = (repo[e.id] if e is not None else None for e in subtrees)
                oid = self._merge_tree(b, o, t, f"{path}/", resolve)
                mode = pygit2.enums.FileMode.TREE
            else:
                oid, mode = self._merge_blob(sides, path, resolve)
            if oid is not None and mode == pygit2.enums.FileMode.TREE and len(repo[oid]) == 0:
                oid = None
            mine = sides[1]
            if mine is None and oid is None:
                continue
            if mine is not None and oid is not None and (mine.id, mine.filemode) == (oid, mode):
                continue
            if not _text_paths([path]):
                continue  # said in one line; this side's version stays
            if oid is None:
                builder.remove(name)
            else:
                builder.insert(name, oid, mode)
        return builder.write()

    def _merge_blob(self, sides: list[Any], path: str, resolve: Resolver) -> tuple[Any, int]:
        base, ours, theirs = (e.id if e is not None else None for e in sides)
        mode = next(e.filemode for e in (sides[1], sides[2], sides[0]) if e is not None)
        if base is None and (ours is None or theirs is None):
            return ours or theirs, mode  # added on one side only
        if ours == base:
            return theirs, mode  # None: deleted on their side, untouched on ours
        if theirs == base or ours is None is theirs:
            return ours, mode
        # Both sides changed it, even if identically: identical independent changes of a
        # memory still count each side's increments.
        texts = [
            bytes(self._repo[oid].data) if oid is not None else None for oid in (base, ours, theirs)
        ]
        merged = resolve(path, texts[0], texts[1], texts[2])
        if merged is None:
            return None, mode
        return self._repo.create_blob(merged), mode

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

    def tree_of(self, commit: str) -> str:
        """Return the id of a commit's tree."""
        return str(self._repo[commit].peel(_pygit2().Tree).id)

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

    def move_to(self, commit: str, *, force: bool = False) -> None:
        """Check out `commit` into the work tree and point the current branch at it.

        The checkout never overwrites a file that differs from HEAD (a person's edit made
        while a sync fetched): it raises UncommittedEditError instead, and nothing moves.
        `force` overwrites all the same (the caller knows every changed file is its own).
        """
        pygit2 = _pygit2()
        repo = self._repo
        strategy = pygit2.enums.CheckoutStrategy
        self.sync_index()  # a checkout compares the work tree with git's index
        try:
            repo.checkout_tree(repo[commit], strategy=strategy.FORCE if force else strategy.SAFE)
        except pygit2.GitError as err:
            if "conflict" in str(err).lower():
                raise UncommittedEditError(
                    f"a file changed while memstore checked out {commit[:8]}: {err}"
                ) from err
            raise VaultError(f"cannot check out {commit[:8]} in {self.root}: {err}") from err
        crash_point("checkout")
        try:
            branch = f"refs/heads/{self.branch()}"
            if branch in repo.references:
                repo.references[branch].set_target(commit)
            else:
                repo.references.create(branch, commit)
            # Date git's index after the branch, or the next command takes it for a
            # killed commit's leftovers and compares it with HEAD.
            repo.index.read(False)
            repo.index.write()
        except pygit2.GitError as err:
            raise VaultError(f"cannot move {self.branch()} to {commit[:8]}: {err}") from err

    def restore_paths(self, commit: str, paths: list[str]) -> None:
        """Put `paths` back as `commit` has them (files memstore itself half wrote)."""
        if not paths:
            return
        pygit2 = _pygit2()
        self.sync_index()
        try:
            self._repo.checkout_tree(
                self._repo[commit], paths=paths, strategy=pygit2.enums.CheckoutStrategy.FORCE
            )
        except pygit2.GitError as err:
            raise VaultError(f"cannot restore {paths[0]} in {self.root}: {err}") from err

    def paths_between(self, old: str, new: str) -> list[str]:
        """Return the paths that differ between two commits ('' old: all of `new`)."""
        pygit2 = _pygit2()
        new_tree = self._repo[new].peel(pygit2.Tree)
        if not old:
            return _flatten(new_tree)
        diff = self._repo[old].peel(pygit2.Tree).diff_to_tree(new_tree)
        return sorted({d.new_file.path for d in diff.deltas})

    def read_work_file(self, path: str) -> bytes | None:
        """Return the bytes of a work tree file, or None if there is none."""
        try:
            return (self.root / path).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def paths_ever(self, suffix: str) -> set[str]:
        """Return every path ending in `suffix` that any commit of any ref ever held."""
        found: set[str] = set()
        for commit in self._all_commits():
            found.update(p for p in _flatten(commit.tree) if p.endswith(suffix))
        return found

    def rewrite_without(
        self,
        paths: set[str],
        scrub: str = "",
        replacement: str = "[purged]",
        *,
        checkout: bool = True,
        known: Mapping[str, str] | None = None,
        move: bool = True,
        refs: Collection[str] | None = None,
    ) -> Rewrite:
        """Rewrite every commit of every ref (of `refs` only, when given) without `paths`.

        `scrub`, when given, is replaced by `replacement` in every commit message (commit
        summaries quote the memory's text). With `known` (old → new: what a purge rewrote,
        when history fetched again after it is rewritten), those commits map to the ones
        the purge made, and a commit made since that changed one of `paths` gets
        `replacement` for its subject (its own may quote the memory's text).

        Messages, authors and times are kept; refs move to the rewritten commits (with
        `move` False they do not: the caller records the mapping first, then moves them with
        move_rewritten). The old objects stay until the caller expires the reflog and prunes
        (remote.prune_unreachable).
        """
        repo = self._repo
        known = known or {}
        rewritten: dict[str, str] = {}
        done = Rewrite()
        for commit in self._all_commits(refs):  # parents before children
            old = str(commit.id)
            if old in known and repo.get(known[old]) is not None:
                rewritten[old] = known[old]
                done.changed += 1
                continue
            tree = self._tree_without(commit.tree, paths, "")
            parents = [rewritten.get(str(p), str(p)) for p in commit.parent_ids]
            message = commit.message.replace(scrub, replacement) if scrub else commit.message
            if known and self._touches(commit, paths):
                subject, _, rest = commit.message.partition("\n")
                verb = subject.split(":", 1)[0] if ":" in subject else "edit"
                message = f"{verb}: {replacement}\n{rest}"
            unchanged = message == commit.message and parents == [str(p) for p in commit.parent_ids]
            if tree == commit.tree.id and unchanged:
                continue
            new = repo.create_commit(None, commit.author, commit.committer, message, tree, parents)
            if not any(str(p) in rewritten for p in commit.parent_ids):
                done.roots.append(old)
            rewritten[old] = str(new)
            done.changed += 1
        done.mapping = rewritten
        if move:
            self.move_rewritten(rewritten, checkout=checkout, refs=refs)
        return done

    def move_rewritten(
        self,
        mapping: Mapping[str, str],
        *,
        checkout: bool = True,
        refs: Collection[str] | None = None,
    ) -> None:
        """Move every ref (of `refs`, when given) that points at an old commit of `mapping`
        to its rewritten commit; with `checkout`, the work tree follows HEAD."""
        pygit2 = _pygit2()
        repo = self._repo
        for ref in list(repo.references if refs is None else refs):
            reference = repo.references.get(ref)
            if (
                reference is not None
                and reference.type == pygit2.enums.ReferenceType.DIRECT
                and str(reference.target) in mapping
            ):
                reference.set_target(mapping[str(reference.target)])
        if mapping and checkout:
            self.sync_index()
            repo.checkout_head(strategy=pygit2.enums.CheckoutStrategy.FORCE)

    def first_parent_line(self, old: str, new: str) -> list[str]:
        """Return the commits on `new`'s first-parent line back to (not including) `old`,
        oldest first."""
        pygit2 = _pygit2()
        walker = self._repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL)
        walker.simplify_first_parent()
        walker.hide(old)
        return [str(commit.id) for commit in walker][::-1]

    def touches(self, commit: str, paths: set[str]) -> bool:
        """Return whether `commit` changed one of `paths` from its first parent."""
        return self._touches(self._repo[commit], paths)

    def message_of(self, commit: str) -> str:
        return str(self._repo[commit].message)

    def replay(self, commit: str, tree: str, parent: str, message: str) -> str:
        """Create a copy of `commit` (its author and committer) with `tree` and `message`,
        on `parent` alone (HEAD is not moved)."""
        old = self._repo[commit]
        made = self._repo.create_commit(None, old.author, old.committer, message, tree, [parent])
        return str(made)

    def _touches(self, commit: Any, paths: set[str]) -> bool:
        """Return whether `commit` changed one of `paths` from its first parent."""
        parent = commit.parents[0].tree if commit.parents else None
        return any(
            _entry_id(commit.tree, path) != (_entry_id(parent, path) if parent else None)
            for path in paths
        )

    def _all_commits(self, refs: Collection[str] | None = None) -> list[Any]:
        """Every commit reachable from any ref (of `refs`, when given), parents first."""
        pygit2 = _pygit2()
        repo = self._repo
        seen: dict[str, Any] = {}
        for ref in repo.references if refs is None else refs:
            if repo.references.get(ref) is None:
                continue
            target = repo.references[ref].resolve().target
            obj = repo.get(target)
            if obj is None or obj.type != pygit2.enums.ObjectType.COMMIT:
                continue
            for commit in repo.walk(target, pygit2.enums.SortMode.TOPOLOGICAL):
                if str(commit.id) in seen:
                    continue
                seen[str(commit.id)] = commit
        ordered = sorted(seen.values(), key=lambda c: (c.commit_time, str(c.id)))
        return _topological(ordered)

    def _tree_without(self, tree: Any, paths: set[str], prefix: str) -> Any:
        if not any(p.startswith(prefix) for p in paths):
            return tree.id
        builder = self._repo.TreeBuilder(tree)
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                sub = self._tree_without(self._repo[entry.id], paths, f"{path}/")
                if sub != entry.id:
                    builder.remove(entry.name)
                    if len(self._repo[sub]):
                        builder.insert(entry.name, sub, entry.filemode)
            elif path in paths:
                builder.remove(entry.name)
        return builder.write()

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
                )
            )
        return out

    def added_order(self, paths: Iterable[str]) -> dict[str, int]:
        """Return where in HEAD's history each path was added: a larger number, a later commit.

        Paths the history never added (not committed yet) are left out. Walks from HEAD back
        only until every path's adding commit is found: the cost follows how old they are.
        """
        pending = set(paths)
        if not pending or self._repo.head_is_unborn:
            return {}
        pygit2 = _pygit2()
        found: dict[str, int] = {}
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
                    found[path] = -age
                    pending.discard(path)
            if not pending:
                break
        return found

    def read_at(self, commit: str, path: str) -> bytes | None:
        """Return a file's bytes as of `commit`, or None if it did not exist then."""
        if not commit:
            return None
        tree = self._repo[commit].peel(_pygit2().Tree)
        try:
            return bytes(self._repo[tree[path].id].data)
        except KeyError:
            return None

    def paths_at(self, commit: str) -> list[str]:
        """Return the path of every file in `commit`'s tree."""
        return _flatten(self._repo[commit].peel(_pygit2().Tree))

    def files_at(self, commit: str) -> dict[str, bytes]:
        """Return every file of `commit`'s tree (path → bytes)."""
        tree = self._repo[commit].peel(_pygit2().Tree)
        return {path: self.read_at(commit, path) or b"" for path in _flatten(tree)}

    def first_parent(self, commit: str) -> str:
        parents = self._repo[commit].parent_ids
        return str(parents[0]) if parents else ""

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


def secret_message(path: str, kind: str) -> str:
    """The one line that says a file was left uncommitted for a credential (never its text)."""
    return (
        f"{path} holds what looks like {kind}; memstore did not commit it (memory is shared "
        "through git): remove the credential from the file, or commit it yourself with git"
    )


def _blob_bytes(tree: Any, path: str) -> bytes | None:
    if tree is None:
        return None
    try:
        return bytes(tree[path].data)
    except (KeyError, AttributeError):
        return None


def _entry_id(container: Any, path: str) -> Any:
    """The object id at `path` in a tree or git index, or None."""
    try:
        return container[path].id
    except KeyError:
        return None


# Lock files git and libgit2 leave behind when killed mid-write.
GIT_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock", "ORIG_HEAD.lock")
STALE_LOCK_S = 5.0


def git_debris(root: Path) -> tuple[list[Path], bool]:
    """Return git lock files under the vault and whether git's index is older than HEAD.

    Only stats files (no pygit2): every command that takes the vault lock calls this.
    """
    git_dir = root / ".git"
    locks = [git_dir / name for name in GIT_LOCKS if (git_dir / name).exists()]
    with contextlib.suppress(OSError):
        locks += [p for p in (git_dir / "refs" / "heads").rglob("*.lock")]
    return locks, _index_older_than_head(git_dir)


def index_lags(root: Path) -> bool:
    """Whether some commit left git's index behind HEAD for `sync_index` (one stat)."""
    return (root / ".git" / INDEX_LAG).exists()


def read_index_lag(root: Path) -> tuple[set[int], list[str]]:
    """Return the processes that deferred git's index and the paths they committed."""
    try:
        text = (root / ".git" / INDEX_LAG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set(), []
    pids: set[int] = set()
    paths: list[str] = []
    for line in text.splitlines():
        pid, _, path = line.partition(" ")
        if pid.isdigit() and path:
            pids.add(int(pid))
            paths.append(path)
    return pids, list(dict.fromkeys(paths))


def index_lag_idle(root: Path) -> float:
    """Seconds since a commit last left git's index behind HEAD (0 if it is not behind)."""
    try:
        return max(0.0, time.time() - (root / ".git" / INDEX_LAG).stat().st_mtime)
    except OSError:
        return 0.0


def _index_older_than_head(git_dir: Path) -> bool:
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return False
    if not head.startswith("ref: "):
        return False
    try:
        moved = (git_dir / head.removeprefix("ref: ")).stat().st_mtime_ns
    except OSError:
        return False  # unborn, or a packed ref: no commit of ours is pending
    try:
        return (git_dir / "index").stat().st_mtime_ns < moved
    except FileNotFoundError:
        return True
    except OSError:
        return False


def clear_stale_locks(root: Path, locks: list[Path]) -> list[str]:
    """Remove lock files no live git process holds; return the names removed.

    The caller holds memstore's vault lock, so no memstore process is writing git now: a
    lock with no git process of this vault alive is a killed process's debris. A lock
    younger than a few seconds is given until then (a git command may be starting); a live
    git process keeps every lock it has.
    """
    removed: list[str] = []
    for lock in locks:
        while True:
            try:
                age = time.time() - lock.stat().st_mtime
            except OSError:
                break  # gone meanwhile: its owner finished
            if git_running_in(root):
                return removed
            if age >= STALE_LOCK_S:
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
                removed.append(lock.relative_to(root).as_posix())
                break
            time.sleep(min(STALE_LOCK_S - age, 0.25))  # bounded: at most STALE_LOCK_S in all
    return removed


# git commands that may wait in an editor and then move HEAD from where it was when they began
_COMMITTING = frozenset({"commit", "merge", "rebase", "cherry-pick", "revert", "am", "pull"})


def git_committing_in(root: Path, proc: Path = Path("/proc")) -> int | None:
    """Return the pid of a git command committing in the vault right now (a `git commit`
    waiting in its editor with the person's staged files), else None.

    Without `proc` (no /proc: macOS, BSD) it cannot tell which process: 0 while git's index
    is locked, unless the lock is older than STALE_LOCK_S (a killed git's debris, which
    would otherwise hold back every commit of hand edits for good).
    """
    if not proc.is_dir():
        try:
            age = time.time() - (root / ".git" / "index.lock").stat().st_mtime
        except OSError:
            return None
        return 0 if age < STALE_LOCK_S else None
    if not _git_may_be_committing(root / ".git"):
        return None
    ours = _ancestors()  # a git hook running memstore: its own git is not in the way
    for pid, args in _git_processes_at(root, proc):
        if pid not in ours and _subcommand(args) in _COMMITTING:
            return pid
    return None


# What git writes before it opens an editor or stops part-way (and HEAD's log moves after).
_UNDER_WAY = (
    "COMMIT_EDITMSG",
    "MERGE_MSG",
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "rebase-merge",
    "rebase-apply",
    "index.lock",
)


def _git_may_be_committing(git_dir: Path) -> bool:
    """Tell cheaply (a few stats) whether a git command may be committing: one of the files
    it writes first is newer than HEAD's log, which a finished commit moves last. Reading
    every process in /proc costs milliseconds, and every memstore write asks. Strictly newer:
    `git commit -m` writes COMMIT_EDITMSG within the same clock tick as its reflog line."""
    try:
        finished = (git_dir / "logs" / "HEAD").stat().st_mtime_ns
    except OSError:
        return True  # no reflog to compare with: ask the process table
    for name in _UNDER_WAY:
        try:
            if (git_dir / name).stat().st_mtime_ns > finished:
                return True
        except OSError:
            continue
    return False


def git_running_in(root: Path) -> bool:
    """Return whether a git process is working in (or on) the vault right now."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True  # cannot tell: never remove a lock that might be live
    return next(_git_processes_at(root, proc), None) is not None


def _git_processes_at(root: Path, proc: Path) -> Iterator[tuple[int, list[str]]]:
    """Yield (pid, command line) of each git process working in or on the vault: run in
    it, or pointed at it by -C, --git-dir, --work-tree (`=` or not) or GIT_DIR/GIT_WORK_TREE."""
    target = root.resolve()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text(encoding="utf-8").startswith("git"):
                continue
            cwd = Path(os.readlink(entry / "cwd"))
            args = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        places = [cwd, *_named_places(entry, cwd, args)]
        if any(place == target or target in place.parents for place in places):
            yield int(entry.name), args


def _named_places(entry: Path, cwd: Path, args: list[str]) -> list[Path]:
    """The folders a git command line (and its GIT_DIR/GIT_WORK_TREE) names, made absolute.

    git has already moved into a `-C` folder (or the work tree), so a relative name is
    tried from there, from where git was started (its parent's folder, or $PWD), and
    through the -C folders given before it.
    """
    named = _environ(entry, ("GIT_DIR", "GIT_WORK_TREE"))
    starts = {cwd, *_environ(entry, ("PWD",))}
    with contextlib.suppress(OSError, ValueError, IndexError):
        parent = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1].decode()
        starts.add(Path(os.readlink(entry.parent / parent / "cwd")))
    words = iter(args[1:])
    for word in words:
        name, equals, value = word.partition("=")
        if name in ("-C", "--git-dir", "--work-tree"):
            value = value if equals else next(words, "")
            if not value:
                continue
            named.append(Path(value))
            if name == "-C":
                starts |= {start / value for start in starts}
        elif word == "-c":
            next(words, None)
        elif not word.startswith("-"):
            break  # the subcommand: what follows is its own
    return [Path(os.path.realpath(start / path)) for path in named for start in starts]


def _environ(entry: Path, names: tuple[str, ...]) -> list[Path]:
    try:
        raw = (entry / "environ").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return []
    found = dict(item.partition("=")[::2] for item in raw if "=" in item)
    return [Path(found[name]) for name in names if found.get(name)]


def _subcommand(args: list[str]) -> str:
    """The git subcommand of a command line (`git -C dir -c k=v commit -m x` → commit)."""
    words = iter(args[1:])
    for word in words:
        if word in ("-C", "-c", "--git-dir", "--work-tree", "--namespace"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return ""


def _ancestors() -> set[int]:
    found, pid = {os.getpid()}, os.getppid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat_line = Path(f"/proc/{pid}/stat").read_bytes()
            pid = int(stat_line.rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def _flatten(tree: Any, prefix: str = "") -> list[str]:
    paths = []
    for entry in tree:
        if entry.type_str == "tree":
            paths.extend(
                _flatten(
                    entry.peel(_pygit2().Tree) if hasattr(entry, "peel") else entry,
                    f"{prefix}{entry.name}/",
                )
            )
        else:
            paths.append(f"{prefix}{entry.name}")
    return paths


def _topological(commits: list[Any]) -> list[Any]:
    """Order commits so every parent comes before its children."""
    by_id = {str(c.id): c for c in commits}
    done: set[str] = set()
    ordered: list[Any] = []

    def visit(commit: Any) -> None:
        stack = [(commit, False)]
        while stack:
            current, expanded = stack.pop()
            key = str(current.id)
            if key in done:
                continue
            if expanded:
                done.add(key)
                ordered.append(current)
                continue
            stack.append((current, True))
            stack.extend(
                (by_id[str(p)], False)
                for p in current.parent_ids
                if str(p) in by_id and str(p) not in done
            )

    for commit in commits:
        visit(commit)
    return ordered


def _prepare_identity(config: Any, local: set[str], others: set[str]) -> list[str]:
    """Give git an identity in .git/config when the user has none; take it back once they do."""
    changed = []
    for key, value in _FALLBACK_IDENTITY.items():
        if key not in others and key not in local:
            config[key] = value
            changed.append(f"{key}={value} (you have none)")
        elif key in others and key in local and str(config[key]) == value:
            del config[key]
            changed.append(f"{key}={value} removed (yours applies)")
    return changed


def parent_repository_message(root: Path, owner: Path) -> str:
    """Explain why memstore will not commit into a repository rooted above the vault."""
    if not root.exists():  # nothing to copy: name a folder outside instead
        return (
            f"{root} is inside the git repository at {owner}; a vault needs a repository of "
            "its own: choose a folder outside it, e.g. 'memstore init ~/memstore', or run "
            "'memstore demo'"
        )
    return (
        f"{root} is inside the git repository at {owner}; a vault needs a repository of "
        f"its own: copy the folder outside it (cp -r {root} ~/memstore) and run "
        f"'memstore init ~/memstore', or run 'memstore demo'"
    )
