"""A large vault's git status, its new files found by listing only the folders whose times moved.

git's status lists every folder to find files it does not track (5.6 s of a 11.6 s status
at 1,000,000 files, 1,025,016 names). Creating, removing or renaming a file always moves
its folder's modification and change times, and the change time cannot be set back: a
folder whose two times are what a listing recorded holds the same names. So a record of
folders seen holding no new file (`.git/memstore-folders`: each folder's times and its
subfolders, the HEAD tree it was compared with, the stat of every ignore-rule file) lets
the next status list only the folders whose times moved, those whose files HEAD changed
since, and none else. A folder is recorded only once its times are older than the listing
by `SETTLED_NS` (a file made in the same clock tick could not move them). Rules changed
(a .gitignore, info/exclude, git's config) mean every folder is listed again.
Edits inside a file are not this module's: git's status still compares every file's
stat with its index (`--untracked-files=no`).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memstore.core.errors import VaultError
from memstore.vault.git_objects import text_paths as _text_paths
from memstore.vault.index_staging import GIT_PLACES


def git_status(root: Path, env: Mapping[str, str], repo: Any) -> list[str]:
    """The paths git's status names (changed, staged, deleted, untracked; not ignored), as
    libgit2's status names them. Takes no lock and writes nothing to git's index (no
    optional locks). The untracked ones are found by listing only the folders whose times
    moved (vault/git_untracked.py) while git compares every file with its index."""
    argv = ["git", "-C", str(root), "--no-optional-locks", "status", "--porcelain=v1", "-z"]
    argv += ["--no-renames", "--ignore-submodules=all"]
    environment = {k: v for k, v in env.items() if k not in GIT_PLACES}
    found = None
    try:
        process = subprocess.Popen(
            [*argv, "--untracked-files=no"],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as err:
        raise VaultError(f"cannot read git status in {root}: {err}") from err
    try:
        found = new_files(root, repo, env)
    finally:
        listed = _finish_status(process, root)
    if found is None:  # a repository inside the vault: git's own listing of every folder
        listed = _run_status(root, [*argv, "--untracked-files=all"], environment)
    return sorted({*_text_paths(listed), *_text_paths(found or [])})


STATUS_TIMEOUT_S = 900  # a status of 1,000,000 files takes 5-15 s on a loaded machine


def _finish_status(process: subprocess.Popen[bytes], root: Path) -> list[str]:
    try:
        out, err = process.communicate(timeout=STATUS_TIMEOUT_S)
    except subprocess.TimeoutExpired as late:
        process.kill()
        process.communicate(timeout=10)
        raise VaultError(f"git status in {root} took over {STATUS_TIMEOUT_S} s") from late
    if process.returncode != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()[:1]
        raise VaultError(f"cannot read git status in {root}: {' '.join(message)}")
    return _status_names(out)


def _run_status(root: Path, argv: list[str], environment: Mapping[str, str]) -> list[str]:
    try:
        done = subprocess.run(
            argv, capture_output=True, check=True, env=environment, timeout=STATUS_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError) as err:
        raise VaultError(f"cannot read git status in {root}: {err}") from err
    return _status_names(done.stdout)


def _status_names(out: bytes) -> list[str]:
    entries = out.split(b"\0")
    return sorted(e[3:].decode("utf-8", "surrogateescape") for e in entries if len(e) > 3)


RECORD = "memstore-folders"
VERSION = 1
# A folder whose times are this much older than the listing's start is settled: no file
# made after the listing can carry its times (file systems stamp times in clock ticks;
# 2 s covers FAT's, far more than ext4's or APFS's).
SETTLED_NS = 2_000_000_000
_DIRECTORY_MODES = (0o040000,)  # a tree entry's mode
_GITLINK = 0o160000


def new_files(root: Path, repo: Any, env: Mapping[str, str]) -> list[str] | None:
    """Return the files under `root` that HEAD lacks and no ignore rule names (what git's
    status calls untracked, and staged-new ones too), updating the record; None when the
    vault holds what this listing does not answer for (a repository inside it): git's
    own status is then asked."""
    start = time.time_ns()
    record = _read(root)
    rules = _rule_stats(root, repo, env, record.get("ignores", []))
    tree = None if repo.head_is_unborn else repo.head.peel(_commit_type()).tree
    folders: dict[str, Any] = record.get("folders", {}) if record.get("rules") == rules else {}
    if folders and record.get("tree") != (str(tree.id) if tree is not None else ""):
        for folder in _folders_changed(repo, record.get("tree", ""), tree):
            folders.pop(folder, None)
    walk = _Walk(root, repo, tree, folders, start - SETTLED_NS)
    if not walk.run():
        return None
    if walk.ignores != set(record.get("ignores", [])) and folders:
        # A .gitignore came or went: what it names anywhere below may change; list all.
        walk = _Walk(root, repo, tree, {}, start - SETTLED_NS)
        if not walk.run():
            return None
    ignores = sorted(walk.ignores)
    after = _rule_stats(root, repo, env, ignores)
    if _rules_held(rules, after, start - SETTLED_NS):
        tree_id = str(tree.id) if tree is not None else ""
        folders = walk.recorded
        _write(
            root,
            {
                "version": VERSION,
                "tree": tree_id,
                "rules": after,
                "ignores": ignores,
                "folders": folders,
            },
        )
    else:
        forget(root)  # a rule file changed while listing: the next one lists every folder
    return sorted(walk.found)


def _rules_held(before: list[Any], after: list[Any], settled_before: int) -> bool:
    """Whether the rule files stood still while listing: those stat'd before are as they
    were, those found since (a .gitignore) older than the listing."""
    earlier = {stat[0]: stat for stat in before}
    for stat in after:
        if stat[0] in earlier:
            if earlier[stat[0]] != stat:
                return False
        elif len(stat) > 1 and max(stat[1], stat[2]) >= settled_before:
            return False
    return True


def forget(root: Path) -> None:
    """Drop the record: the next listing lists every folder."""
    with contextlib.suppress(FileNotFoundError):
        (root / ".git" / RECORD).unlink()


class _Walk:
    """One listing: recorded folders whose times stand are passed through (their
    subfolders from the record), the others listed and compared with HEAD's tree."""

    def __init__(
        self, root: Path, repo: Any, tree: Any, record: dict[str, Any], settled_before: int
    ) -> None:
        self.root, self.repo, self.tree, self.record = root, repo, tree, record
        self.settled_before = settled_before
        self.found: list[str] = []
        self.recorded: dict[str, Any] = {}
        self.ignores: set[str] = set()

    def run(self) -> bool:
        stack = [""]
        while stack:
            folder = stack.pop()
            try:
                st = os.lstat(self.root / folder if folder else self.root)
            except FileNotFoundError:
                continue  # removed meanwhile: its files are git's status's deletions
            seen = self.record.get(folder)
            if seen is not None and seen[0] == st.st_mtime_ns and seen[1] == st.st_ctime_ns:
                self.recorded[folder] = seen
                self.ignores.update(f"{folder}/{n}".lstrip("/") for n in seen[3:4] if n)
                stack.extend(seen[2])
                continue
            children = self._list(folder, st)
            if children is None:
                return False
            stack.extend(children)
        return True

    def _list(self, folder: str, st: os.stat_result) -> list[str] | None:
        """List one folder: note its new files, return its subfolders to walk."""
        held = self._head_folder(folder)
        children: list[str] = []
        new = 0
        ignore_file = ""
        try:
            entries = list(os.scandir(self.root / folder if folder else self.root))
        except (FileNotFoundError, NotADirectoryError):
            return []
        for entry in entries:
            name = entry.name
            path = f"{folder}/{name}" if folder else name
            if name == ".git":
                if folder:
                    return None  # a repository inside the vault: git's status decides
                continue
            if name == ".gitignore":
                ignore_file = name
                self.ignores.add(path)
            in_head = held.get(name) if held is not None else None
            if entry.is_dir(follow_symlinks=False):
                if in_head == _GITLINK:
                    continue  # a submodule: git's status speaks for it
                if in_head is None and self.repo.path_is_ignored(path):
                    continue
                children.append(path)
            elif (in_head is None or in_head in _DIRECTORY_MODES) and not self.repo.path_is_ignored(
                path
            ):
                self.found.append(path)
                new += 1
        settled = max(st.st_mtime_ns, st.st_ctime_ns) < self.settled_before
        if settled and not new:
            self.recorded[folder] = [st.st_mtime_ns, st.st_ctime_ns, children, ignore_file]
        return children

    def _head_folder(self, folder: str) -> dict[str, int] | None:
        """HEAD's entries in `folder` (name → mode), None when HEAD has no such folder."""
        tree = self.tree
        if tree is None:
            return None
        if folder:
            try:
                entry = tree[folder]
            except KeyError:
                return None
            if entry.filemode not in _DIRECTORY_MODES:
                return None
            tree = self.repo[entry.id]
        return {e.name: e.filemode for e in tree}


def _folders_changed(repo: Any, old: str, tree: Any) -> set[str]:
    """The folders holding files HEAD's tree `tree` and tree `old` differ in (all of
    them, as '', when `old` is no longer there)."""
    if not old or tree is None:
        return {""}
    try:
        before = repo[old]
    except (KeyError, ValueError):
        return {""}
    folders = set()
    for delta in repo.diff(before, tree).deltas:
        for path in (delta.old_file.path, delta.new_file.path):
            folders.add(path.rpartition("/")[0])
    return folders


def _rule_stats(root: Path, repo: Any, env: Mapping[str, str], ignores: list[str]) -> list[Any]:
    """The stat of every file git's ignore rules come from, absent ones too."""
    home = env.get("HOME", "")
    config = env.get("XDG_CONFIG_HOME", "") or (f"{home}/.config" if home else "")
    places = [
        str(root / ".git" / "info" / "exclude"),
        str(root / ".git" / "config"),
        *([f"{home}/.gitconfig"] if home else []),
        *([f"{config}/git/config", f"{config}/git/ignore"] if config else []),
        "/etc/gitconfig",
    ]
    with contextlib.suppress(KeyError, ValueError):
        named = str(repo.config["core.excludesFile"])
        places.append(f"{home}{named[1:]}" if named.startswith("~/") and home else named)
    places += [str(root / p) for p in ignores]
    stats: list[Any] = []
    for place in places:
        try:
            st = os.stat(place)
        except OSError:
            stats.append([place])
            continue
        stats.append([place, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino])
    return stats


def _read(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / ".git" / RECORD).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == VERSION else {}


def _write(root: Path, data: dict[str, Any]) -> None:
    """Replace the record whole (a temporary file renamed over it): a reader sees the old
    record or the new, never half of one; a failed write leaves no record (all listed)."""
    target = root / ".git" / RECORD
    temporary = target.with_name(f"{RECORD}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
            target.unlink()


def _commit_type() -> Any:
    from memstore.vault.git_lean import objects

    return objects().Commit
