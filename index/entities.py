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


# Each pattern but "quoted" matches no whitespace, and each of its matches holds a match of
# its marker (its needed text or its gate, which hold no whitespace either): its matches lie
# in the runs of non-space characters from the one holding the first marker to the one
# holding the last, and its scan covers only those (a scan's start position changes no
# match: look-behinds and \b still see the text before it; its end is a run's end, where
# the text has whitespace or ends). None: the pattern scans the whole text.
_MARKERS: tuple[re.Pattern[str] | None, ...] = tuple(
    None if kind == "quoted" else gate or re.compile("|".join(map(re.escape, needs)))
    for kind, _, needs, gate in _PATTERNS
)
_RUN_END = re.compile(r"\S*")


def extract_entities(text: str, *, skip: bool = True) -> list[tuple[str, str]]:
    """Return the distinct (entity, kind) pairs in `text`, entities lowercased.

    `skip` False scans with every pattern, even those the text cannot match, over the
    whole text (for tests)."""
    found: dict[str, str] = {}
    claimed: list[tuple[int, int]] = []
    span: tuple[int, int] | None = (0, len(text))
    for (kind, pattern, needs, gate), marker in zip(_PATTERNS, _MARKERS, strict=True):
        if skip:
            for need in needs:  # a loop, not any(): no generator per pattern and text
                if need in text:
                    break
            else:
                if needs:
                    continue
            if marker is not None:
                span = _marked_span(text, marker)  # the gate's search among it
                if span is None:
                    continue
            elif gate is not None and gate.search(text) is None:
                continue
            else:
                span = (0, len(text))
        assert span is not None
        for match in pattern.finditer(text, *span):
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


def _marked_span(text: str, marker: re.Pattern[str]) -> tuple[int, int] | None:
    """Return where the runs of non-space characters holding `marker`'s matches start and
    end, the start at or before the first one's (after a space or a line's end; None: no
    match)."""
    first = marker.search(text)
    if first is None:
        return None
    at = first.start()
    start = max(text.rfind(" ", 0, at), text.rfind("\n", 0, at)) + 1
    stop = first.end()
    for mark in marker.finditer(text, stop):
        stop = mark.end()
    end = _RUN_END.match(text, stop)
    return start, end.end() if end is not None else len(text)
