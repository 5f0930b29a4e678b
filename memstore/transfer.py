"""Moving knowledge in and out: import instruction files, export to JSON, restore from it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstore import __version__
from memstore.codec import content_hash, parse_memory, render_memory
from memstore.errors import InvalidInputError
from memstore.git import Trailers
from memstore.merge import restore_memory
from memstore.model import Memory, check_workspace
from memstore.secrets import find_secrets
from memstore.store import Store, check_keywords, check_source, check_text

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
    store: Store, paths: list[Path], *, workspace: str, whole_file: bool, dry_run: bool
) -> ImportReport:
    """Add each new piece of each file as kind `imported`, all in one commit.

    The source files are only read. A piece the workspace already holds is counted as
    unchanged; one that looks like a credential is refused and reported.
    """
    check_workspace(workspace, for_add=True)
    sources = [(path.name, read_instructions(path)) for path in paths]
    report = ImportReport()
    if dry_run:
        store.catch_up()
        report.created = [
            body for _, body, _ in _new_pieces(store, sources, workspace, whole_file, report)
        ]
        return report
    source = check_source(store.settings.source)
    with store.vault.lock(store.settings.lock_timeout):
        if not store.vault.is_watched():
            store.catch_up_locked(workspace)
        origins: dict[str, str] = {}  # each path written → the file its piece came from
        try:
            for name, body, keywords in _new_pieces(store, sources, workspace, whole_file, report):
                path, memory = _plan_imported(store, body, keywords, workspace, source, report)
                store.vault.write_atomic(path, render_memory(memory))
                origins[path] = name
                report.created.append(memory.id)
        finally:
            # one commit for the whole import (and for what a failure left written), so
            # one `git revert` undoes it
            if origins:
                _commit_import(store, origins, workspace, source)
        store.catch_up_locked(workspace)  # one index update, not one per memory
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
    sources: list[tuple[str, str]],
    workspace: str,
    whole_file: bool,
    report: ImportReport,
) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """Yield (file name, body, keywords) for each piece the workspace does not hold yet;
    count the pieces it holds and report the ones refused."""
    seen: set[str] = set()
    for name, text in sources:
        for piece in split_instructions(text, whole_file=whole_file):
            try:
                body = check_text(piece.text)
                keywords = check_keywords(piece.keywords)
                found = find_secrets(body)
                if found:
                    raise InvalidInputError(
                        f"contains what looks like {found[0]}; memory is shared through git, "
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
