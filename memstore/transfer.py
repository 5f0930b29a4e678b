"""Moving knowledge in and out: import instruction files, export to JSON, restore from it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstore import __version__
from memstore.codec import parse_memory, render_memory
from memstore.errors import InvalidInputError
from memstore.git import Trailers
from memstore.merge import restore_memory
from memstore.model import check_workspace
from memstore.store import Store

_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_FRONT = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)  # .mdc / Kiro steering front matter
MIN_CHARS = 12  # shorter bullets ("Testing", "TODO") are headings, not knowledge


@dataclass(frozen=True)
class Piece:
    """One memory an instruction file yields."""

    text: str
    keywords: tuple[str, ...]


def split_instructions(text: str, *, whole_file: bool = False) -> list[Piece]:
    """Split CLAUDE.md / AGENTS.md / .cursor rules / Kiro steering text into memories.

    Each top-level bullet (with its continuation lines) becomes one memory; so does each
    paragraph outside a list. The headings above a piece become its keywords.
    """
    text = _FRONT.sub("", text.replace("\r\n", "\n"), count=1)
    if whole_file:
        return [Piece(text.strip(), ())] if text.strip() else []
    pieces: list[Piece] = []
    headings: list[str] = []
    current: list[str] = []

    def flush() -> None:
        body = " ".join(" ".join(current).split())
        if len(body) >= MIN_CHARS:
            words = [w.lower() for h in headings[-2:] for w in re.findall(r"[A-Za-z][\w.-]+", h)][
                :4
            ]
            pieces.append(Piece(body, tuple(dict.fromkeys(words))))
        current.clear()

    for line in text.split("\n"):
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            headings[:] = [*headings[: level - 1], heading.group(2)]
        elif bullet and not bullet.group(1):
            flush()
            current.append(bullet.group(2))
        elif not line.strip():
            flush()
        else:
            current.append(line.strip())
    flush()
    return pieces


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    unchanged: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)


def import_files(
    store: Store, paths: list[Path], *, workspace: str, whole_file: bool, dry_run: bool
) -> ImportReport:
    """Add each piece of each file as kind `imported`; the source files are only read."""
    check_workspace(workspace, for_add=True)
    report = ImportReport()
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise InvalidInputError(
                f"cannot read {path}: {err}; pass a text file such as CLAUDE.md"
            ) from err
        for piece in split_instructions(text, whole_file=whole_file):
            if dry_run:
                report.created.append(piece.text)
                continue
            try:
                result = store.add(
                    piece.text,
                    workspace=workspace,
                    kind="imported",
                    keywords=piece.keywords,
                    allowed_kinds=("imported",),
                    merge_duplicate=False,
                )
            except InvalidInputError as err:
                report.refused.append((piece.text[:60], str(err)))
                continue
            if result.status == "added":
                report.created.append(result.id)
            else:
                report.unchanged += 1
    return report


def export(store: Store, workspace: str | None = None) -> dict[str, Any]:
    """Every memory with its path, id, workspace and file text."""
    store.catch_up()
    memories = []
    for entry in store.indexer.entries():
        if workspace is not None and entry.workspace != workspace:
            continue
        text = store.vault.path(entry.path).read_text(encoding="utf-8", errors="replace")
        memories.append(
            {"path": entry.path, "id": entry.id, "workspace": entry.workspace, "text": text}
        )
    return {
        "format": "memstore-export",
        "version": 1,
        "memstore": __version__,
        "memories": memories,
    }


def restore(store: Store, data: dict[str, Any]) -> tuple[int, int, int]:
    """Merge an export into the vault (ids kept); returns (added, merged, unchanged). Idempotent."""
    if (
        not isinstance(data, dict)
        or data.get("format") != "memstore-export"
        or not isinstance(data.get("memories"), list)
    ):
        raise InvalidInputError(
            "not a memstore export (expected the JSON 'memstore export' writes)"
        )
    added = merged = unchanged = 0
    store.catch_up()
    with store.vault.lock(store.settings.lock_timeout):
        existing = {e.id: e for e in store.indexer.entries()}
        changed: list[str] = []
        for item in data["memories"]:
            path = str(item.get("path", ""))
            if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*/[^/\0]+\.md", path) or ".." in path:
                raise InvalidInputError(
                    f"export entry has an unsafe path {path!r}; nothing was restored after it"
                )
            exported = parse_memory(str(item.get("text", "")), path=path)
            current_entry = existing.get(exported.id)
            target = current_entry.path if current_entry else path
            if current_entry is None:
                store.vault.write_atomic(target, str(item["text"]))
                added += 1
                changed.append(target)
                continue
            current = store.vault.read(target)
            result = restore_memory(current, exported) if current.has_front_matter else current
            if result == current:
                unchanged += 1
                continue
            store.vault.write_atomic(target, render_memory(result))
            merged += 1
            changed.append(target)
        if changed:
            trailers = Trailers(store.settings.source, store.settings.session, store.settings.host)
            store.git.commit(
                f"restore: {added} added, {merged} merged", trailers, add=tuple(changed)
            )
        store.catch_up_locked()
    return added, merged, unchanged


def read_export(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise InvalidInputError(f"cannot read export {path}: {err}") from err
    return data if isinstance(data, dict) else {}
