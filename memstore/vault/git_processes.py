"""Git processes at work in the vault: a person's commit under way, a killed git's locks.

Reads /proc and stats files (no pygit2).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

STALE_LOCK_S = 5.0


def clear_stale_locks(root: Path, locks: list[Path]) -> list[str]:
    """Remove lock files no live git process holds; return the names removed.

    It runs when the vault lock is taken (`Vault.on_lock`), so no memstore process is
    writing git now: a
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
