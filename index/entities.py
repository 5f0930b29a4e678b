"""Entity extraction: the exact things a memory names (URLs, paths, identifiers, codes)."""

from __future__ import annotations

import re

# Order matters: earlier patterns claim their text first, so a URL is not also a path.
# Each pattern comes with the characters one of which any match contains: a text without
# them skips that pattern's scan (eight scans of every memory were most of a rebuild's
# entity time).
_PATTERNS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("url", re.compile(r"\bhttps?://[^\s<>\"'`)\]]+[^\s<>\"'`)\].,;:!?]"), ("://",)),
    ("mention", re.compile(r"(?<![\w@])@[A-Za-z][\w.-]*\w"), ("@",)),
    (
        "path",
        re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.@-]+){2,}/?|\b[\w-]+(?:/[\w.-]+)+\.\w{1,8}\b"),
        ("/",),
    ),
    (
        "version",
        re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)+(?:[-+][\w.]+)?\b|\bv\d+\.\d+\b"),
        (".",),
    ),
    ("code", re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{2,}[0-9]+\b"), ()),
    ("identifier", re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"), ("_",)),
    (
        "identifier",
        re.compile(r"\b[A-Z]?[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[A-Z][a-z]+[A-Z]{2,}\w*\b"),
        (),
    ),
    ("quoted", re.compile(r"`([^`\n]{2,80})`|\"([^\"\n]{2,80})\""), ("`", '"')),
)


def extract_entities(text: str, *, skip: bool = True) -> list[tuple[str, str]]:
    """Return the distinct (entity, kind) pairs in `text`, entities lowercased.

    `skip` False scans with every pattern, even those the text cannot match (for tests)."""
    found: dict[str, str] = {}
    claimed: list[tuple[int, int]] = []
    for kind, pattern, needs in _PATTERNS:
        if skip and needs and not any(n in text for n in needs):
            continue
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < e and s < end for s, e in claimed) and kind != "quoted":
                continue
            value = (
                next((g for g in match.groups() if g), match.group(0))
                if match.groups()
                else match.group(0)
            )
            value = value.strip().lower()
            if len(value) >= 2:
                found.setdefault(value, kind)
            claimed.append((start, end))
    return sorted(found.items())
