"""Importing instruction files (CLAUDE.md, .cursorrules…): one memory per piece, one commit."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memstore.catalog.indexer import Progress
from memstore.core.codec import content_hash, render_memory
from memstore.core.errors import InvalidInputError, SecretError, VaultError
from memstore.core.faults import crash_point
from memstore.core.model import Memory, check_workspace
from memstore.core.secret_mask import mask_secrets
from memstore.core.secrets import find_secret_in_fields
from memstore.service.checks import check_keywords, check_source, check_text
from memstore.service.store import Store
from memstore.service.transaction import Transaction
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


def split_instructions(
    text: str, *, whole_file: bool = False, short: list[str] | None = None
) -> list[Piece]:
    """Split CLAUDE.md / AGENTS.md / .cursor rules / Kiro steering text into memories.

    Each top-level bullet (with its continuation lines) becomes one memory; so does each
    paragraph outside a list. A fenced code block is kept verbatim in the piece it follows.
    The headings above a piece become its keywords. A piece under MIN_CHARS is no memory;
    `short` collects such pieces, so an import can say what it left out.
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
        if body.strip() and len(body) < MIN_CHARS and short is not None:
            short.append(body)
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
    short: list[str] = field(default_factory=list)  # pieces under MIN_CHARS, left out


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
    report = ImportReport()
    pieces = [
        (path.name, piece)
        for path in paths
        for piece in split_instructions(
            read_instructions(path), whole_file=whole_file, short=report.short
        )
    ]
    if dry_run:
        store.catch_up()
        report.created = [body for _, body, _ in _new_pieces(store, pieces, workspace, report)]
        return report
    source = check_source(store.settings.source)
    step = progress or (lambda _done, _total: None)
    watched = store.vault.is_watched()
    with store.transaction(catch_up=not watched, workspace=workspace) as tx:
        origins: dict[str, str] = {}  # each path written → the file its piece came from
        written: dict[str, bytes | None] = {}
        try:
            halves = _new_pieces(store, pieces, workspace, report, lambda d, t: step(d // 2, t))
            for name, body, keywords in halves:
                path, memory = _plan_imported(tx, body, keywords, workspace, source, report)
                written[path] = render_memory(memory).encode("utf-8")
                tx.note_writing(written)  # a kill before the commit is undone
                store.vault.write_bytes_atomic(path, written[path] or b"")
                origins[path] = name
                report.created.append(memory.id)
        finally:
            # one commit for the whole import (and for what a failure left written), so
            # one `git revert` undoes it
            if origins:
                crash_point("import-written")
                try:
                    _commit_import(tx, origins, workspace, source)
                except (VaultError, SecretError):  # refused: no file left written, uncommitted
                    for path in origins:
                        store.vault.path(path).unlink(missing_ok=True)
                    raise
            tx.note_writing({})
        tx.catch_up(workspace)  # one index update, not one per memory
    step(len(pieces), len(pieces))
    return report


def _plan_imported(
    tx: Transaction,
    body: str,
    keywords: tuple[str, ...],
    workspace: str,
    source: str,
    report: ImportReport,
) -> tuple[str, Memory]:
    """Return the path and memory for one new piece; its id is free of this import's too."""
    store = tx.store
    path, memory = store.plan_memory(
        body, workspace=workspace, kind="imported", keywords=keywords, source=source
    )
    if any(other.startswith(memory.id) for other in report.created):
        # two texts share an id prefix (rare): index this import's files so far, plan again
        tx.catch_up(workspace)
        path, memory = store.plan_memory(
            body, workspace=workspace, kind="imported", keywords=keywords, source=source
        )
    return path, memory


def _commit_import(tx: Transaction, origins: dict[str, str], workspace: str, source: str) -> str:
    n, names = len(origins), list(dict.fromkeys(origins.values()))
    files = ", ".join(names) if len(names) <= 3 else f"{len(names)} files"
    return tx.commit(
        f"import({workspace}): {n} memor{'y' if n == 1 else 'ies'} from {files}",
        trailers=Trailers(source, tx.caller.session, tx.caller.host),
        add=tuple(origins),
    )


def read_instructions(path: Path) -> str:
    """Read an instruction file, or raise InvalidInputError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(
            f"cannot read {path}: {err}; pass a text file such as CLAUDE.md"
        ) from err
    if _EXPORT_MARK.match(text):  # imported, the whole export became one memory (trial14)
        raise InvalidInputError(
            f"{path} is a memstore export, not an instruction file; bring its memories "
            f"back with: memstore restore {path}"
        )
    return text


_EXPORT_MARK = re.compile(r'\s*\{\s*"format"\s*:\s*"memstore-export"')


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
            # the report is printed: it names the piece, never a credential in it
            report.refused.append((mask_secrets(piece.text)[:60], str(err)))
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
