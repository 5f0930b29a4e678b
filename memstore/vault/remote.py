"""The vault's remote, through the git CLI: whatever `git push` works with here works.

SSH with the user's agent and ~/.ssh/config, HTTPS with credential helpers, a bare
repository on disk — libgit2 supports only some of these, so transport goes through git.
Nothing here ever force-pushes.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from memstore.core.errors import InvalidInputError, SyncError

TIMEOUT_S = 120
END_WAIT_S = 5.0  # for a killed git's pipes to close (a child of git's may hold them)
# .git/<PRUNES>: how many prunes ran (a purge's), and its .lock: held shared by a writer of
# objects beside the vault lock (the counter flush's build, a fetch), exclusive by a prune
# (which waits at most OBJECTS_WAIT_S, then refuses: never run beside them)
PRUNES = "memstore-prunes"
OBJECTS_WAIT_S = 60.0
GC_AUTO = 6700  # git's default gc.auto: past about this many loose objects, `git gc --auto` packs
_UNREACHABLE = (
    "could not resolve host",
    "connection refused",
    "network is unreachable",
    "connection timed out",
    "unable to access",
    "does not appear to be a git repository",
    "no such file or directory",
    "could not read from remote repository",
    "repository not found",
)
_AUTH = ("authentication failed", "permission denied", "terminal prompts disabled", "403")
_REJECTED = ("[rejected]", "non-fast-forward", "fetch first")


def run_git(
    root: Path, args: list[str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run git in the vault without a terminal to prompt on (so it fails rather than hangs)."""
    environment = {**env, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(
            ["git", *args],
            cwd=root,
            env=environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=TIMEOUT_S,
        )
    except FileNotFoundError as err:
        raise SyncError("git is not installed; memstore sync and gc need the git command") from err
    except subprocess.TimeoutExpired as err:
        raise SyncError(
            f"git {_command(args)} took over {TIMEOUT_S} s; check the network and try again"
        ) from err


def _command(args: list[str]) -> str:
    """The git command `args` run (`gc` of `-c gc.autoDetach=false gc --auto`)."""
    values = {i + 1 for i, arg in enumerate(args) if arg in ("-c", "-C")}
    named = (a for i, a in enumerate(args) if i not in values and not a.startswith("-"))
    return next(named, args[0] if args else "")


def _start_git(root: Path, args: list[str], env: Mapping[str, str]) -> subprocess.Popen[str]:
    """Start git in `root` as `run_git` runs it (no prompt, C messages), its output piped."""
    return subprocess.Popen(
        ["git", *args],
        cwd=root,
        env={**env, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
    )


def _beside(
    root: Path, args: list[str], env: Mapping[str, str], meanwhile: Callable[[], None]
) -> subprocess.CompletedProcess[str]:
    """Run git as `run_git` does while `meanwhile` runs; its time limit starts after that."""
    try:
        process = _start_git(root, args, env)
    except FileNotFoundError as missing:
        raise SyncError(
            "git is not installed; memstore sync and gc need the git command"
        ) from missing
    try:
        meanwhile()
    finally:
        try:
            out, err = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired as late:
            _end(process)
            raise SyncError(
                f"git {args[0]} took over {TIMEOUT_S} s; check the network and try again"
            ) from late
    return subprocess.CompletedProcess(["git", *args], process.returncode, out, err)


def remote_url(root: Path, name: str, env: Mapping[str, str]) -> str:
    """Return the URL of remote `name`, or '' if there is none."""
    done = run_git(root, ["config", "--get", f"remote.{name}.url"], env)
    return done.stdout.strip() if done.returncode == 0 else ""


def remote_urls(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """Return every remote of the vault with its URL (name → URL), in git's order."""
    done = run_git(root, ["config", "--get-regexp", r"^remote\..*\.url$"], env)
    urls = {}
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        key, _, url = line.partition(" ")
        urls[key.removeprefix("remote.").removesuffix(".url")] = url
    return urls


_SCP_LIKE = re.compile(r"^[^/]*:")  # host:path, user@host:path: git's rule, a colon before any /


def absolute_url(url: str, cwd: Path) -> str:
    """Return `url` as the vault's git should read it: a local path made absolute.

    git reads a relative path in a remote's URL from the vault, not from where `remote add`
    ran, so a path is resolved against `cwd` (the caller's); URLs (scheme://, host:path) and
    absolute paths (and ~ paths) are kept as given."""
    path = Path(url.removeprefix("file://"))
    if not url.startswith("file://") and ("://" in url or _SCP_LIKE.match(url)):
        return url
    if url.startswith("~"):
        return url  # the shell's to expand (only the shells read the home directory)
    if not (cwd / path).exists():  # an absolute path too: a typo would fail every sync
        where = "" if path.is_absolute() else f" from {cwd}"
        raise InvalidInputError(
            f"no such path {url!r}{where}; give the remote repository's URL, or a path to it "
            f"that exists (e.g. made with: git init --bare {shlex.quote(str(cwd / path))})"
        )
    return url if path.is_absolute() else str((cwd / path).resolve())


def set_remote(root: Path, name: str, url: str, env: Mapping[str, str]) -> None:
    """Add remote `name`, or point it at `url` if it exists."""
    verb = "set-url" if remote_url(root, name, env) else "add"
    done = run_git(root, ["remote", verb, name, url], env)
    if done.returncode != 0:
        raise SyncError(f"cannot set remote {name!r} to {url}: {_first_line(done.stderr)}")


def remove_remote(root: Path, name: str, env: Mapping[str, str]) -> None:
    """Remove remote `name` with git's own `git remote remove`: its URL, its remote-tracking
    branches and the branches' tracking of it."""
    done = run_git(root, ["remote", "remove", name], env)
    if done.returncode != 0:
        raise SyncError(f"cannot remove remote {name!r}: {_first_line(done.stderr)}")


def fetch(root: Path, name: str, env: Mapping[str, str]) -> None:
    """Fetch remote `name` into refs/remotes/<name>/*, a purge's prune held off meanwhile
    (`writing_objects`: a fetch writes objects before the ref that makes them reachable)."""
    done = fetch_git(root, ["--no-tags", name], env)
    if done.returncode != 0:
        raise _classify(done.stderr, name, remote_url(root, name, env), "fetch from")


def fetch_git(
    root: Path, args: list[str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run `git fetch --quiet ARGS` in `root` with a purge's prune held off meanwhile (a fetch
    writes objects before the ref that makes them reachable; team clones fetch this way too).

    Raises:
        SyncError: a prune held the objects for over OBJECTS_WAIT_S (nothing was fetched).
    """
    with _holding_objects(root, False, OBJECTS_WAIT_S) as held:
        if not held:
            raise SyncError(_pruning(root))
        return run_git(root, ["fetch", "--quiet", *args], env)


# A fetch that runs beside memstore's own commits: git's automatic gc and maintenance are
# off for it (memstore packs after a sync itself, under its lock: remote.pack), so it only
# adds objects and moves refs/remotes/<name>/*, never a ref or object a commit here uses.
_BESIDE = ["-c", "gc.auto=0", "-c", "maintenance.auto=false"]


class Fetching:
    """A `git fetch` started in the background (`start_fetch`); `wait` for its outcome."""

    def __init__(self, root: Path, name: str, env: Mapping[str, str]) -> None:
        from memstore.vault.locks import shared_within

        self.root, self.name, self.env = root, name, env
        self.started = time.monotonic()
        self.process: subprocess.Popen[str] | None = None
        # A purge's prune (`git gc --prune=now`) deletes objects no ref reaches yet: the ones
        # a fetch has written before it moves refs/remotes/*. The prunes' lock is held
        # shared for git's life: not this object's, or a sync waiting for the vault lock a
        # purge holds would hold that purge's prune off; nor git's descriptor, which its
        # children inherit (a credential cache daemon kept it 15 minutes: every prune in
        # that clone refused). A thread here lets go once git ends. With a prune under way
        # the fetch starts later, in `wait` (as `fetch`).
        held = shared_within(_prunes_lock(root), 0)
        self.later = held is None
        if held is None:
            return
        try:
            self.process = _start_git(root, [*_BESIDE, "fetch", "--quiet", "--no-tags", name], env)
        except FileNotFoundError:
            self.process = None
            held.close()
            return
        threading.Thread(
            target=_release_at_end, args=(self.process, held), name="memstore-fetch", daemon=True
        ).start()

    def wait(self) -> None:
        """Wait for the fetch (at most `TIMEOUT_S` from its start); raise as `fetch` does."""
        if self.later:
            fetch(self.root, self.name, self.env)
            return
        if self.process is None:
            raise SyncError("git is not installed; memstore sync and gc need the git command")
        left = max(0.0, TIMEOUT_S - (time.monotonic() - self.started))
        try:
            _, stderr = self.process.communicate(timeout=left)
        except subprocess.TimeoutExpired as err:
            self.stop()
            raise SyncError(
                f"git fetch took over {TIMEOUT_S} s; check the network and try again"
            ) from err
        if self.process.returncode != 0:
            raise _classify(
                stderr, self.name, remote_url(self.root, self.name, self.env), "fetch from"
            )

    def stop(self) -> None:
        """End the fetch if it still runs (the sync failed before it needed it)."""
        if self.process is not None:
            _end(self.process)


def _release_at_end(process: subprocess.Popen[str], held: BinaryIO) -> None:
    """Close `held` (a lock's handle) once `process` has ended."""
    try:
        process.wait()
    finally:
        held.close()


def _end(process: subprocess.Popen[str]) -> None:
    """Kill git if it still runs, reap it and close its pipes, within a bound: a child of
    git's (ssh, a credential helper) keeps the pipes open past git's end, and reading them
    to their end would wait for it, for ever if its server never answers."""
    if process.poll() is None:
        process.kill()
    try:
        process.communicate(timeout=END_WAIT_S)
    except subprocess.TimeoutExpired:
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()  # what still holds the other end gets a broken pipe
        process.wait(timeout=END_WAIT_S)  # git itself was killed: it is gone


def start_fetch(root: Path, name: str, env: Mapping[str, str]) -> Fetching:
    """Start fetching remote `name` in the background: the sync commits edits meanwhile."""
    return Fetching(root, name, env)


def push(
    root: Path,
    name: str,
    branch: str,
    env: Mapping[str, str],
    *,
    commit: str = "",
    lease: str = "",
    meanwhile: Callable[[], None] | None = None,
) -> bool:
    """Push `commit` (default HEAD) to the branch; return False when the remote moved on.

    Never forced, except with `lease`: then the branch is replaced only if the remote still
    has that commit (git's --force-with-lease), as finishing a purge needs. `meanwhile`
    runs while git pushes (the sync's catch-up of the index: it reads no git object the
    push writes); the push is waited for even when it raises.
    """
    refspec = f"{commit or 'HEAD'}:refs/heads/{branch}"
    force = [f"--force-with-lease=refs/heads/{branch}:{lease}"] if lease else []
    argv = ["push", "--quiet", "--porcelain", *force, name, refspec]
    done = run_git(root, argv, env) if meanwhile is None else _beside(root, argv, env, meanwhile)
    if done.returncode == 0:
        point_bare_head(root, remote_url(root, name, env), branch, env)
        return True
    output = f"{done.stdout}\n{done.stderr}"
    declined = _declined(output)
    if declined and lease:  # a protected branch refuses every forced push, this one too
        raise SyncError(
            f"remote {name!r} declined the forced push that finishes the purge: {declined}; "
            f"nothing changed there and your commits are kept — a protected branch refuses "
            f"any forced push: have force pushes to {branch} allowed for a moment (the "
            f"host's branch settings), then run 'memstore sync --remote {name} "
            "--force-purged' again"
        )
    if declined:
        raise SyncError(
            f"remote {name!r} declined the push: {declined}; your commits are kept — "
            "ask the remote's owner, or fix what it names and run 'memstore sync' again"
        )
    if any(mark in output.lower() for mark in _REJECTED):
        return False
    raise _classify(done.stderr or done.stdout, name, remote_url(root, name, env), "push to")


def point_bare_head(root: Path, url: str, branch: str, env: Mapping[str, str]) -> bool:
    """Point a bare repository on disk's HEAD at `branch` when it names a branch that does
    not exist (`git init --bare` names master; memstore pushes main), so a clone of it
    checks `branch` out instead of warning "remote HEAD refers to nonexistent ref". A
    host's HEAD (GitHub: the first branch pushed) is the host's; return whether it moved."""
    local = url.removeprefix("file://")
    if "://" in local or re.match(r"^[^/]+:", local):  # a host's URL, or scp-like host:path
        return False
    bare = Path(root, local)
    try:
        named = (bare / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:  # not a repository folder (a .git file, a bundle): leave it
        return False
    if not named.startswith("ref: refs/heads/") or named == f"ref: refs/heads/{branch}":
        return False
    git_dir = ["--git-dir", str(bare)]
    if run_git(root, [*git_dir, "rev-parse", "--is-bare-repository"], env).stdout.strip() != "true":
        return False  # a work tree's HEAD is what someone has checked out: never move it
    ref = named.removeprefix("ref: ")
    if run_git(root, [*git_dir, "rev-parse", "--verify", "--quiet", ref], env).returncode == 0:
        return False  # it names a branch that exists: someone chose it
    return (
        run_git(root, [*git_dir, "symbolic-ref", "HEAD", f"refs/heads/{branch}"], env).returncode
        == 0
    )


def _declined(output: str) -> str:
    """Return the server's reason when it refused the push itself (a hook, a protected
    branch), '' when it did not. Only a remote that moved on is worth merging and retrying."""
    if "[remote rejected]" not in output:
        return ""
    said = [
        line.removeprefix("remote:").strip()
        for line in output.splitlines()
        if line.startswith("remote:") and line.removeprefix("remote:").strip()
    ]
    reason = re.search(r"\[remote rejected\]\s*\(([^)]*)\)", output)
    parts = [*said[:2], *([reason.group(1)] if reason else [])]
    return "; ".join(parts) or "no reason given"


def _missing_local_path(url: str) -> str:
    """Return a remote URL's local path when nothing is there (a typo, a disk not mounted),
    '' for a path that exists or a host's URL."""
    local = url.removeprefix("file://")
    if "://" in local or _SCP_LIKE.match(local) or not Path(local).is_absolute():
        return ""
    return "" if Path(local).exists() else local


def _classify(stderr: str, name: str, url: str, verb: str) -> SyncError:
    text = stderr.lower()
    where = f"remote {name!r} ({url})"
    if any(mark in text for mark in _AUTH):
        return SyncError(
            f"{where} refused authentication; check your SSH key or credential helper "
            f"(plain 'git {verb.split()[0]}' in the vault must work); your commits are kept"
        )
    missing = _missing_local_path(url)
    if missing:
        return SyncError(
            f"cannot {verb} {where}: there is no repository at {missing}; make one with "
            f"'git init --bare {missing}' (or mount the disk it is on, or point {name!r} "
            f"elsewhere with 'memstore remote add {name} URL'), then run 'memstore sync' "
            "again; your commits are kept"
        )
    if any(mark in text for mark in _UNREACHABLE):
        return SyncError(
            f"cannot {verb} {where}: {_first_line(stderr)}; your commits are kept, "
            "run 'memstore sync' again when it is reachable"
        )
    return SyncError(f"git could not {verb} {where}: {_first_line(stderr)}; your commits are kept")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (
        lines[0].removeprefix("fatal: ").removeprefix("error: ") if lines else "no details from git"
    )


def prune_unreachable(root: Path, env: Mapping[str, str]) -> None:
    """Expire the reflog and delete unreachable objects, so rewritten history is gone.

    Objects written meanwhile beside the vault lock (`writing_objects`: the counter flush's
    build) are written first; one that starts after sees this prune and writes nothing."""
    with _holding_objects(root, True, OBJECTS_WAIT_S) as held:
        if not held:  # run now, it could delete what a fetch has not made reachable yet
            raise SyncError(
                f"cannot prune the unreachable git objects of {root}: another memstore "
                f"process (a sync's fetch, a recall-count flush) has been writing objects "
                f"for over {OBJECTS_WAIT_S:.0f} s; the rewritten history stands, but its old "
                f"objects (the purged text) stay until you run 'git -C {shlex.quote(str(root))} "
                "gc --prune=now' and 'memstore reindex' (the index's old segments hold it too) "
                "once that process is done"
            )
        # renamed over, never torn: a count read as 0 again could equal one a writer read
        count = root / ".git" / PRUNES
        scratch = count.with_name(f".{PRUNES}.tmp-{os.getpid()}")
        scratch.write_text(f"{prunes_run(root) + 1}\n", encoding="utf-8")
        os.replace(scratch, count)
        for args in (
            ["reflog", "expire", "--expire=now", "--all"],
            ["gc", "--quiet", "--prune=now"],
        ):
            done = run_git(root, args, env)
            if done.returncode != 0:
                raise SyncError(f"git {args[0]} failed in {root}: {_first_line(done.stderr)}")


def prunes_run(root: Path) -> int:
    """Return how many prunes of unreachable objects this clone has run (since counted)."""
    try:
        return int((root / ".git" / PRUNES).read_text(encoding="utf-8").strip() or 0)
    except (OSError, ValueError):
        return 0


@contextmanager
def writing_objects(root: Path, prunes: int) -> Iterator[bool]:
    """Hold prunes off while a writer beside the vault lock (the counter flush's build)
    writes git objects; yield whether it may: no prune ran since it read `prunes`, under
    the vault lock, with the files it builds from. After a prune (a purge) what it read may
    hold purged text, and an object written after the prune would keep it on disk."""
    with _holding_objects(root, False, OBJECTS_WAIT_S) as held:
        yield held and prunes_run(root) == prunes


def _prunes_lock(root: Path) -> Path:
    return root / ".git" / f"{PRUNES}.lock"


@contextmanager
def _holding_objects(root: Path, exclusive: bool, wait_s: float) -> Iterator[bool]:
    """Hold the prunes' lock (see PRUNES) within `wait_s`; yield whether it is held.

    A lock file that cannot be made (a .git that is not writable, a path in its way) is no
    prune under way: a writer of objects goes on (no prune can take that lock either), and
    a prune refuses, naming the file (SyncError)."""
    from memstore.vault.locks import held_within, open_lock_file

    path = _prunes_lock(root)
    try:
        open_lock_file(path).close()
    except OSError as err:
        if exclusive:
            raise SyncError(
                f"cannot prune the unreachable git objects of {root}: cannot open {path} "
                f"({err.strerror}), the lock that keeps a prune from a fetch's new objects"
            ) from err
        yield True
        return
    with held_within(path, exclusive, wait_s) as held:
        yield held


def _pruning(root: Path) -> str:
    return (
        f"a purge has been pruning git's objects in {root} for over {OBJECTS_WAIT_S:.0f} s; "
        "nothing was fetched and your commits are kept: run 'memstore sync' again when it ends"
    )


@dataclass(frozen=True)
class ObjectCounts:
    """What `git count-objects -v` says about the vault's history."""

    loose: int
    loose_kib: int
    packed_kib: int


def count_objects(root: Path, env: Mapping[str, str]) -> ObjectCounts:
    """Return the loose object count and the loose and packed sizes of the vault's history."""
    done = run_git(root, ["count-objects", "-v"], env)
    if done.returncode != 0:
        raise SyncError(f"git count-objects failed in {root}: {_first_line(done.stderr)}")
    values = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    return ObjectCounts(
        int(values.get("count", 0)), int(values.get("size", 0)), int(values.get("size-pack", 0))
    )


def needs_packing(root: Path) -> bool:
    """Say whether `git gc --auto` would pack: git's own estimate, from the one folder
    objects/17 (more than gc.auto ÷ 256 loose objects there).

    memstore commits through libgit2, which never packs; without this, every memory leaves
    a few loose objects behind for good (a 10,000-memory vault: ~50 MB of them).
    """
    try:
        with os.scandir(root / ".git" / "objects" / "17") as entries:
            return sum(1 for _ in entries) > -(-GC_AUTO // 256)
    except OSError:
        return False


def pack(root: Path, env: Mapping[str, str], *, auto: bool) -> None:
    """Pack loose objects with `git gc` (with `auto`, only if git's estimate says so).

    In the foreground, inside a service transaction (tidy, sync, gc), so no memstore
    commit races git's own ref locks (a detached gc would run on after the lock is released).
    """
    done = run_git(
        root, ["-c", "gc.autoDetach=false", "gc", "--quiet", *(["--auto"] if auto else [])], env
    )
    if done.returncode != 0:
        raise SyncError(f"git gc failed in {root}: {_first_line(done.stderr)}")
