"""What a memory cites in code: the Cite value, its front matter YAML, digests and merges.

Pure: a citation names a repository (the workspace name its checkout gives), a path in it
and optionally a symbol or a line range, anchored to the file's git blob id and a digest of
the cited text at the time it was written. The catalog checks anchors against a working
tree (memstore.catalog.citing); here they are only read, rendered, digested and merged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from memstore.core.errors import InvalidInputError
from memstore.core.yaml_values import render_scalar

CITES_KEY = "cites"
_FIELDS = ("repo", "path", "symbol", "lines", "blob", "digest", "at")


@dataclass(frozen=True)
class Cite:
    """One citation: a file, a symbol in it, or a line range of it, and its anchor."""

    repo: str
    path: str  # POSIX, relative to the repository root
    symbol: str = ""  # as the code chunker names it: handle_upload, Uploader.handle
    lines: tuple[int, int] | None = None  # 1-based, inclusive
    blob: str = ""  # git blob id of the file when anchored
    digest: str = ""  # text_digest of the cited symbol or lines ("" for a whole file)
    at: str = ""  # UTC time anchored, 2026-12-06T10:00:00Z

    @property
    def key(self) -> tuple[str, str, str | tuple[int, int]]:
        """What a citation is, apart from its anchor: the key merges fold on."""
        return (self.repo, self.path, self.symbol or self.lines or "")

    @property
    def label(self) -> str:
        """The citation as typed: src/upload.py, src/upload.py:handle_upload, src/a.py:3-9."""
        if self.symbol:
            return f"{self.path}:{self.symbol}"
        if self.lines:
            return f"{self.path}:{self.lines[0]}-{self.lines[1]}"
        return self.path


def text_digest(text: str) -> str:
    """Digest cited text: lines without trailing whitespace, no blank lines at either end."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines_digest(lines)


def lines_digest(stripped: Sequence[str]) -> str:
    """Digest lines already stripped of trailing whitespace and of blank ends."""
    data = "\n".join(stripped).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:16]


def blob_id(data: bytes) -> str:
    """Return the git blob id of `data` (what `git hash-object` and pygit2.hash give)."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


# --- front matter ------------------------------------------------------------------------


def parse_cites(value: object) -> tuple[Cite, ...]:
    """Read the `cites:` front matter value: a list of mappings; raises InvalidInputError."""
    if value is None or value == []:
        return ()
    if not isinstance(value, list):
        raise InvalidInputError("cites is not a list of {repo: ..., path: ...} mappings")
    cites: dict[tuple[object, ...], Cite] = {}
    for number, item in enumerate(value, 1):
        cite = _parse_cite(item, number)
        cites[cite.key] = cite  # a key stated twice: the later entry stands
    return tuple(cites.values())


def _parse_cite(item: object, number: int) -> Cite:
    if not isinstance(item, dict):
        raise InvalidInputError(f"cites entry {number} is not a mapping like {{repo: r, path: p}}")
    unknown = sorted(str(key) for key in item if key not in _FIELDS)
    if unknown:
        raise InvalidInputError(f"cites entry {number} has unknown key {unknown[0]!r}")
    fields = {key: _text(item.get(key)) for key in ("repo", "path", "symbol", "blob", "digest")}
    if not fields["repo"] or not fields["path"]:
        raise InvalidInputError(f"cites entry {number} needs both repo and path")
    path = fields["path"]
    if path.startswith("/") or "\\" in path or ".." in path.split("/"):
        raise InvalidInputError(f"cites entry {number}: path {path!r} is not relative to its repo")
    lines = _parse_lines(item.get("lines"), number)
    if lines and fields["symbol"]:
        raise InvalidInputError(f"cites entry {number} names both a symbol and lines")
    return Cite(lines=lines, at=_stamp(item.get("at")), **fields)


def _text(value: object) -> str:
    return "" if value is None else str(value).strip()


def _stamp(value: object) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, date):
        return value.isoformat()
    return _text(value)


def _parse_lines(value: object, number: int) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in value)
        and 1 <= value[0] <= value[1]
    ):
        return (value[0], value[1])
    raise InvalidInputError(
        f"cites entry {number}: lines is not [start, end] with 1 <= start <= end"
    )


def cites_yaml(cites: Sequence[Cite]) -> str:
    """Render `cites:` and one flow mapping per citation, reading back as the same cites."""
    rows = [f"{CITES_KEY}:"]
    for cite in cites:
        parts = [f"repo: {render_scalar(cite.repo)}", f"path: {render_scalar(cite.path)}"]
        if cite.symbol:
            parts.append(f"symbol: {render_scalar(cite.symbol)}")
        if cite.lines:
            parts.append(f"lines: [{cite.lines[0]}, {cite.lines[1]}]")
        for name in ("blob", "digest", "at"):
            if getattr(cite, name):
                parts.append(f"{name}: {render_scalar(getattr(cite, name))}")
        rows.append("  - {" + ", ".join(parts) + "}")
    return "\n".join(rows)


# --- merging -----------------------------------------------------------------------------


def merge_cites(
    base: Sequence[Cite], ours: Sequence[Cite], theirs: Sequence[Cite]
) -> tuple[Cite, ...]:
    """Merge two sides' citations: a set keyed by Cite.key, the newer anchor winning.

    A key one side removed and the other left as it was in `base` is removed; a key both
    sides hold keeps the newer anchor (`at`, ties: the larger digest, then blob), so the
    result does not depend on which side is ours. The result is sorted by path.
    """
    old = {cite.key: cite for cite in base}
    mine = {cite.key: cite for cite in ours}
    other = {cite.key: cite for cite in theirs}
    merged: list[Cite] = []
    for key in {*mine, *other}:
        if key in mine and key in other:
            merged.append(max(mine[key], other[key], key=_anchor_order))
            continue
        kept = mine[key] if key in mine else other[key]
        if old.get(key) == kept:
            continue  # removed on one side, untouched on the other
        merged.append(kept)
    return tuple(sorted(merged, key=_key_order))


def _anchor_order(cite: Cite) -> tuple[str, ...]:
    return (cite.at, cite.digest, cite.blob, repr(cite))


def _key_order(cite: Cite) -> tuple[str, str, str, tuple[int, int]]:
    return (cite.repo, cite.path, cite.symbol, cite.lines or (0, 0))
