"""Anchor a citation to today's code and check whether the code it cites has changed since.

A citation names a file, a symbol in it (as the code chunker names definitions) or a line
range. Anchoring records the file's git blob id and a digest of the cited text; checking
compares them with the working tree: a symbol is found again wherever it moved, a line
range is searched for when its lines moved, so only a change of the cited code itself
marks a citation changed. Files are read once per (mtime, size); no git subprocess.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from stat import S_ISREG
from typing import TYPE_CHECKING, Literal

from memstore.core.citations import Cite, blob_id, lines_digest, text_digest
from memstore.core.errors import InvalidInputError

_RANGE = re.compile(r"([1-9][0-9]{0,8})(?:-([1-9][0-9]{0,8}))?")
_SYMBOL = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")

if TYPE_CHECKING:
    from memstore.vault.path_history import PathHistory

CiteStateName = Literal["fresh", "changed", "gone"]


@dataclass(frozen=True)
class CiteState:
    """What became of a citation: fresh, changed or gone, and why in a few words."""

    state: CiteStateName
    reason: str = ""


def parse_spec(spec: str) -> tuple[str, str, tuple[int, int] | None]:
    """Split `PATH`, `PATH:12-40` or `PATH:SYMBOL` into (path, symbol, lines)."""
    spec = spec.strip()
    head, colon, tail = spec.rpartition(":")
    path, symbol, lines = spec, "", None
    if colon:
        path = head
        ranged = _RANGE.fullmatch(tail)
        if ranged:
            start = int(ranged.group(1))
            end = int(ranged.group(2) or start)
            if end < start:
                raise InvalidInputError(f"cite {spec!r}: the range ends before it starts")
            lines = (start, end)
        elif _SYMBOL.fullmatch(tail):
            symbol = tail
        else:
            raise InvalidInputError(
                f"cite {spec!r}: after ':' give lines (12-40) or a function or class name"
            )
    if not path:
        raise InvalidInputError("cite needs a path, e.g. --cite src/upload.py:handle_upload")
    return path, symbol, lines


def relative_spec(root: Path, cwd: Path, spec: str) -> str:
    """Return `spec` with its path (relative to `cwd`, or absolute) made relative to `root`."""
    path, symbol, lines = parse_spec(spec)
    full = Path(os.path.normpath(cwd / path))
    try:
        inside = full.relative_to(root)
    except ValueError:
        raise InvalidInputError(
            f"cannot cite {path}: it is outside the repository {root}"
        ) from None
    suffix = f":{symbol}" if symbol else f":{lines[0]}-{lines[1]}" if lines else ""
    return inside.as_posix() + suffix


@lru_cache(maxsize=16)
def definitions(path: str, text: str) -> tuple[tuple[str, int, int], ...]:
    """Return a file's named definitions (chunking.definitions), the last few files' kept:
    an add that finds a symbol and then anchors it parses the file once."""
    from memstore.catalog.chunking import definitions as parse  # not for a whole file's cite

    return tuple(parse(path, text))


def locate(path: str, text: str, symbol: str) -> tuple[int, int] | None:
    """Return the lines of the definition `symbol` (Class.method for a nested one), or None."""
    for name, start, end in definitions(path, text):
        if name == symbol:
            return (start, end)
    return None


def anchor(root: Path, repo: str, spec: str, now: str) -> Cite:
    """Cite `spec` (its path relative to `root`) as the working tree holds it now."""
    path, symbol, lines = parse_spec(spec)
    posix = PurePosixPath(path.replace(os.sep, "/"))
    if posix.is_absolute() or ".." in posix.parts or str(posix) in ("", "."):
        raise InvalidInputError(f"cannot cite {path}: give a path inside the repository")
    path = posix.as_posix()
    try:
        data = (root / path).read_bytes()
    except IsADirectoryError:
        raise InvalidInputError(
            f"cannot cite {path}: it is a folder; cite a file in it (or a function there)"
        ) from None
    except (FileNotFoundError, NotADirectoryError):
        raise InvalidInputError(f"cannot cite {path}: no such file in {root}") from None
    except OSError as err:  # unreadable: a permission, a device
        raise InvalidInputError(f"cannot cite {path}: {err.strerror or err}") from None
    cite = Cite(repo=repo, path=path, blob=blob_id(data), at=now)
    text = data.decode("utf-8", "replace")
    if symbol:
        qualified = _qualified(path, text, symbol)
        if qualified is None:
            several = sorted({n for n, _, _ in definitions(path, text) if n.endswith("." + symbol)})
            raise InvalidInputError(
                f"cannot cite {path}:{symbol}: {symbol} is defined {len(several)} times; "
                f"name one: {', '.join(several)}"
                if several
                else f"cannot cite {path}:{symbol}: no function or class {symbol} in {path}"
            )
        name, (start, end) = qualified
        return replace(cite, symbol=name, digest=text_digest(_slice(text, start, end)))
    if lines:
        count = len(_split(text))
        if lines[1] > count:
            raise InvalidInputError(
                f"cannot cite {path}:{lines[0]}-{lines[1]}: {path} has {count} lines"
            )
        return replace(cite, lines=lines, digest=text_digest(_slice(text, *lines)))
    return cite


def _qualified(path: str, text: str, symbol: str) -> tuple[str, tuple[int, int]] | None:
    """Find `symbol` by its qualified name, else as the one definition with that last name."""
    found = definitions(path, text)
    for name, start, end in found:
        if name == symbol:
            return name, (start, end)
    tails = [(name, (start, end)) for name, start, end in found if name.endswith("." + symbol)]
    return tails[0] if len({name for name, _ in tails}) == 1 else None


def _split(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _slice(text: str, start: int, end: int) -> str:
    return "\n".join(_split(text)[start - 1 : end])


class _File:
    """One file's content as read at one (mtime, size), with what checks derive from it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.text = data.decode("utf-8", "replace")
        self._blob = ""
        self._stripped: list[str] | None = None

    @property
    def blob(self) -> str:
        if not self._blob:
            self._blob = blob_id(self.data)
        return self._blob

    @property
    def stripped(self) -> list[str]:
        if self._stripped is None:
            self._stripped = [line.rstrip() for line in _split(self.text)]
        return self._stripped


Stamp = tuple[int, int]  # (mtime_ns, size)


class CiteChecker:
    """Check citations against one repository's working tree, caching by file (mtime, size)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, tuple[Stamp, _File]] = {}
        self._states: dict[Cite, tuple[Stamp | None, CiteState]] = {}
        self._history: PathHistory | None = None

    def check(self, cite: Cite) -> CiteState:
        """Say whether the code `cite` names is as it was anchored: fresh, changed or gone."""
        stamp = self._stamp(cite.path)
        cached = self._states.get(cite)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        state = self._judge(cite, stamp)
        self._states[cite] = (stamp, state)
        return state

    def explain(self, cite: Cite, now: float | None = None) -> str:
        """Say what became of a stale citation and in which commit: '' for a fresh one."""
        state = self.check(cite)
        if state.state == "fresh":
            return ""
        change = self._paths().last_change(cite.path)
        anchored = _epoch(cite.at)
        stamp = self._stamp(cite.path)
        file = None if stamp is None else self._read(cite.path, stamp)
        if (
            change is None
            or change.blob == cite.blob  # the commit holds the version anchored
            or (anchored is not None and change.time < anchored)
            # the working tree is not what HEAD holds (a deleted file: no blob): the change
            # is there, whatever a later commit did to the rest of the file
            or change.blob != (file.blob if file is not None else "")
        ):
            return f"{state.reason} (not committed yet)"
        days = int(((time.time() if now is None else now) - change.time) // 86400)
        ago = "today" if days <= 0 else "1 day ago" if days == 1 else f"{days} days ago"
        return f"{state.reason} in {change.commit[:7]}, {ago}"

    def _stamp(self, path: str) -> Stamp | None:
        try:
            stat = os.stat(self.root / path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not S_ISREG(stat.st_mode):
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def _read(self, path: str, stamp: Stamp) -> _File | None:
        cached = self._files.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            file = _File((self.root / path).read_bytes())
        except OSError:
            return None
        self._files[path] = (stamp, file)
        return file

    def _judge(self, cite: Cite, stamp: Stamp | None) -> CiteState:
        file = None if stamp is None else self._read(cite.path, stamp)
        if file is None:
            return CiteState("gone", f"{cite.path} deleted")
        if cite.blob and file.blob == cite.blob:
            return CiteState("fresh")  # the very file anchored: nothing in it moved
        if cite.symbol:
            return self._judge_symbol(cite, file)
        if cite.lines:
            return self._judge_lines(cite, cite.lines, file)
        if not cite.blob:
            return CiteState("fresh", "not anchored")
        return CiteState("changed", f"{cite.path} changed")

    def _judge_symbol(self, cite: Cite, file: _File) -> CiteState:
        span = locate(cite.path, file.text, cite.symbol)
        if span is None and not _can_parse(cite.path):
            # no grammar here to find definitions by: the file changed, the symbol may not have
            return CiteState("changed", f"{cite.path} changed (no parser here for its language)")
        if span is None:
            return CiteState("gone", f"{cite.symbol} no longer in {cite.path}")
        if not cite.digest or text_digest(_slice(file.text, *span)) == cite.digest:
            return CiteState("fresh")
        return CiteState("changed", f"{cite.label} changed")

    def _judge_lines(self, cite: Cite, lines: tuple[int, int], file: _File) -> CiteState:
        found = _find_lines(file.stripped, lines, cite.digest)
        if found == lines:
            return CiteState("fresh")
        if found is not None:
            return CiteState("fresh", f"moved to lines {found[0]}-{found[1]}")
        return CiteState("changed", f"{cite.label} changed")

    def holds_version(self, cite: Cite) -> bool:
        """Whether this repository's objects hold the version `cite` was anchored to: proof
        that it is the cited repository (another with the same folder name, or an old branch
        of it, does not), before a citation gone from its files is dropped."""
        return bool(cite.blob) and self._paths().holds(cite.blob)

    def _paths(self) -> PathHistory:
        if self._history is None:
            from memstore.vault.path_history import PathHistory  # pygit2: only to explain

            self._history = PathHistory(self.root)
        return self._history

    def reanchor(self, cite: Cite, now: str) -> Cite | None:
        """Anchor `cite` to today's working tree (a moved line range follows its lines);
        None when what it cites is gone."""
        if self.check(cite).state == "gone":
            return None
        spec = cite.label
        if cite.lines:
            stamp = self._stamp(cite.path)
            file = None if stamp is None else self._read(cite.path, stamp)
            found = None if file is None else _find_lines(file.stripped, cite.lines, cite.digest)
            if found is not None:
                spec = f"{cite.path}:{found[0]}-{found[1]}"
        try:
            return anchor(self.root, cite.repo, spec, now)
        except InvalidInputError:  # a range now past the end of its file
            return None


def _find_lines(stripped: list[str], lines: tuple[int, int], digest: str) -> tuple[int, int] | None:
    """Return where lines with `digest` are: `lines` themselves, else the nearest window of
    the same length holding them (the code moved), else None."""
    if not digest or _window_digest(stripped, *lines) == digest:
        return lines if lines[1] <= len(stripped) else None
    length = lines[1] - lines[0] + 1
    starts = range(1, len(stripped) - length + 2)
    for start in sorted(starts, key=lambda s: abs(s - lines[0])):
        if _window_digest(stripped, start, start + length - 1) == digest:
            return (start, start + length - 1)
    return None


def _can_parse(path: str) -> bool:
    from memstore.catalog.chunking import language_of, tree_sitter_languages

    return language_of(path) in tree_sitter_languages()


def _window_digest(stripped: list[str], start: int, end: int) -> str:
    window = stripped[start - 1 : end]
    first, last = 0, len(window)
    while first < last and not window[first]:
        first += 1
    while last > first and not window[last - 1]:
        last -= 1
    return lines_digest(window[first:last])


def _epoch(stamp: str) -> float | None:
    from datetime import UTC, datetime

    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
