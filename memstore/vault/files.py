"""The vault on disk: which files are memories, reading and atomic writing, local state.

The write lock (locks.py) and HEAD's reflog (reflog.py) are reached through Vault too.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import BinaryIO

from memstore.core.codec import escape_name, is_utf8_name, parse_memory, path_id
from memstore.core.errors import VaultError
from memstore.core.faults import crash_point
from memstore.core.model import FileProblem, Memory
from memstore.core.repo_name import has_vault_mark
from memstore.core.vault_config import VAULT_CONFIG_NAME
from memstore.vault.locks import hold, hold_if_free, hold_shared, is_held_shared, open_lock_file
from memstore.vault.reflog import arrived_from, moved_by_commits_only, read_head

log = logging.getLogger(__name__)
# What doctor and reindex say of two things a person made that are no memory, with the fix.
FOLDER_NAMED_LIKE_A_MEMORY = (
    "a folder named like a memory: the files in it are memories, the folder is not; "
    "rename it without .md"
)
NAMED_IN_CAPITALS = (
    "named .MD: memstore reads only names that end in .md (lower case), so it is no memory "
    "now; rename it to end in .md"
)
SYMLINK_NOT_FOLLOWED = (
    "symlink: not followed (it may point out of the vault, or elsewhere on another "
    "machine); put the file itself here, or remove the link"
)
STATE_DIR = ".memstore"
MAX_FILE_BYTES = 2_000_000  # larger files are reported, not indexed
READ_FIRST = 1 << 14  # the first read of a file (most memories are well under 16 KiB)
GITIGNORE = ".memstore/\n"
GITATTRIBUTES = "*.md merge=memstore\n"
# Files a repository made on a forge starts with: they do not make it somebody's project.
# mkstemp(prefix=".", suffix=".tmp") names: what a write killed before its rename leaves
_SCRATCH = re.compile(r"\.[a-z0-9_]{8}\.tmp")
_FURNITURE = re.compile(r"(readme|license|licence|copying)(\.[a-z0-9]+)?", re.IGNORECASE)
FRONT_MATTER_BYTES = 65_536  # how much of a file `looks_like_memory` reads
WRITERS = 8  # files written at once by write_many_atomic (their fsyncs overlap)


# What cheaply tells whether a file changed: (mtime in ns, size). A plain tuple, because a
# scan builds one per memory file on every search.
Fingerprint = tuple[int, int]


class Vault:
    """A folder of workspace folders of markdown memories."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._root = os.fspath(root)  # folder_mtime joins strings: pathlib's `/` was 4x slower
        # Runs whenever this process takes the write lock (the store heals git debris there).
        self.on_lock: Callable[[], None] | None = None

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def path(self, relative: str) -> Path:
        return self.root / relative

    # --- scanning -------------------------------------------------------------------

    def scan(
        self,
        skipped: list[FileProblem] | None = None,
        *,
        workspace: str | None = None,
        folders: dict[str, int] | None = None,
    ) -> dict[str, Fingerprint]:
        """Return every memory file (vault-relative path) with its fingerprint.

        Memories live in workspace folders; dotfiles, dot folders, symlinks and files at the
        vault's top level (README.md and the like) are not memories. Entries that look like
        memories but are skipped are appended to `skipped` with the reason. With `workspace`,
        only that folder is scanned. `folders` receives the modification time of every folder
        scanned ('' is the vault's own), taken before it is listed."""
        found: dict[str, Fingerprint] = {}
        if workspace is None:
            self.scan_tree("", found, skipped, folders)
        elif os.path.isdir(self.path(workspace)) and not os.path.islink(self.path(workspace)):
            self.scan_tree(workspace, found, skipped, folders)
        return found

    def scan_tree(
        self,
        folder: str,
        found: dict[str, Fingerprint],
        skipped: list[FileProblem] | None = None,
        folders: dict[str, int] | None = None,
    ) -> None:
        """Add the memory files under `folder` ('' for the vault) to `found`, recursively."""
        pending = [folder]
        while pending:
            current = pending.pop()
            pending += self.scan_folder(current, found, skipped, folders)

    def scan_folder(
        self,
        folder: str,
        found: dict[str, Fingerprint],
        skipped: list[FileProblem] | None = None,
        folders: dict[str, int] | None = None,
    ) -> list[str]:
        """Add the memory files directly in `folder` to `found`; return its subfolders.

        `folders` receives the folder's modification time, taken before listing it (a
        change made while it is listed shows as a newer time next time); a folder that
        cannot be read is left out of `folders` and `found` (the index keeps what it has)."""
        is_root = folder == ""
        where = self.root if is_root else self.root / folder
        prefix = "" if is_root else f"{folder}/"
        try:
            if folders is not None:
                folders[folder] = os.stat(where, follow_symlinks=False).st_mtime_ns
            entries = list(os.scandir(where))
        except OSError as err:
            if is_root:
                raise VaultError(f"cannot read vault folder {self.root}: {err.strerror}") from err
            if folders is not None:
                folders.pop(folder, None)
            if skipped is not None:
                skipped.append(FileProblem(prefix, f"folder cannot be read: {err.strerror}"))
            return []
        subfolders = []
        for entry in entries:  # the hot loop of every full catch-up: the common case first
            name = entry.name
            if name[0] == ".":
                continue
            if not name.isascii() and not is_utf8_name(name):
                # git, the index and every id are text: such a name cannot be a memory
                if skipped is not None and (name.endswith(".md") or entry.is_dir()):
                    skipped.append(FileProblem(escape_name(prefix + name), "name is not UTF-8"))
                continue
            if not is_root and name.endswith(".md") and entry.is_file(follow_symlinks=False):
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found[prefix + name] = (st.st_mtime_ns, st.st_size)
            elif entry.is_dir(follow_symlinks=False):
                if skipped is not None and name.endswith(".md") and not is_root:
                    skipped.append(FileProblem(prefix + name, FOLDER_NAMED_LIKE_A_MEMORY))
                subfolders.append(prefix + name)
            elif skipped is not None and name.endswith(".md") and entry.is_symlink():
                skipped += [] if is_root else [FileProblem(prefix + name, SYMLINK_NOT_FOLLOWED)]
            elif skipped is not None and not is_root and name[-3:].lower() == ".md":
                skipped.append(named_in_capitals(prefix + name))
        return subfolders

    def folder_mtime(self, folder: str) -> int | None:
        """Return a folder's modification time in ns (None: gone, or no longer a folder)."""
        try:
            where = os.path.join(self._root, folder) if folder else self._root
            st = os.stat(where, follow_symlinks=False)
        except OSError:
            return None
        return st.st_mtime_ns if stat.S_ISDIR(st.st_mode) else None

    # --- adopting a folder ----------------------------------------------------------

    def has_vault_mark(self) -> bool:
        """Say whether the folder's .gitattributes sends markdown to memstore's merge driver
        (it was made a vault before: this one, or the one it was cloned from)."""
        try:
            return has_vault_mark(_read_head(self.root / ".gitattributes"))
        except OSError:
            return False

    def stranger(self) -> str:
        """Return the first file in the folder that is not a memory (nor a README or
        LICENSE at the top), '' when there is none: only such a folder is adopted."""
        return first_stranger(self.every_file(), self._head_of)

    def every_file(self) -> Iterator[str]:
        """Yield every file in the folder (vault-relative, in order), outside dot folders;
        a subfolder that cannot be read is yielded as `name/` (nothing vouches for it)."""
        pending = [""]
        while pending:
            folder = pending.pop()
            try:
                entries = sorted(os.scandir(self.path(folder)), key=lambda entry: entry.name)
            except OSError as err:
                if not folder:
                    raise VaultError(
                        f"cannot read vault folder {self.root}: {err.strerror}"
                    ) from err
                yield f"{folder}/"
                continue
            subfolders = []
            for entry in entries:
                relative = f"{folder}/{entry.name}" if folder else entry.name
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(relative)
                else:
                    yield relative
            pending += reversed(subfolders)

    def _head_of(self, relative: str) -> bytes:
        path = self.path(relative)
        try:
            return b"" if os.path.islink(path) else _read_head(path)
        except OSError:
            return b""

    # --- reading and writing --------------------------------------------------------

    def read(self, relative: str) -> Memory:
        """Read one memory file; unreadable content becomes a memory with `problem` set."""
        path = os.path.join(self._root, relative)  # not pathlib's `/`, no stat: ~10% of a read
        try:
            data, size = _read_bytes(path)
            if size > MAX_FILE_BYTES:
                return _unreadable(
                    relative, f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}"
                )
        except OSError as err:
            raise VaultError(f"cannot read {relative}: {err.strerror}") from err
        if b"\0" in data:
            return _unreadable(relative, "file holds binary data (NUL bytes)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            memory = parse_memory(data.decode("utf-8", errors="replace"), path=relative)
            return Memory(**{**memory.__dict__, "problem": "file is not valid UTF-8"})
        return parse_memory(text, path=relative)

    def write_atomic(self, relative: str, text: str) -> None:
        """Write a file so that no reader ever sees half of it (temp file + rename)."""
        self.write_bytes_atomic(relative, text.encode("utf-8"))

    def write_bytes_atomic(self, relative: str, data: bytes) -> None:
        """Write a file's exact bytes atomically: a new one 0600, a rewrite in its mode."""
        path = self.path(relative)
        tmp = ""
        try:
            self._make_folders(path.parent)
            # A short hidden temp name (0600): the indexer skips it, a 255-byte name still fits.
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), _kept_mode(path))
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            crash_point("temp-written")
            os.replace(tmp, path)
        except OSError as err:
            if tmp:
                Path(tmp).unlink(missing_ok=True)
            raise VaultError(
                f"cannot write {relative}: {err.strerror}; check the vault's permissions"
            ) from err

    def remove_scratch(self, folder: str) -> None:
        """Remove the temp files `write_bytes_atomic` left in a vault folder when a process
        was killed mid-write (hidden, mkstemp's names: `.` + 8 of [a-z0-9_] + `.tmp`)."""
        try:
            names = os.listdir(self.path(folder) if folder else self.root)
        except OSError:
            return
        for name in names:
            if _SCRATCH.fullmatch(name):
                with suppress(OSError):
                    os.unlink(self.path(f"{folder}/{name}" if folder else name))

    def _make_folders(self, folder: Path) -> None:
        # One at a time: mkdir(parents=True) gives the mode to the last folder only.
        missing = []
        while not folder.exists() and folder != self.root:
            missing.append(folder)
            folder = folder.parent
        for new in reversed(missing):
            new.mkdir(mode=0o700, exist_ok=True)

    def ensure_layout(self) -> list[str]:
        """Create the state folder, .gitignore and .gitattributes; return files it changed."""
        changed = []
        self.state_dir.mkdir(exist_ok=True, mode=0o700)
        for name, line in ((".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)):
            path = self.root / name
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if line.strip() in current.splitlines():
                continue
            glue = "" if not current or current.endswith("\n") else "\n"
            self.write_atomic(name, current + glue + line)
            changed.append(name)
        return changed

    def make_private(self, paths: Iterable[str] | None = None) -> None:
        """Make memory folders 0700 and files owner-only: of `paths` (vault-relative), or all.

        Checkouts and clones create files by the umask (often 0644): memories are private.
        """
        try:
            os.chmod(self.root, 0o700)
            for relative in self._every_path() if paths is None else paths:
                self._make_private(relative)
        except OSError as err:
            raise VaultError(
                f"cannot make the vault private ({err.filename}: {err.strerror}); "
                f"run: chmod -R go-rwx {self.root}"
            ) from err

    def make_git_private(self) -> None:
        """Take group and other bits off everything under .git/ (a clone made by a 022
        umask is 0755/0644 there; memstore's own init, under umask 077, is 0700/0600)."""
        try:
            for folder, dirs, files in os.walk(self.root / ".git"):
                for name in (folder, *(os.path.join(folder, entry) for entry in dirs + files)):
                    mode = os.lstat(name).st_mode
                    if not stat.S_ISLNK(mode) and mode & 0o077:
                        os.chmod(name, stat.S_IMODE(mode) & 0o700)
        except OSError as err:
            raise VaultError(
                f"cannot make the vault private ({err.filename}: {err.strerror}); "
                f"run: chmod -R go-rwx {self.root / '.git'}"
            ) from err

    def _every_path(self) -> list[str]:
        found = []
        for folder, dirs, files in os.walk(self.root):
            here = Path(folder)
            if here == self.root:
                dirs[:] = [d for d in dirs if d not in (".git", STATE_DIR)]
            found += [self.relative(here / name) for name in (*dirs, *files)]
        return found

    def _make_private(self, relative: str) -> None:
        parts = relative.split("/")
        if parts[0] in (".git", STATE_DIR):
            return
        path = self.root
        for part in parts:
            path = path / part
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return  # deleted by the change: nothing left to protect
            if stat.S_ISLNK(mode):
                return
            # the owner's bits stay: git records the executable one (0600 flipped 100755 files)
            private = 0o700 if stat.S_ISDIR(mode) else stat.S_IMODE(mode) & 0o700
            # Only when it differs: a chmod moves the ctime off git's index, and every git
            # status then hashes the file again (issue 39: seconds a sync at 10k memories)
            if stat.S_IMODE(mode) != private:
                os.chmod(path, private)

    def read_state(self, name: str) -> str:
        """Return a small piece of local state kept under .memstore/ ('' if never written)."""
        try:
            data = (self.state_dir / "state" / name).read_bytes()
        except OSError:
            return ""
        # State is derived: a garbled file reads as text anyway (its own checks then fail)
        return data.decode("utf-8", errors="replace").strip()

    def write_state(self, name: str, value: str) -> None:
        """Keep a small piece of local state under .memstore/ (never committed)."""
        folder = self.state_dir / "state"
        try:
            self._clear_way(self.state_dir, folder=True)
            self._clear_way(folder, folder=True)
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = folder / f".{name}.tmp"
            tmp.write_text(value + "\n", encoding="utf-8")
            os.replace(tmp, folder / name)
        except OSError as err:
            raise VaultError(f"cannot write {folder / name}: {err.strerror}") from err

    def _clear_way(self, path: Path, *, folder: bool) -> None:
        """Set aside what stands where memstore keeps derived state (a file where its folder
        goes, a folder where its lock file goes): everything under .memstore/ is memstore's
        own, so the odd thing is damage, moved to .git/memstore-damaged/ (never committed)
        and named on stderr."""
        if not os.path.lexists(path) or path.is_dir() == folder:
            return  # (a symlink to the right kind of thing is a person's choice: kept)
        aside = self.root / ".git" / "memstore-damaged" / f"{path.name}-{time.time_ns()}"
        aside.parent.mkdir(exist_ok=True, mode=0o700)
        os.replace(path, aside)
        log.warning(
            "%s was a %s; moved it to %s and carried on",
            self.relative(path),
            "folder" if path.is_dir() else "file",
            self.relative(aside),
        )

    # --- noticing git moving HEAD -----------------------------------------------------

    def head(self) -> tuple[str, int]:
        """Return git's HEAD commit id ('' if unborn or unreadable) and its reflog's size."""
        return read_head(self.root)

    def moved_by_commits_only(self, old: tuple[str, int], new: tuple[str, int]) -> bool:
        """Say whether HEAD went from `old` to `new` (see `head`) by commits alone."""
        return moved_by_commits_only(self.root, old, new)

    def arrived_from(self, commit: str) -> str | None:
        """Return the commit HEAD left when it first reached `commit` (None: unknown)."""
        return arrived_from(self.root, commit)

    # --- knowing whether a watcher keeps the index current --------------------------

    def watching(self) -> AbstractContextManager[None]:
        """Announce, while held, that a watcher keeps this vault's index current."""
        return hold_shared(lambda: self._lock_handle("watcher.lock"))

    def is_watched(self) -> bool:
        """Return whether some process holds `watching()` right now."""
        return is_held_shared(lambda: self._lock_handle("watcher.lock"))

    # --- the write lock -------------------------------------------------------------

    def lock(self, timeout: float) -> AbstractContextManager[None]:
        """Hold the vault's write lock; give up only if one holder keeps it `timeout` seconds.

        Writers queue: a waiter's clock restarts each time the lock changes hands, so eight
        processes adding at once all get their turn. Once held, `on_lock` runs first (it
        clears what a killed process left behind).
        """
        return hold(self._lock_handle, self.state_dir / "lock", timeout, self._locked)

    def try_lock(self) -> AbstractContextManager[bool]:
        """Hold the write lock if it is free right now; yield whether it was taken."""
        return hold_if_free(self._lock_handle, self._locked)

    def _locked(self) -> None:
        if self.on_lock is not None:
            self.on_lock()

    def _lock_handle(self, name: str = "lock") -> BinaryIO:
        try:
            self._clear_way(self.state_dir, folder=True)
            self.state_dir.mkdir(exist_ok=True, mode=0o700)
            self._clear_way(self.state_dir / name, folder=False)
            return open_lock_file(self.state_dir / name)
        except OSError as err:
            raise VaultError(
                f"cannot create the lock in {self.state_dir}: {err.strerror}; "
                "is the vault read-only?"
            ) from err


def write_many_atomic(vault: Vault, files: Mapping[str, bytes]) -> None:
    """Write several files' exact bytes in `vault`, several at a time, each as
    `Vault.write_bytes_atomic` does (its own temp file, fsynced, renamed over the old).

    A journaling file system commits fsyncs under way together, where one after another
    each waited for a commit of its own (a sync's 600 counter files: 2-4 s of a loaded
    disk at 1,000,000 memories). Every file is tried; the first failure is raised.
    """
    if len(files) < 2:
        for relative, data in files.items():
            vault.write_bytes_atomic(relative, data)
        return
    folders = {vault.path(relative).parent: relative for relative in files}
    for folder, relative in folders.items():
        try:
            vault._make_folders(folder)  # first: the writers would race to make one
        except OSError as err:
            raise VaultError(
                f"cannot write {relative}: {err.strerror}; check the vault's permissions"
            ) from err
    from concurrent.futures import ThreadPoolExecutor  # only writers of many files

    with ThreadPoolExecutor(min(WRITERS, len(files))) as pool:
        done = [pool.submit(vault.write_bytes_atomic, r, d) for r, d in files.items()]
    for future in done:
        future.result()


def named_in_capitals(relative: str) -> FileProblem:
    """What doctor and reindex say of `x.MD`: a memory renamed so (by hand, or by a case-blind
    disk) left recall without a word."""
    return FileProblem(relative, NAMED_IN_CAPITALS.replace("MD", relative[-2:]))


def looks_like_memory(relative: str, head: bytes) -> bool:
    """Say whether a file reads as one memstore wrote: markdown in a workspace folder whose
    front matter states an id (`head` is the file's start, FRONT_MATTER_BYTES of it)."""
    if "/" not in relative or not relative.endswith(".md"):
        return False
    memory = parse_memory(head.decode("utf-8", errors="replace"), path=relative)
    return memory.has_front_matter and memory.id != path_id(relative)


def first_stranger(files: Iterable[str], head_of: Callable[[str], bytes]) -> str:
    """Return the first of `files` (vault-relative) that is not a memory, '' if none.

    Dotfiles (.gitignore, .github/), a README or LICENSE at the top and the vault's config
    (memstore.toml at the top) do not count.
    """
    for relative in files:
        if any(part.startswith(".") for part in relative.split("/")):
            continue
        if "/" not in relative and (
            _FURNITURE.fullmatch(relative) or relative == VAULT_CONFIG_NAME
        ):
            continue
        if not looks_like_memory(relative, head_of(relative)):
            return relative
    return ""


def _read_head(path: Path) -> bytes:
    """Read at most FRONT_MATTER_BYTES from the start of a file (never waits on a pipe)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, FRONT_MATTER_BYTES)
    finally:
        os.close(fd)


def _read_bytes(path: str) -> tuple[bytes, int]:
    """Read a whole file with plain system calls (a reindex reads every memory; Python's
    buffered file objects cost more than the read itself); return its bytes and size. A
    file over MAX_FILE_BYTES is not read whole: its bytes are empty, its size its own."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        chunks = [os.read(fd, READ_FIRST)]
        read = len(chunks[0])
        while chunks[-1] and read <= MAX_FILE_BYTES:
            chunks.append(os.read(fd, 1 << 16))
            read += len(chunks[-1])
        if read > MAX_FILE_BYTES:
            return b"", os.fstat(fd).st_size
    finally:
        os.close(fd)
    return b"".join(chunks), read


def _unreadable(relative: str, reason: str) -> Memory:
    memory = parse_memory("", path=relative)
    return Memory(**{**memory.__dict__, "problem": reason})


def process_alive(pid: int) -> bool:
    """Say whether a process with this id runs (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _kept_mode(path: Path) -> int:
    """Return the mode a write of `path` gives it: the one it has (an executable stays one
    for git, a read-only file read-only: memstore neither widens nor narrows what its owner
    chose), 0600 for a new file."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return 0o600
    return stat.S_IMODE(mode) if stat.S_ISREG(mode) else 0o600
