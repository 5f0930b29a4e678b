"""The vault's history read in bulk through the git command: each commit's paths, some diffs.

`GitLog.history()` diffs every commit's tree in pygit2: ~5 ms a commit when month folders
hold thousands of files (58 s wall at 10,600 commits). `git log --raw` walks the same trees
in C, reusing what it read for the commit before: 0.6 s. Nothing here knows what a memory
is: commits, paths and text.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memstore.core.errors import VaultError

# Records and fields of the format below: ASCII's record and unit separators, which no
# commit message memstore writes holds (a person's could: such a message is cut there).
_RECORD, _FIELD = "\x1e", "\x1f"
_FORMAT = f"--format={_RECORD}%H{_FIELD}%P{_FIELD}%an{_FIELD}%ct{_FIELD}%B{_FIELD}"
# A merge is shown against its first parent: what it brought into this clone's history.
_COMMON = ["--no-renames", "--no-abbrev", "--diff-merges=first-parent", "--no-color"]


@dataclass(frozen=True)
class Walked:
    """One commit as the walk read it: who, when, what it says, the paths it changed."""

    id: str
    parents: tuple[str, ...]
    author: str
    time: int
    message: str
    touched: tuple[tuple[str, str], ...]  # (status A/M/D, path), against the first parent
    blobs: tuple[str, ...] = ()  # the blob each path of `touched` has after the commit


def walk_history(
    root: Path, *, since: int | None = None, under: str | None = None
) -> Iterator[Walked]:
    """Yield HEAD's commits newest first, each with the paths it changed.

    `since` (a Unix time) stops at older commits; `under` keeps only the commits that
    changed something in that folder.
    """
    args = ["log", "--raw", "-z", *_COMMON, _FORMAT]
    if since is not None and since > 0:
        # A date, not `@<seconds>`: git reads `@100` or `@99999999` as some other time (no
        # commit is "since" then). No commit is older than 1970: from then on, every one.
        stamp = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%d %H:%M:%S +0000")
        args.append(f"--since={stamp}")
    args += ["HEAD", "--"] + ([f"{under}/"] if under else [])
    for record in _records(_run(root, args)):
        head, _, body = record.rpartition(_FIELD)
        fields = head.split(_FIELD, 4)
        if len(fields) < 5:
            continue
        commit, parents, author, stamp, message = fields
        entries = list(_raw_entries(body))
        yield Walked(
            commit,
            tuple(parents.split()),
            author,
            int(stamp or 0),
            message.rstrip("\n"),
            tuple((status, path) for status, path, _ in entries),
            tuple(blob for _, _, blob in entries),
        )


def read_diffs(root: Path, commits: Iterable[str], *, max_lines: int) -> dict[str, str]:
    """Return each commit's unified diff against its first parent, cut after `max_lines`."""
    wanted = list(dict.fromkeys(commits))
    if not wanted:
        return {}
    args = ["log", "--no-walk=unsorted", "--stdin", "-p", *_COMMON, f"--format={_RECORD}%H"]
    out = _run(root, args, stdin="\n".join(wanted) + "\n")
    diffs = {}
    for record in _records(out):
        commit, _, diff = record.partition("\n")
        lines = diff.strip("\n").split("\n")
        if len(lines) > max_lines:
            lines = [*lines[:max_lines], f"… {len(lines) - max_lines} more lines"]
        diffs[commit.strip()] = "\n".join(lines) if diff.strip() else ""
    return diffs


def first_added(root: Path, paths: Iterable[str], *, batch: int = 500) -> dict[str, int]:
    """Return when (a Unix time) each of `paths` first came into HEAD's history: the oldest
    commit that added it (a merge counts against its first parent). Paths never added are
    left out."""
    wanted = sorted(set(paths))
    found: dict[str, int] = {}
    for start in range(0, len(wanted), batch):
        args = ["log", "--diff-filter=A", "--name-only", "-z", *_COMMON, f"--format={_RECORD}%ct"]
        out = _run(root, [*args, "HEAD", "--", *wanted[start : start + batch]])
        for record in _records(out):  # newest first: the oldest add wins
            stamp, _, names = record.partition("\0")  # '<time>' NUL '\n<path>' NUL …
            for name in names.split("\0"):
                if name.strip("\n"):
                    found[name.strip("\n")] = int(stamp.strip() or 0)
    return found


def _records(out: str) -> Iterator[str]:
    for record in out.split(_RECORD):
        if record.strip("\0\n"):
            yield record


def _raw_entries(body: str) -> Iterator[tuple[str, str, str]]:
    """(status, path, new blob) of `--raw -z` output: ':<old mode> <new mode> <old blob>
    <new blob> <status>' NUL '<path>' NUL."""
    tokens = body.split("\0")
    at = 0
    while at < len(tokens) - 1:
        meta = tokens[at].strip()
        if meta.startswith(":"):
            fields = meta.split(" ")
            yield fields[-1][:1], tokens[at + 1], fields[3] if len(fields) > 4 else ""
            at += 2
        else:
            at += 1


def _run(root: Path, args: list[str], stdin: str | None = None) -> str:
    """Run a reading git command in the vault; a failure is a VaultError naming it."""
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=root,
            input=stdin.encode("utf-8") if stdin is not None else None,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as err:
        raise VaultError(
            f"cannot run git to read the vault's history ({err}); install git"
        ) from err
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        if "does not have any commits" in " ".join(reason) or "bad revision 'HEAD'" in " ".join(
            reason
        ):
            return ""
        raise VaultError(
            f"git {args[0]} failed in {root}: {reason[-1] if reason else done.returncode}"
        )
    return done.stdout.decode("utf-8", "replace")
