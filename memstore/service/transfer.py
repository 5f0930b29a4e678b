"""Moving a vault out and back: export to JSON, restore from it."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstore import __version__
from memstore.catalog.indexer import Progress
from memstore.core.codec import parse_memory, render_memory
from memstore.core.errors import InvalidInputError, SecretError, VaultError
from memstore.core.faults import crash_point
from memstore.core.merge import restore_memory
from memstore.core.model import Memory
from memstore.service.store import Store
from memstore.service.transaction import Transaction
from memstore.vault.files import Vault

EXPORT_FORMAT = "memstore-export"
# version 2 added "base64": the exact bytes of a file that is not valid UTF-8 ("text" then
# holds a readable, lossy copy, which is all a version-1 reader uses)
EXPORT_VERSION = 2
MAX_NAME_BYTES = 255  # the longest file or folder name ext4, APFS and most others take


def export(store: Store, workspace: str | None = None) -> dict[str, Any]:
    """Return every memory with its path, id, workspace and the file's exact content (none
    held back for a credential: `export_holding_back`)."""
    return export_holding_back(store, workspace)[0]


def export_holding_back(
    store: Store, workspace: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Return the export and {path: kind} of the files it left out: never committed (or
    changed since) because their new lines hold what looks like a credential — the files
    sync and the watcher hold back (`vault/edits.py`), whose text must not leave either."""
    store.catch_up()
    chosen = [e for e in store.indexer.entries() if workspace is None or e.workspace == workspace]
    # Only a file that differs from HEAD can be held back: git's status finds those (~3.4 µs
    # a file at 10k, where hashing each named file cost ~21 µs), then they are scanned the
    # way a commit scans them (docs/benchmarks.md, twelfth session).
    exported = {e.path for e in chosen}
    changed = [p for p in store.git.changed_paths() if p in exported]
    held = store.git.secrets_among(p for p in changed if store.vault.path(p).is_file())
    memories = [
        _exported_file(store.vault, entry.path, entry.id, entry.workspace)
        for entry in chosen
        if entry.path not in held
    ]
    data = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "memstore": __version__,
        "memories": memories,
    }
    return data, held


def held_back_message(path: str, kind: str) -> str:
    """The one line naming a file an export left out for a credential (never its text)."""
    return (
        f"left out {path}: it holds what looks like {kind} and memstore never committed it; "
        "remove the credential from the file (or commit it yourself with git), then export again"
    )


def _exported_file(vault: Vault, path: str, memory_id: str, workspace: str) -> dict[str, str]:
    data = _read_bytes(vault, path)
    item = {
        "path": path,
        "id": memory_id,
        "workspace": workspace,
        "text": data.decode("utf-8", errors="replace"),
    }
    if not _is_utf8(data):
        item["base64"] = base64.b64encode(data).decode("ascii")
    return item


def write_export(path: Path, text: str) -> None:
    """Write an export's JSON text to `path`, readable by its owner only (created 0600)."""
    target = Path(os.path.realpath(path))  # through a symlink: keep the link, update its file
    try:
        if target.exists() and not target.is_file():
            # a pipe or device (/dev/stdout, a FIFO) cannot be replaced: write into it
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
            return
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:64]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:  # mkstemp creates it 0600
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError as err:
        raise InvalidInputError(
            f"cannot write export {path}: {err.strerror}; choose a writable file with -o"
        ) from err


@dataclass(frozen=True)
class ExportedFile:
    """One file of an export, checked: a safe vault-relative path and its exact bytes."""

    path: str
    data: bytes

    def parse(self) -> Memory:
        return parse_memory(self.data.decode("utf-8", errors="replace"), path=self.path)


@dataclass
class RestoreReport:
    """What a restore did, memory by memory."""

    added: int = 0
    merged: int = 0
    unchanged: int = 0
    kept: list[tuple[str, str]] = field(default_factory=list)  # (path, why left as it was)


def read_export(path: Path) -> list[ExportedFile]:
    """Read and check a whole export file, or raise InvalidInputError naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InvalidInputError(
            f"cannot read export {path}: {err}; pass a file 'memstore export' wrote"
        ) from err
    return parse_export(data)


def parse_export(data: Any) -> list[ExportedFile]:
    """Check every entry of an export before anything is written.

    Raises InvalidInputError naming the first entry with an unsafe path or unreadable
    content. Version-1 exports (a "text" field only) are read as before.
    """
    if (
        not isinstance(data, dict)
        or data.get("format") != EXPORT_FORMAT
        or not isinstance(data.get("memories"), list)
    ):
        raise InvalidInputError(
            "not a memstore export (expected the JSON 'memstore export' writes)"
        )
    version = data.get("version", 1)
    if isinstance(version, bool) or version not in range(1, EXPORT_VERSION + 1):
        raise InvalidInputError(
            f"export format version {version!r} is not one this memstore reads "
            f"(1 to {EXPORT_VERSION}); upgrade memstore and restore again"
        )
    files: dict[str, ExportedFile] = {}
    for number, item in enumerate(data["memories"], 1):
        exported = _parse_entry(item, number)
        if exported.path in files:
            raise InvalidInputError(
                f"export entry {number} repeats the path {exported.path!r}; "
                "nothing was restored: remove one of the two entries"
            )
        files[exported.path] = exported
    return list(files.values())


def _parse_entry(item: Any, number: int) -> ExportedFile:
    path = item.get("path") if isinstance(item, dict) else None
    if not isinstance(path, str):
        raise InvalidInputError(f"export entry {number} has no path; nothing was restored")
    problem = path_problem(path)
    if problem:
        raise InvalidInputError(
            f"export entry {number} has an unsafe path {path!r} ({problem}); nothing was restored"
        )
    try:
        encoded = item.get("base64")
        if encoded is not None:
            if not isinstance(encoded, str):
                raise ValueError("its base64 is not a string")
            return ExportedFile(path, base64.b64decode(encoded, validate=True))
        text = item.get("text")
        if not isinstance(text, str):
            raise ValueError("it has no text")
        return ExportedFile(path, text.encode("utf-8"))
    except ValueError as err:  # also binascii.Error and UnicodeEncodeError (lone surrogates)
        raise InvalidInputError(
            f"export entry {number} ({path!r}) has unreadable content: {err}; nothing was restored"
        ) from err


def path_problem(path: str) -> str:
    """Return why `path` is no safe place in a vault to restore a memory to ('' if it is).

    Safe: relative, inside a workspace folder, a `.md` file, no `.`/`..` or hidden name
    (`.git`, `.memstore`) at any depth. A backslash is an ordinary character on POSIX,
    but a name that a backslash would turn into `..` is refused all the same.
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid UTF-8"
    parts = path.split("/")
    if path.startswith("/"):
        return "an absolute path"
    if len(parts) < 2:
        return "not inside a workspace folder"
    if not path.endswith(".md") or "\0" in path:
        return "not a .md file"
    for part in parts:
        if not part:
            return "an empty folder name"
        if any(piece in (".", "..") for piece in part.split("\\")):
            return f"{part!r} names a parent or current folder"
        if part.startswith((".", "\\")):
            return f"{part!r} is hidden; .git, .memstore and dotfiles are never memories"
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            return f"a name longer than {MAX_NAME_BYTES} bytes"
    return ""


def restore(
    store: Store,
    files: list[ExportedFile],
    progress: Progress | None = None,
    *,
    allow_secret: bool = False,
) -> RestoreReport:
    """Merge an export into the vault: all or nothing, one commit, idempotent.

    An entry holding what looks like a credential (a memory its vault kept with `add
    --allow-secret`) refuses the whole restore (SecretError), unless `allow_secret`.

    A memory the vault lacks is written byte for byte at its exported path; one it holds
    (same id) is merged into its file, keeping ids so supersede links survive. Raises
    InvalidInputError, changing nothing, when a target is unsafe in this vault.
    `progress(done, total)` counts files: a third of the total for checking them, a third
    for writing, the last for the commit and the index update (done at once when they are).
    """
    report = RestoreReport()
    n = len(files)
    step = progress or (lambda _done, _total: None)
    with store.transaction() as tx:
        plan = _plan_restore(store, files, report, lambda done: step(done // 3, n))
        if plan:
            try:
                _apply_restore(
                    tx,
                    plan,
                    report,
                    lambda done: step((n + done * n // len(plan)) // 3, n),
                    allow_secret,
                )
            except SecretError as err:  # the commit's scan: every file is put back
                if err.path not in plan:
                    raise
                raise SecretError(
                    f"cannot restore {err.path}: it holds what looks like {err.kind} (memory "
                    "is shared through git), so nothing was restored; restore with --allow-secret "
                    "to keep it as its vault did, or remove that entry from the export",
                    path=err.path,
                    kind=err.kind,
                ) from err
            tx.catch_up()
    step(n, n)
    return report


def _plan_restore(
    store: Store, files: list[ExportedFile], report: RestoreReport, step: Callable[[int], None]
) -> dict[str, bytes]:
    """Return every file restore writes (path → bytes) and count the rest; reads only."""
    placed = {entry.id: entry.path for entry in store.indexer.entries()}
    plan: dict[str, bytes] = {}
    for done, exported in enumerate(files):
        step(done)
        memory = exported.parse()
        target = placed.get(memory.id)
        if target is None:
            _check_target(store.vault, exported.path)
            if os.path.lexists(store.vault.path(exported.path)):
                report.kept.append((exported.path, "the vault holds another memory there"))
                continue
            plan[exported.path] = exported.data
            placed[memory.id] = exported.path
            report.added += 1
            continue
        _check_target(store.vault, target)
        current = plan[target] if target in plan else _read_bytes(store.vault, target)
        if current == exported.data:
            report.unchanged += 1
            continue
        reason = _unmergeable(current, exported)
        if reason:
            report.kept.append((target, reason))
            continue
        mine = parse_memory(current.decode("utf-8"), path=target)
        result = restore_memory(mine, memory)
        if result == mine:
            report.unchanged += 1
            continue
        plan[target] = render_memory(result).encode("utf-8")
        report.merged += 1
    return plan


def _unmergeable(current: bytes, exported: ExportedFile) -> str:
    """Return why the vault's copy and the exported one cannot be merged ('' if they can)."""
    for side, data in (("the vault's copy", current), ("the exported copy", exported.data)):
        if not _is_utf8(data):
            return f"{side} is not valid UTF-8"
        memory = parse_memory(data.decode("utf-8"), path=exported.path)
        if memory.problem:
            return f"{side} cannot be read: {memory.problem}"
        if not memory.has_front_matter:
            return f"{side} has no front matter to merge"
    return ""


def _check_target(vault: Vault, relative: str) -> None:
    """Raise InvalidInputError unless every existing part of the path is a real folder
    (no symlink out of the vault) and the file, if there, is a regular file."""
    path = vault.path(relative)
    for folder in reversed(path.relative_to(vault.root).parents[:-1]):
        mode = _lstat_mode(vault.root / folder)
        if mode is not None and not stat.S_ISDIR(mode):
            raise InvalidInputError(
                f"cannot restore {relative}: {folder.as_posix()} in the vault is not a "
                "folder (a symlink or a file); nothing was restored"
            )
    mode = _lstat_mode(path)
    if mode is not None and not stat.S_ISREG(mode):
        raise InvalidInputError(
            f"cannot restore {relative}: it is a symlink or a folder in the vault; "
            "nothing was restored"
        )


def _lstat_mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as err:
        raise VaultError(f"cannot read {path}: {err.strerror}") from err


def _apply_restore(
    tx: Transaction,
    plan: dict[str, bytes],
    report: RestoreReport,
    step: Callable[[int], None],
    allow_secret: bool,
) -> None:
    """Write the planned files, then commit them once; on any failure undo every write.

    A person's uncommitted edit of a file it merges into is committed first, on its own.
    """
    tx.commit_edits(plan)
    head = tx.git.head()
    undo = _Undo(tx.vault)
    is_committed = False
    try:
        with tx.writing(plan):  # a kill before the commit is undone by the next command
            for done, (path, data) in enumerate(plan.items()):
                step(done)
                undo.make_room(path)
                tx.vault.write_bytes_atomic(path, data)
            step(len(plan))
            crash_point("restore-written")
            message = f"restore: {report.added} added, {report.merged} merged"
            tx.commit(message, add=tuple(plan), allow_secret=allow_secret)
            is_committed = True
    finally:
        # a commit that failed after moving HEAD keeps its files: they are in git
        if not is_committed and tx.git.head() == head:
            undo.apply()


@dataclass
class _Undo:
    """What restore changed on disk so far, to put back if it cannot finish."""

    vault: Vault
    files: list[tuple[str, bytes | None]] = field(default_factory=list)  # path, old bytes
    folders: list[Path] = field(default_factory=list)

    def make_room(self, relative: str) -> None:
        """Create the missing folders of `relative` (0700); remember what was there."""
        path = self.vault.path(relative)
        for folder in reversed(path.relative_to(self.vault.root).parents[:-1]):
            full = self.vault.root / folder
            if os.path.lexists(full):
                continue
            try:
                os.mkdir(full, 0o700)
            except OSError as err:
                raise VaultError(f"cannot create folder {folder}: {err.strerror}") from err
            self.folders.append(full)
        old = _read_bytes(self.vault, relative) if os.path.lexists(path) else None
        self.files.append((relative, old))

    def apply(self) -> None:
        """Put back every file and remove every folder this restore made (best effort)."""
        for relative, old in reversed(self.files):
            with contextlib.suppress(OSError, VaultError):
                if old is None:
                    self.vault.path(relative).unlink(missing_ok=True)
                else:
                    self.vault.write_bytes_atomic(relative, old)
        for folder in reversed(self.folders):
            with contextlib.suppress(OSError):
                folder.rmdir()


def _read_bytes(vault: Vault, relative: str) -> bytes:
    """Read a memory file's bytes, never through a symlink."""
    try:
        fd = os.open(vault.path(relative), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise VaultError(f"cannot read {relative}: {err.strerror}; run 'memstore doctor'") from err


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
