"""The vault's git repository (pygit2): open or create it, one commit per change, checkouts.

GitRepo speaks only git (paths, bytes, trees, commits, refs), never memories. Its parts:
git_objects (trees and blobs by id), git_log (commits, trailers, history), git_rewrite
(history without some paths), git_setup (merge driver, a clone's branch, plain git);
git_processes says whether a person's git is at work. pygit2 is imported lazily so
read-only commands that never commit do not pay for it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memstore.core.errors import SecretError, UncommittedEditError, VaultError
from memstore.core.faults import crash_point
from memstore.core.repo_name import find_enclosing_repository
from memstore.vault.git_lean import objects, open_repository
from memstore.vault.git_log import GitLog, Trailers
from memstore.vault.git_log import LogEntry as LogEntry  # callers import these from here too
from memstore.vault.git_objects import _pygit2
from memstore.vault.git_objects import entry_id as _entry_id
from memstore.vault.git_objects import text_paths as _text_paths
from memstore.vault.git_prebuilt import GitPrebuilt
from memstore.vault.git_processes import clear_stale_locks as clear_stale_locks
from memstore.vault.git_rewrite import GitRewrites
from memstore.vault.git_setup import GitSetup
from memstore.vault.index_staging import (
    GIT_PLACES,
    clear_index_lag,
    note_index_lag,
    read_index_lag,
    staging_held,
    while_index_locked,
)
from memstore.vault.index_staging import INDEX_LAG as INDEX_LAG
from memstore.vault.index_staging import index_lag_idle as index_lag_idle
from memstore.vault.index_staging import index_lags as index_lags

log = logging.getLogger(__name__)


# A git index this big (about 30,000 files) costs a write proportional to the vault on
# every commit: commits that may defer it then leave it to sync_index (docs/file-format.md).
DEFER_INDEX_BYTES = 4_000_000
# Who memstore's commits are by when the user has no git identity (and git's merges too:


def refuse_secrets(data: dict[str, bytes], base: Any, clean: frozenset[str] = frozenset()) -> None:
    """Raise SecretError for the first file of `data` whose lines new to `base` (a tree, or
    None) and not in `clean` hold what looks like a credential."""
    from memstore.core.secrets import find_added_secret  # only writers scan

    for path, content in data.items():
        kind = find_added_secret(content, _blob_bytes(base, path), clean=clean)
        if kind:
            raise SecretError(secret_message(path, kind), path=path, kind=kind)


class GitRepo(GitLog, GitRewrites, GitSetup, GitPrebuilt):
    """The git repository whose work tree is exactly the vault."""

    def __init__(self, repo: Any, root: Path) -> None:
        self._repo = repo
        self.root = root
        self.defer_index_bytes = DEFER_INDEX_BYTES
        # (path, kind) of files already said to be held back for a credential: said once
        # per process, not at every sync step or watcher batch.
        self.told_held: set[tuple[str, str]] = set()
        # The environment git's own status runs with in a large vault (a shell's, given by
        # sync); None: libgit2's status always.
        self.status_env: Mapping[str, str] | None = None

    @classmethod
    def open(cls, root: Path) -> GitRepo:
        """Open the repository rooted at the vault; refuse one rooted above it."""
        owner = find_enclosing_repository(root)
        if owner is None:
            raise VaultError(f"{root} is not a git repository; run: memstore init {root}")
        if owner.resolve() != root.resolve():
            raise VaultError(parent_repository_message(root, owner))
        try:
            return cls(open_repository(str(root)), root)
        except objects().GitError as err:
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

    def commit(
        self,
        message: str,
        trailers: Trailers,
        *,
        add: tuple[str, ...] = (),
        remove: tuple[str, ...] = (),
        defer_index: bool = False,
        allow_secret: bool = False,
        clean: frozenset[str] = frozenset(),
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
        `add --allow-secret`); nor are lines in `clean`, which the writer's own scan found
        clean (core.secrets.FieldScan). A message that would show a credential names the files.

        Raises:
            SecretError: a file holds what looks like a credential.
        """
        pygit2 = objects()  # the C level: what a commit needs (vault/git_lean.py)
        repo = self._repo
        paths = (*add, *remove)
        deferred = defer_index and self._index_is_large() and not any("\n" in p for p in paths)
        try:
            base = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree
            files = {p: _as_git_sees(self.root / p) for p in add}
            data = {p: content for p, (content, _) in files.items()}
            if not allow_secret:
                self._refuse_secrets(data, base, clean)
            if deferred:
                note_index_lag(self.root, paths, os.getpid())  # named before committing
            changes: dict[str, Any] = {p: repo.create_blob(d) for p, d in data.items()}
            changes.update({p: None for p in remove})
            modes = {p: mode for p, (_, mode) in files.items()}
            tree = self._tree_with(base, changes, modes)
            parents = [] if repo.head_is_unborn else [repo.head.target]
            signature = self._signature()
            from memstore.core.secrets import withhold_secret

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
        except (OSError, VaultError, pygit2.GitError) as err:  # VaultError: staging_held
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
        from memstore.core.secrets import find_added_secret

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
        pygit2 = objects()
        try:
            return None if self._repo.head_is_unborn else self._repo.head.peel(pygit2.Commit).tree
        except pygit2.GitError as err:
            raise VaultError(f"cannot read HEAD in {self.root}: {err}") from err

    _refuse_secrets = staticmethod(refuse_secrets)

    def _stage(self, add: tuple[str, ...], remove: tuple[str, ...]) -> None:
        with staging_held(self.root):  # a staging process writes the same file
            while_index_locked(lambda: self._stage_now(add, remove), _pygit2().GitError)

    def _stage_now(self, add: tuple[str, ...], remove: tuple[str, ...]) -> None:
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
            clear_index_lag(self.root)

    def _index_is_large(self) -> bool:
        try:
            return (self.root / ".git" / "index").stat().st_size >= self.defer_index_bytes
        except OSError:
            return False

    def index_lag(self) -> tuple[set[int], list[str]]:
        """Return the processes that deferred git's index and the paths they committed."""
        return read_index_lag(self.root)

    def sync_index(self) -> list[str]:
        """Bring git's index up to HEAD for the paths commits left it behind on; return them.

        An entry becomes what HEAD holds: a file a person changed since shows as their
        unstaged change, as it would after any commit.
        """
        if not index_lags(self.root):
            return []
        pygit2 = _pygit2()
        try:
            with staging_held(self.root):  # a staging process under way: after it
                lagging = self.index_lag()[1]
                if not lagging:
                    return []
                index = self._repo.index
                index.read(False)
                self._stage_as_head(index, lagging)
                index.write()
                clear_index_lag(self.root)
        except (OSError, pygit2.GitError) as err:
            raise VaultError(f"cannot update git's index in {self.root}: {err}") from err
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

    def _tree_with(self, base: Any, changes: dict[str, Any], modes: Mapping[str, int] = {}) -> Any:
        """Return the id of `base` (a tree or None) with paths set to blobs or removed;
        a blob's mode is `modes`' (git's file modes), else a plain file's."""
        pygit2 = objects()
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
                builder.insert(name, blob, modes.get(name, pygit2.GIT_FILEMODE_BLOB))
        for name, sub in below.items():
            current = base[name] if base is not None and name in base else None
            subtree = (
                repo[current.id] if current is not None and current.type_str == "tree" else None
            )
            inner = {p.partition("/")[2]: m for p, m in modes.items() if p.startswith(name + "/")}
            oid = self._tree_with(subtree, sub, inner)
            if len(repo[oid]):
                builder.insert(name, oid, pygit2.GIT_FILEMODE_TREE)
            elif current is not None:
                builder.remove(name)
        return builder.write()

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
        pygit2 = objects()
        tree = self._head_tree()
        changed = []
        for path in dict.fromkeys(paths):
            try:
                committed = tree[path].id if tree is not None else None
            except KeyError:
                committed = None
            file = self.root / path
            try:
                if file.is_symlink():  # the path it holds, as git hashes a link
                    on_disk = pygit2.hash(os.fsencode(os.readlink(file)))
                else:
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
        # Paths commits left behind in git's index (written once, by the next checkout or
        # the stager) show as changed: a file as HEAD holds it is no edit (hashed each).
        lagging = self.index_lag()[1]
        if self.status_env is not None and _index_bytes(self.root) >= STATUS_CLI_BYTES:
            named = _text_paths(_git_status(self.root, self.status_env))
        else:
            try:
                status = self._repo.status()
            except pygit2.GitError as err:
                raise VaultError(f"cannot read git status in {self.root}: {err}") from err
            named = sorted(_text_paths(p for p, state in status.items() if state & ~quiet))
        lagged = set(lagging).intersection(named)
        if not lagged:
            return named
        as_head = lagged.difference(self.changed_paths(sorted(lagged)))
        return [path for path in named if path not in as_head]

    def move_to(
        self, commit: str, *, force: bool = False, paths: Sequence[str] | None = None
    ) -> None:
        """Check out `commit` into the work tree and point the current branch at it.

        The checkout never overwrites a file that differs from HEAD (a person's edit made
        while a sync fetched): it raises UncommittedEditError instead, and nothing moves.
        `force` overwrites all the same (the caller knows every changed file is its own).
        `paths`: every path HEAD and `commit` differ in (git's diff of the two): only those
        are compared with the work tree and written (a whole checkout looks at every file:
        ~0.9 s of CPU at 200,000, against ~0.35 s for the 1,000 a sync brought).
        """
        pygit2 = _pygit2()
        repo = self._repo
        strategy = pygit2.enums.CheckoutStrategy
        # git's index is read and written once (~1.3 and ~0.5 s of CPU at 1,000,000 files;
        # it was written three times), after the branch moved (dated after HEAD): the lag
        # staged in memory (a checkout compares the work tree with it), then the checkout.
        how = (strategy.FORCE if force else strategy.SAFE) | strategy.DONT_WRITE_INDEX
        try:
            with staging_held(self.root):  # a staging process writes the same file
                (index := repo.index).read(False)
                lagging = self.index_lag()[1]
                self._stage_as_head(index, lagging)
                _check_out(repo, self.root, commit, how, paths)
                crash_point("checkout")
                try:
                    _point(repo, f"refs/heads/{self.branch()}", commit)
                finally:
                    index.write()  # the checkout's files, as its own write had them
                    if lagging:
                        clear_index_lag(self.root)
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

    def edit_tree(self, tree: Any, changes: dict[str, Any]) -> Any:
        """Return `tree` with paths set to blob ids or (None) removed, as a tree object."""
        return self._repo[self._tree_with(tree, changes)]


def _check_out(repo: Any, root: Path, commit: str, how: Any, paths: Sequence[str] | None) -> None:
    """Write `commit`'s files (of `paths`) into the work tree and git's index in memory;
    on failure git's index is read again from its file (nothing staged is kept)."""
    pygit2 = _pygit2()
    try:
        if paths is None:
            repo.checkout_tree(repo[commit], strategy=how)
        elif paths:  # none: the two trees hold the same files (an empty list means all)
            how |= pygit2.enums.CheckoutStrategy.DISABLE_PATHSPEC_MATCH  # names, not patterns
            repo.checkout_tree(repo[commit], strategy=how, paths=list(paths))
    except pygit2.GitError as err:
        repo.index.read(True)  # the lag staged in memory stays the lag's
        if "conflict" in str(err).lower():
            raise UncommittedEditError(
                f"a file changed while memstore checked out {commit[:8]}: {err}"
            ) from err
        raise VaultError(f"cannot check out {commit[:8]} in {root}: {err}") from err


def _point(repo: Any, branch: str, commit: str) -> None:
    if branch in repo.references:
        repo.references[branch].set_target(commit)
    else:
        repo.references.create(branch, commit)


def _as_git_sees(path: Path) -> tuple[bytes, int]:
    """Return a work tree file's content and mode as git commits it: a symlink is the path
    it holds (never the file it points at, which may lie outside the vault), and an
    executable keeps its mode."""
    git = objects()  # git's modes as libgit2's ints (pygit2.enums.FileMode's values)
    if path.is_symlink():
        return os.fsencode(os.readlink(path)), git.GIT_FILEMODE_LINK
    executable = os.stat(path).st_mode & 0o100
    return (
        path.read_bytes(),
        git.GIT_FILEMODE_BLOB_EXECUTABLE if executable else git.GIT_FILEMODE_BLOB,
    )


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


# Above this size of git's index (~65,000 files), git's own status is asked instead of
# libgit2's: at 1,000,000 files 3.7 s of CPU against 4.8-5.2 s (and its stats run on every
# core); at 100,000, 0.38 s against 0.45 s; below, starting a process costs more.
STATUS_CLI_BYTES = 8 << 20


def _index_bytes(root: Path) -> int:
    try:
        return (root / ".git" / "index").stat().st_size
    except OSError:
        return 0


def _git_status(root: Path, env: Mapping[str, str]) -> list[str]:
    """The paths git's status names (changed, staged, deleted, untracked; not ignored), as
    libgit2's status names them. Takes no lock and writes nothing (no optional locks)."""
    argv = ["git", "-C", str(root), "--no-optional-locks", "status", "--porcelain=v1", "-z"]
    argv += ["--untracked-files=all", "--no-renames", "--ignore-submodules=all"]
    environment = {k: v for k, v in env.items() if k not in GIT_PLACES}
    try:
        done = subprocess.run(argv, capture_output=True, check=True, env=environment)
    except (OSError, subprocess.CalledProcessError) as err:
        raise VaultError(f"cannot read git status in {root}: {err}") from err
    entries = done.stdout.split(b"\0")
    return sorted(e[3:].decode("utf-8", "surrogateescape") for e in entries if len(e) > 3)


# Lock files git and libgit2 leave behind when killed mid-write.
GIT_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock", "ORIG_HEAD.lock")


def git_debris(root: Path) -> tuple[list[Path], bool]:
    """Return git lock files under the vault and whether git's index is older than HEAD.

    Only stats files (no pygit2): every command that takes the vault lock calls this.
    """
    git_dir = root / ".git"
    locks = [git_dir / name for name in GIT_LOCKS if (git_dir / name).exists()]
    with contextlib.suppress(OSError):
        locks += [p for p in (git_dir / "refs" / "heads").rglob("*.lock")]
    return locks, _index_older_than_head(git_dir)


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
