"""A memory whose text sync kept in several versions: read them apart, show them, settle them.

When two machines edit the same lines of a memory differently, the merge rules
(memstore.core.merge) keep both texts in the body, each under a `<!-- memstore: version N of 2 -->`
line, below one explaining `<!-- memstore: … -->` line. This module reads such a body back
into its versions, shows it to people and agents without the marker lines, and builds the
settled body. Pure: strings in, strings out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memstore.core.model import Memory

_MARKER = re.compile(r"<!-- memstore: (.*) -->")
_VERSION = re.compile(r"version \d+ of \d+")
_LABEL = re.compile(r"\(conflict: (\d+) versions\)\n")
SEPARATOR = "— or —"  # between two versions where a conflicted memory is shown
KEEP_CHOICES = ("mine", "theirs", "both")


@dataclass(frozen=True)
class Versions:
    """The texts a conflicted body keeps, in the file's order, and text above the first."""

    texts: tuple[str, ...]
    preamble: str = ""


def split_versions(body: str) -> Versions | None:
    """Return the versions a conflicted body keeps; None when it has no version markers.

    Every `<!-- memstore: version N of M -->` line starts a version; other
    `<!-- memstore: … -->` lines are dropped. A conflict merged into a conflict again
    (markers inside a version) reads as all of its texts.
    """
    chunks: list[list[str]] = [[]]
    nested: set[int] = set()  # versions that start with a conflict of their own
    for line in body.replace("\r\n", "\n").split("\n"):
        marker = _MARKER.fullmatch(line.strip())
        if marker is None:
            chunks[-1].append(line)
        elif _VERSION.fullmatch(marker.group(1)):
            chunks.append([])
        elif not chunks[-1]:
            nested.add(len(chunks) - 1)
    if len(chunks) < 3:  # fewer than two version markers: not a conflict memstore wrote
        return None
    texts = [_trim(chunk) for n, chunk in enumerate(chunks[1:], 1) if chunk or n not in nested]
    return Versions(tuple(texts), _trim(chunks[0]))


def _trim(lines: list[str]) -> str:
    return "\n".join(lines).strip("\n")


def is_conflicted(body: str) -> bool:
    """Return whether a memory's body holds versions kept by a merge."""
    return "<!-- memstore:" in body and split_versions(body) is not None


def label(count: int) -> str:
    """Return the mark a conflicted memory carries where it is shown."""
    return f"(conflict: {count} versions)"


def display_text(body: str) -> str:
    """Return a memory's text as people and agents see it: a conflicted one as its
    versions, marked, without the marker lines."""
    versions = split_versions(body) if "<!-- memstore:" in body else None
    if versions is None:
        return body
    parts = [label(len(versions.texts))]
    if versions.preamble.strip():
        parts.append(versions.preamble)
    for number, text in enumerate(versions.texts):
        if number:
            parts.append(SEPARATOR)
        parts.append(text)
    return "\n".join(parts) + "\n"


def split_label(content: str) -> tuple[str, str]:
    """Return ('(conflict: N versions)', the rest) for text display_text marked, else ('', text)."""
    match = _LABEL.match(content)
    if match is None:
        return "", content
    return label(int(match.group(1))), content[match.end() :]


def settled_body(versions: Versions, keep: Sequence[int]) -> str:
    """Return the body that keeps the versions numbered `keep` (1-based), one after another."""
    chosen = [versions.texts[n - 1] for n in keep]
    if versions.preamble.strip():
        chosen.insert(0, versions.preamble)
    return "\n\n".join(chosen) + "\n"


def without_conflict_flag(memory: Memory) -> tuple[tuple[str, str], ...]:
    """Return the memory's own front matter keys without the `conflict: true` a merge added."""
    return tuple((key, raw) for key, raw in memory.extra if key != "conflict")


def sync_hint(paths: Sequence[str]) -> list[str]:
    """Return the line `memstore sync` adds when memories hold versions kept by a merge."""
    memories = [path for path in paths if path.endswith(".md")]
    if not memories:
        return []
    which = "1 memory holds" if len(memories) == 1 else f"{len(memories)} memories hold"
    return [
        f"{which} two versions: 'memstore conflicts' lists them, "
        "'memstore conflicts resolve ID --keep mine|theirs|both' (or --edit) settles one"
    ]
