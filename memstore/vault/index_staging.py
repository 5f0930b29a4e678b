"""The staging process: `git update-index` brings git's index up to HEAD for deferred paths.

A commit of memstore's in a large vault leaves git's index behind (GitRepo.commit's
`defer_index`), naming its paths in `.git/memstore-index-lag` ("<pid> <path>" lines, added
under the vault lock). Staging them reads and writes the whole index (at 100,000 files
~100 ms of CPU in git, ~160 ms and +17 MiB held in libgit2), so a process that commits
leaves it to this one (`python -m memstore.vault.index_staging ROOT LOCK`), started by
IndexStager, and never loads git's index on its add path:

1. under the vault lock (a moment), take the staging lock or leave (one staging at a time
   per vault) and move the lag's lines to `.git/memstore-index-lag.claimed`;
2. with only the staging lock, stage the claimed paths as HEAD holds them (a file a person
   changed since shows as their unstaged change) with `git update-index`, then delete the
   claimed file.

Adds never wait for step 2. Whoever else writes git's index (GitRepo, under the vault lock)
first waits for the staging lock (`staging_held`) and stages claimed and lagging paths
itself. A killed stager leaves the claimed file: the next staging takes it along. Only the
standard library and the lock functions are imported here: this runs as its own process.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from memstore.core.errors import LockedError, VaultError
from memstore.vault.locks import hold, open_lock_file, try_flock

# Paths committed while git's index was left behind: "<pid> <path>" lines, in .git/.
INDEX_LAG = "memstore-index-lag"
CLAIMED = INDEX_LAG + ".claimed"  # the lines a staging process took (it stages them)
STAGING_LOCK = "memstore-staging"  # flocked by whoever is staging git's index
# How long a staging process waits while one holder keeps the vault lock (a sync may hold
# it for seconds), and a writer of git's index for a staging process to end.
LOCK_WAIT_S = 30.0
# Paths named on one `git ls-tree` command line.
PATHS_PER_CALL = 1000
GO_FD = 3  # the staging process begins once this pipe closes (see spawn_stager)
# What would point git elsewhere than the vault (set when memstore runs inside a git hook).
GIT_PLACES = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR"}
)


def index_lags(root: Path) -> bool:
    """Whether some commit left git's index behind HEAD (two stats)."""
    git_dir = root / ".git"
    return (git_dir / INDEX_LAG).exists() or (git_dir / CLAIMED).exists()


def read_index_lag(root: Path) -> tuple[set[int], list[str]]:
    """Return the processes that deferred git's index and the paths left behind (lagging
    and claimed by a staging process)."""
    pids: set[int] = set()
    paths: list[str] = []
    for name in (CLAIMED, INDEX_LAG):
        try:
            text = (root / ".git" / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            pid, _, path = line.partition(" ")
            if pid.isdigit() and path:
                pids.add(int(pid))
                paths.append(path)
    return pids, list(dict.fromkeys(paths))


def note_index_lag(root: Path, paths: Iterable[str], pid: int) -> None:
    """Name `paths` as committed while git's index was left behind by process `pid`."""
    with open(root / ".git" / INDEX_LAG, "a", encoding="utf-8") as lag:
        lag.write("".join(f"{pid} {path}\n" for path in paths))


def clear_index_lag(root: Path) -> None:
    """Forget the lagging and claimed paths (their entries were just staged, lock held)."""
    for name in (INDEX_LAG, CLAIMED):
        (root / ".git" / name).unlink(missing_ok=True)


def index_lag_idle(root: Path) -> float:
    """Seconds since a commit last left git's index behind HEAD (0 if it is not behind)."""
    try:
        return max(0.0, time.time() - (root / ".git" / INDEX_LAG).stat().st_mtime)
    except OSError:
        return 0.0


def is_staging(root: Path) -> bool:
    """Whether a staging process is writing git's index right now."""
    try:
        handle = open_lock_file(root / ".git" / STAGING_LOCK)
    except OSError:
        return False
    with handle:
        return not try_flock(handle)


@contextlib.contextmanager
def staging_held(root: Path, timeout: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold the staging lock, waiting for a staging process under way to end.

    Raises:
        VaultError: a staging process has held it `timeout` seconds.
    """
    try:
        handle = open_lock_file(root / ".git" / STAGING_LOCK)
    except OSError as err:
        raise VaultError(f"cannot open {root / '.git' / STAGING_LOCK}: {err.strerror}") from err
    with handle:
        deadline = time.monotonic() + timeout
        while not try_flock(handle):
            if time.monotonic() > deadline:
                raise VaultError(
                    f"a process staging git's index in {root} has run for over {timeout:.0f} s; "
                    "stop it or wait for it"
                )
            time.sleep(0.005)  # bounded poll: a staging takes a fraction of a second
        yield


# How long a writer of git's index waits while another process holds index.lock: a
# person's (or an editor's) `git status` takes it for a moment to refresh the index.
INDEX_BUSY_S = 5.0


def while_index_locked(write: Callable[[], None], error: type[Exception]) -> None:
    """Run `write` (it reads git's index afresh, changes it and writes it), again while it
    fails with `error` because another process holds index.lock, for up to INDEX_BUSY_S.

    Without this, a commit whose index write met a person's `git status` (found under load,
    tests/daemon/test_watcher.py) left git's index behind HEAD until the next memstore
    command: `git status` showed the committed file as changed, and a long-running watcher
    runs no command of that kind. A crashed git's lock is cleared when the vault lock is
    taken (`clear_stale_locks`); past the bound the error stands.
    """
    deadline = time.monotonic() + INDEX_BUSY_S
    while True:
        try:
            write()
            return
        except error as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
        time.sleep(0.005)  # bounded poll: a git status holds the lock for milliseconds


def spawn_stager(
    root: Path,
    vault_lock: Path,
    env: Mapping[str, str],
    name: Callable[[int], None] | None = None,
) -> int:
    """Start a staging process for the vault at `root` (its own session, its output to
    /dev/null); return its pid. It starts its work only once `name(pid)` has returned (the
    caller names it in the lag: a writer's heal then leaves the paths to it)."""
    package = Path(__file__).resolve().parents[2]  # where this memstore is imported from
    environment = {k: v for k, v in env.items() if k not in GIT_PLACES}  # git: this vault
    places = (str(package), env.get("PYTHONPATH"))
    environment["PYTHONPATH"] = os.pathsep.join(p for p in places if p)
    argv = [sys.executable, "-m", "memstore.vault.index_staging", str(root), str(vault_lock)]
    wait, go = os.pipe()
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)
    ]
    actions.append((os.POSIX_SPAWN_DUP2, wait, GO_FD))
    try:
        pid = os.posix_spawn(sys.executable, argv, environment, file_actions=actions, setsid=True)
    finally:
        os.close(wait)
    try:
        if name is not None:
            name(pid)
    finally:
        os.close(go)  # the staging process reads end of file: its work begins
    return pid


def stage(root: Path, vault_lock: Path) -> int:
    """Stage what commits left behind in git's index (the process's work); return its
    exit status: 0 done (or another staging took the paths), 1 not done (the lines stay)."""
    for _ in range(100):  # each pass waits for another staging to end: bounded
        staging = open_lock_file(root / ".git" / STAGING_LOCK)
        try:
            with hold(lambda: open_lock_file(vault_lock), vault_lock, LOCK_WAIT_S, _no_heal):
                taken = try_flock(staging)
                paths = _claim(root) if taken else []
        except (LockedError, VaultError, OSError):
            staging.close()
            return 1
        if taken:
            break  # the vault lock is let go; the staging lock stays held
        staging.close()
        with staging_held(root):  # another staging is under way: after it, again
            pass
    else:
        return 1
    try:
        with staging:
            if paths:
                stage_as_head(root, paths)
            (root / ".git" / CLAIMED).unlink(missing_ok=True)
    except (OSError, subprocess.CalledProcessError):
        return 1  # the claimed lines stay for the next staging
    return 0


def _no_heal() -> None:
    """The staging process heals nothing (memstore's writers do, under the lock)."""


def _claim(root: Path) -> list[str]:
    """Move the lag's lines to the claimed file (after a killed stager's); return its paths."""
    git_dir = root / ".git"
    try:
        lines = (git_dir / INDEX_LAG).read_bytes()
    except FileNotFoundError:
        lines = b""
    if lines:
        with open(git_dir / CLAIMED, "ab") as claimed:
            claimed.write(lines)
        (git_dir / INDEX_LAG).unlink()
    return read_index_lag(root)[1]


def stage_as_head(root: Path, paths: list[str]) -> None:
    """Point git's index at HEAD's entries for `paths`: a file as committed is staged from
    the work tree (its stat data kept: status stays fast), one a person changed since as
    HEAD's blob, one HEAD does not hold is dropped.

    Raises:
        subprocess.CalledProcessError: git failed (e.g. a person's git holds index.lock).
    """
    head = _head_entries(root, paths)
    as_file, as_blob = [], []
    for path in paths:
        mode, oid = head.get(path, (b"", b""))
        on_disk = _blob_id(root / path, len(oid))
        if oid and on_disk == oid:
            as_file.append(path)
        elif oid:
            as_blob.append(b"%s %s\t%s" % (mode, oid, os.fsencode(path)))
        elif on_disk is None:
            as_file.append(path)  # --remove drops a file gone from disk and from HEAD
        else:
            as_blob.append(b"0 %s\t%s" % (b"0" * 40, os.fsencode(path)))  # mode 0: dropped
    git = ["git", "-C", str(root), "--literal-pathspecs", "update-index", "-z"]
    if as_blob:
        subprocess.run([*git, "--index-info"], input=b"\0".join(as_blob) + b"\0",
                       check=True, capture_output=True)  # fmt: skip
    # Written even when no entry changed (paths another staging took already): git's index
    # dated after HEAD is how the next writer tells it from a killed commit's (no repair).
    names = b"".join(os.fsencode(p) + b"\0" for p in as_file)
    subprocess.run([*git, "--add", "--remove", "--force-write-index", "--stdin"], input=names,
                   check=True, capture_output=True)  # fmt: skip


def _head_entries(root: Path, paths: list[str]) -> dict[str, tuple[bytes, bytes]]:
    """{path: (mode, blob id)} of the files HEAD holds among `paths`."""
    found: dict[str, tuple[bytes, bytes]] = {}
    for start in range(0, len(paths), PATHS_PER_CALL):
        argv = ["git", "-C", str(root), "--literal-pathspecs", "ls-tree", "-z", "--full-tree"]
        argv += ["HEAD", "--"]
        some = paths[start : start + PATHS_PER_CALL]
        done = subprocess.run([*argv, *some], check=True, capture_output=True)
        for record in done.stdout.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == b"blob":
                found[os.fsdecode(name)] = (parts[0], parts[2])
    return found


def _blob_id(file: Path, width: int) -> bytes | None:
    """git's blob id of the file (its link's target for a symlink); None if it is absent."""
    try:
        data = os.fsencode(os.readlink(file)) if file.is_symlink() else file.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256() if width == 64 else hashlib.sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest().encode("ascii")


def main(argv: list[str]) -> int:
    root, vault_lock = Path(argv[0]), Path(argv[1])
    with contextlib.suppress(OSError):
        os.read(GO_FD, 1)  # end of file once the starter has named this process
        os.close(GO_FD)
    return stage(root, vault_lock)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
