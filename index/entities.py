"""Entity extraction: the exact things a memory names (URLs, paths, identifiers, codes)."""

from __future__ import annotations

import re

# Order matters: earlier patterns claim their text first, so a URL is not also a path.
# Each pattern comes with what any of its matches contains: one of a few characters (a
# text without them skips that pattern's scan), or a short pattern searched first (a
# gate: a character class first, which the regex engine scans for in C, where a pattern
# starting with \b or a look-behind is tried at every position). Eight scans of every
# memory were most of a rebuild's entity time; the gates are each pattern's necessary
# condition (tests/index/test_index.py compares with every pattern run on every text).
_PATTERNS: tuple[tuple[str, re.Pattern[str], tuple[str, ...], re.Pattern[str] | None], ...] = (
    ("url", re.compile(r"\bhttps?://[^\s<>\"'`)\]]+[^\s<>\"'`)\].,;:!?]"), ("://",), None),
    ("mention", re.compile(r"(?<![\w@])@[A-Za-z][\w.-]*\w"), ("@",), None),
    (
        "path",
        re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.@-]+){2,}/?|\b[\w-]+(?:/[\w.-]+)+\.\w{1,8}\b"),
        ("/",),
        None,
    ),
    (
        "version",
        re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)+(?:[-+][\w.]+)?\b|\bv\d+\.\d+\b"),
        (".",),
        re.compile(r"\d\.\d"),  # both: digits, a dot, digits
    ),
    (
        "code",
        re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{2,}[0-9]+\b"),
        (),
        re.compile(r"[A-Z][A-Z0-9_]"),  # a capital, then a capital, digit or underscore
    ),
    (
        "identifier",
        re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"),
        ("_",),
        re.compile(r"[a-z0-9]_[a-z0-9]"),
    ),
    (
        "identifier",
        re.compile(r"\b[A-Z]?[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[A-Z][a-z]+[A-Z]{2,}\w*\b"),
        (),
        re.compile(r"[a-z][A-Z]"),  # both: a small letter, then a capital
    ),
    ("quoted", re.compile(r"`([^`\n]{2,80})`|\"([^\"\n]{2,80})\""), ("`", '"'), None),
)


def extract_entities(text: str, *, skip: bool = True) -> list[tuple[str, str]]:
    """Return the distinct (entity, kind) pairs in `text`, entities lowercased.

    `skip` False scans with every pattern, even those the text cannot match (for tests)."""
    found: dict[str, str] = {}
    claimed: list[tuple[int, int]] = []
    for kind, pattern, needs, gate in _PATTERNS:
        if skip:
            for need in needs:  # a loop, not any(): no generator per pattern and text
                if need in text:
                    break
            else:
                if needs:
                    continue
            if gate is not None and gate.search(text) is None:
                continue
        for match in pattern.finditer(text):
            start, end = match.span()
            if claimed and kind != "quoted" and any(start < e and s < end for s, e in claimed):
                continue
            groups = match.groups()
            value = next((g for g in groups if g), match.group(0)) if groups else match.group(0)
            value = value.strip().lower()
            if len(value) >= 2:
                found.setdefault(value, kind)
            claimed.append((start, end))
    return sorted(found.items())
