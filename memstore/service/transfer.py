"""Moving knowledge in and out: import instruction files, export to JSON, restore from it."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstore import __version__
from memstore.catalog.indexer import Progress
from memstore.core.codec import content_hash, parse_memory, render_memory
from memstore.core.errors import InvalidInputError, SecretError, VaultError
from memstore.core.faults import crash_point
from memstore.core.merge import restore_memory
from memstore.core.model import Memory, check_workspace
from memstore.core.secrets import find_secret_in_fields
from memstore.service.store import Store, check_keywords, check_source, check_text
from memstore.vault.files import Vault
from memstore.vault.git import Trailers

_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_FRONT = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)  # .mdc / Kiro steering front matter
# CommonMark fences: 3+ backticks (whose info string has no backtick) or tildes
_FENCE_OPEN = re.compile(r"^(\s*)(`{3,}(?=[^`]*$)|~{3,})(.*)$")
_FENCE_CLOSE = re.compile(r"^\s*(`{3,}|~{3,})\s*$")
MIN_CHARS = 12  # shorter bullets ("Testing", "TODO") are headings, not knowledge


@dataclass(frozen=True)
class Piece:
    """One memory an instruction file yields."""

    text: str
    keywords: tuple[str, ...]


def split_instructions(text: str, *, whole_file: bool = False) -> list[Piece]:
    """Split CLAUDE.md / AGENTS.md / .cursor rules / Kiro steering text into memories.

    Each top-level bullet (with its continuation lines) becomes one memory; so does each
    paragraph outside a list. A fenced code block is kept verbatim in the piece it follows.
    The headings above a piece become its keywords.
    """
    text = _FRONT.sub("", text.replace("\r\n", "\n"), count=1)
    if whole_file:
        return [Piece(text.strip(), ())] if text.strip() else []
    pieces: list[Piece] = []
    headings: list[str] = []
    parts: list[str] = []  # the current piece: prose lines joined into one, fenced blocks
    prose: list[str] = []
    is_open = False  # a plain line continues the current piece (no blank line since)

    def end_prose() -> None:
        if prose:
            parts.append(" ".join(" ".join(prose).split()))
        prose.clear()

    def flush() -> None:
        end_prose()
        body = "\n".join(parts)
        if len(body) >= MIN_CHARS:
            words = [w.lower() for h in headings[-2:] for w in re.findall(r"[A-Za-z][\w.-]+", h)][
                :4
            ]
            pieces.append(Piece(body, tuple(dict.fromkeys(words))))
        parts.clear()

    lines = iter(text.split("\n"))
    for line in lines:
        fence = _FENCE_OPEN.match(line)
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        if fence:
            # even after a blank line: the block shows how to do what the piece says
            end_prose()
            parts.append(_read_fenced_block(fence, lines))
            is_open = True
        elif heading:
            flush()
            level = len(heading.group(1))
            headings[:] = [*headings[: level - 1], heading.group(2)]
        elif bullet and not bullet.group(1):
            flush()
            prose.append(bullet.group(2))
            is_open = True
        elif not line.strip():
            is_open = False
        else:
            if not is_open:
                flush()
            prose.append(line.strip())
            is_open = True
    flush()
    return pieces


def _read_fenced_block(opener: re.Match[str], lines: Iterator[str]) -> str:
    """Return a fenced block verbatim (less the opening fence's indent), reading `lines`
    through its closing fence; an unclosed fence runs to the end, as in CommonMark."""
    indent, fence = len(opener.group(1)), opener.group(2)
    block = [opener.group(0)[indent:]]
    for line in lines:
        block.append(line[min(indent, len(line) - len(line.lstrip())) :])
        closer = _FENCE_CLOSE.match(line)
        if closer and closer.group(1)[0] == fence[0] and len(closer.group(1)) >= len(fence):
            break
    return "\n".join(block)


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)  # ids (texts on a dry run)
    unchanged: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)


def import_files(
    store: Store,
    paths: list[Path],
    *,
    workspace: str,
    whole_file: bool,
    dry_run: bool,
    progress: Progress | None = None,
) -> ImportReport:
    """Add each new piece of each file as kind `imported`, all in one commit.

    The source files are only read. A piece the workspace already holds is counted as
    unchanged; one that looks like a credential is refused and reported.
    `progress(done, total)` counts pieces: half the total for reading and writing them,
    the other half for the commit and the index update (done at once when they are).
    """
    check_workspace(workspace, for_add=True)
    pieces = [
        (path.name, piece)
        for path in paths
        for piece in split_instructions(read_instructions(path), whole_file=whole_file)
    ]
    report = ImportReport()
    if dry_run:
        store.catch_up()
        report.created = [body for _, body, _ in _new_pieces(store, pieces, workspace, report)]
        return report
    source = check_source(store.settings.source)
    step = progress or (lambda _done, _total: None)
    with store.vault.lock(store.settings.lock_timeout):
        if not store.vault.is_watched():
            store.catch_up_locked(workspace)
        origins: dict[str, str] = {}  # each path written → the file its piece came from
        written: dict[str, bytes | None] = {}
        try:
            halves = _new_pieces(store, pieces, workspace, report, lambda d, t: step(d // 2, t))
            for name, body, keywords in halves:
                path, memory = _plan_imported(store, body, keywords, workspace, source, report)
                written[path] = render_memory(memory).encode("utf-8")
                store.note_writing(written)  # a kill before the commit is undone
                store.vault.write_bytes_atomic(path, written[path] or b"")
                origins[path] = name
                report.created.append(memory.id)
        finally:
            # one commit for the whole import (and for what a failure left written), so
            # one `git revert` undoes it
            if origins:
                crash_point("import-written")
                try:
                    _commit_import(store, origins, workspace, source)
                except (VaultError, SecretError):  # refused: no file left written, uncommitted
                    for path in origins:
                        store.vault.path(path).unlink(missing_ok=True)
                    raise
            store.note_writing({})
        store.catch_up_locked(workspace)  # one index update, not one per memory
    step(len(pieces), len(pieces))
    return report


def _plan_imported(
    store: Store,
    body: str,
    keywords: tuple[str, ...],
    workspace: str,
    source: str,
    report: ImportReport,
) -> tuple[str, Memory]:
    """Return the path and memory for one new piece; its id is free of this import's too."""
    path, memory = store.plan_memory(
        body, workspace=workspace, kind="imported", keywords=keywords, source=source
    )
    if any(other.startswith(memory.id) for other in report.created):
        # two texts share an id prefix (rare): index this import's files so far, plan again
        store.catch_up_locked(workspace)
        path, memory = store.plan_memory(
            body, workspace=workspace, kind="imported", keywords=keywords, source=source
        )
    return path, memory


def _commit_import(store: Store, origins: dict[str, str], workspace: str, source: str) -> str:
    n, names = len(origins), list(dict.fromkeys(origins.values()))
    files = ", ".join(names) if len(names) <= 3 else f"{len(names)} files"
    return store.git.commit(
        f"import({workspace}): {n} memor{'y' if n == 1 else 'ies'} from {files}",
        Trailers(source, store.settings.session, store.settings.host),
        add=tuple(origins),
    )


def read_instructions(path: Path) -> str:
    """Read an instruction file, or raise InvalidInputError naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(
            f"cannot read {path}: {err}; pass a text file such as CLAUDE.md"
        ) from err


def _new_pieces(
    store: Store,
    pieces: list[tuple[str, Piece]],
    workspace: str,
    report: ImportReport,
    progress: Progress | None = None,
) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """Yield (file name, body, keywords) for each piece the workspace does not hold yet;
    count the pieces it holds and report the ones refused."""
    seen: set[str] = set()
    for done, (name, piece) in enumerate(pieces):
        if progress is not None:
            progress(done, len(pieces))
        try:
            body = check_text(piece.text)
            keywords = check_keywords(piece.keywords)
            found = find_secret_in_fields({"body": body, "keywords": piece.keywords})
            if found:
                raise InvalidInputError(
                    f"its {found[0]} contains what looks like {found[1]}; memory is shared "
                    "through git, "
                    "so remove it from the file (or store it with 'memstore add "
                    "--allow-secret')"
                )
        except InvalidInputError as err:
            report.refused.append((piece.text[:60], str(err)))
            continue
        digest = content_hash(body)
        if digest in seen or store.indexer.by_hash(workspace, digest):
            report.unchanged += 1
            continue
        seen.add(digest)
        yield name, body, keywords
    if progress is not None:
        progress(len(pieces), len(pieces))


# --- export and restore -------------------------------------------------------------

EXPORT_FORMAT = "memstore-export"
# version 2 added "base64": the exact bytes of a file that is not valid UTF-8 ("text" then
# holds a readable, lossy copy, which is all a version-1 reader uses)
EXPORT_VERSION = 2
MAX_NAME_BYTES = 255  # the longest file or folder name ext4, APFS and most others take


def export(store: Store, workspace: str | None = None) -> dict[str, Any]:
    """Return every memory with its path, id, workspace and the file's exact content."""
    store.catch_up()
    memories = [
        _exported_file(store.vault, entry.path, entry.id, entry.workspace)
        for entry in store.indexer.entries()
        if workspace is None or entry.workspace == workspace
    ]
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "memstore": __version__,
        "memories": memories,
    }


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
    store: Store, files: list[ExportedFile], progress: Progress | None = None
) -> RestoreReport:
    """Merge an export into the vault: all or nothing, one commit, idempotent.

    A memory the vault lacks is written byte for byte at its exported path; one it holds
    (same id) is merged into its file, keeping ids so supersede links survive. Raises
    InvalidInputError, changing nothing, when a target is unsafe in this vault.
    `progress(done, total)` counts files: a third of the total for checking them, a third
    for writing, the last for the commit and the index update (done at once when they are).
    """
    report = RestoreReport()
    n = len(files)
    step = progress or (lambda _done, _total: None)
    with store.vault.lock(store.settings.lock_timeout):
        store.catch_up_locked()
        plan = _plan_restore(store, files, report, lambda done: step(done // 3, n))
        if plan:
            _apply_restore(
                store, plan, report, lambda done: step((n + done * n // len(plan)) // 3, n)
            )
            store.catch_up_locked()
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
    store: Store, plan: dict[str, bytes], report: RestoreReport, step: Callable[[int], None]
) -> None:
    """Write the planned files, then commit them once; on any failure undo every write.

    A person's uncommitted edit of a file it merges into is committed first, on its own.
    """
    store.commit_edits(plan)
    head = store.git.head()
    undo = _Undo(store.vault)
    is_committed = False
    try:
        with store.writing(plan):  # a kill before the commit is undone by the next command
            for done, (path, data) in enumerate(plan.items()):
                step(done)
                undo.make_room(path)
                store.vault.write_bytes_atomic(path, data)
            step(len(plan))
            crash_point("restore-written")
            message = f"restore: {report.added} added, {report.merged} merged"
            store.git.commit(message, store.trailers, add=tuple(plan))
            is_committed = True
    finally:
        # a commit that failed after moving HEAD keeps its files: they are in git
        if not is_committed and store.git.head() == head:
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
