"""HEAD and its reflog read as plain files (no pygit2): did git move HEAD, and how."""

from __future__ import annotations

import os
from pathlib import Path

# Reflog entries of moves that change no file in the work tree.
_COMMITS = ("commit: ", "commit (initial): ", "commit (amend): ")


def read_head(root: Path) -> tuple[str, int]:
    """Return git's HEAD commit id ('' if unborn or unreadable) and its reflog's size.

    Plain file reads (no pygit2): a search pays for this on every catch-up.
    """
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        head = ""
    try:
        size = os.stat(git / "logs" / "HEAD").st_size
    except OSError:
        size = 0
    if head.startswith("ref: "):
        head = _read_ref(git, head[len("ref: ") :].strip())
    return head, size


def moved_by_commits_only(root: Path, old: tuple[str, int], new: tuple[str, int]) -> bool:
    """Say whether HEAD went from `old` to `new` (see `read_head`) by commits alone.

    A commit changes no file in the work tree; a checkout, merge, pull or reset does
    (libgit2 rewrites files in place, which a folder's mtime does not show). Git's
    reflog names each move: anything but an unbroken chain of `commit` entries from
    `old` to `new` (or no reflog) answers False.
    """
    if old == new:
        return True
    (old_head, old_size), (new_head, new_size) = old, new
    if not old_head or not new_head or new_size <= old_size:
        return False
    try:
        with open(root / ".git" / "logs" / "HEAD", "rb") as log_file:
            log_file.seek(old_size)
            tail = log_file.read(new_size - old_size)
    except OSError:
        return False
    current = old_head
    for line in tail.decode("utf-8", errors="replace").splitlines():
        ids, _, message = line.partition("\t")
        parts = ids.split(" ", 2)
        if len(parts) < 3 or parts[0] != current or not message.startswith(_COMMITS):
            return False
        current = parts[1]
    return current == new_head


def arrived_from(root: Path, commit: str) -> str | None:
    """Return the commit HEAD left when it first reached `commit`, by git's reflog: a
    merge made here arrives from its first parent, one pulled from elsewhere from the
    commit this vault had. None when the reflog does not say (expired, or a clone)."""
    try:
        with open(root / ".git" / "logs" / "HEAD", "rb") as log_file:
            for raw in log_file:
                ids, _, message = raw.partition(b"\t")
                parts = ids.split(b" ", 2)
                if len(parts) < 3 or parts[1].decode("ascii", "replace") != commit:
                    continue
                if message.startswith((b"reset:", b"checkout:")):
                    continue  # HEAD moved back to it later, not its arrival
                old = parts[0].decode("ascii", "replace")
                return None if not old.strip("0") else old  # zeros: a clone's first entry
    except OSError:
        return None
    return None


def _read_ref(git: Path, name: str) -> str:
    """Return the commit id a ref names ('' when it names none yet)."""
    try:
        return (git / name).read_text(encoding="utf-8").strip()
    except OSError:
        pass
    try:
        packed = (git / "packed-refs").read_text(encoding="utf-8")
    except OSError:
        return ""
    for line in packed.splitlines():
        oid, _, ref = line.partition(" ")
        if ref == name:
            return oid
    return ""
