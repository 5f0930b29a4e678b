"""Front matter values as YAML: read them, and render them so they read back the same.

Reading has a fast path for the lines memstore writes; PyYAML reads the rest. Rendering
writes scalars, flow lists and counter maps.

PyYAML is imported on first use: searching an up-to-date index never parses a file.
"""

from __future__ import annotations

import functools
import re
from typing import Any


@functools.cache
def _yaml() -> tuple[Any, Any]:
    """Return PyYAML and a safe loader that leaves timestamps as the strings written."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StringTimestampLoader(base):
        pass

    # PyYAML reads 2026-11-29T14:12:23Z as a datetime; keep timestamps as strings.
    StringTimestampLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    return yaml, StringTimestampLoader


# The front matter memstore writes, line by line: `key: value`, each value a plain word
# (or words), a double-quoted string without escapes, a whole number, or a flow list of
# those. Anything else (comments, nesting, escapes, other scalars) goes to PyYAML.
_SIMPLE_LINE = re.compile(r"([a-z_][a-z0-9_]*): (\S.*)")
_SIMPLE_WORDS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./+@-]*(?: [A-Za-z0-9_./+@-]+)*")
_SIMPLE_STAMP = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./+@-]*(?::[A-Za-z0-9_./+@-]+)*")
_SIMPLE_QUOTED = re.compile(r'"([^"\\\x00-\x1f\x7f]*)"')
_WHOLE = re.compile(r"0|[1-9][0-9]{0,17}")
_STR = "tag:yaml.org,2002:str"


def _load_simple(text: str) -> dict[str, object] | None:
    """Return what PyYAML reads from `text`, if it is simple enough to read here; else None.

    A reindex reads every file: PyYAML's C loader still spends ~150 µs building Python
    objects for ten lines. Here a line costs a regular expression; scalars are resolved
    with PyYAML's own implicit resolvers, so a word reads as PyYAML would read it.
    """
    if not text.isascii():
        return None
    data: dict[str, object] = {}
    lines = iter(text.split("\n"))
    pending: str | None = None  # a line read past the end of a list of mappings
    while True:
        line = pending if pending is not None else next(lines, None)
        pending = None
        if line is None:
            break
        if not line:
            continue  # a blank line means nothing in YAML
        block = _SIMPLE_BLOCK_KEY.fullmatch(line)
        if block is not None:  # `cites:` and one `  - {k: v, …}` a line
            key = block.group(1)
            mappings: list[dict[str, object]] = []
            for pending in lines:
                if not pending.startswith("  - {"):
                    break
                mapping = _simple_flow_map(pending) if pending.endswith("}") else None
                if mapping is None:
                    return None
                mappings.append(mapping)
            else:
                pending = None
            if not mappings or key in data or _implicit_tag(key) != _STR:
                return None
            data[key] = mappings
            continue
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None or match.group(1) in data or _implicit_tag(match.group(1)) != _STR:
            return None  # (YAML 1.1 reads a key like `no` or `on` as a boolean)
        key, raw = match.groups()
        if raw[0] == "{" and raw[-1] == "}":
            counts = _simple_counts(raw[1:-1])
            if counts is None:
                return None
            data[key] = counts
        elif raw[0] == "[" and raw[-1] == "]":
            items = [item.strip() for item in raw[1:-1].split(",")] if raw[1:-1].strip() else []
            values = [_simple_scalar(item, flow=True) for item in items]
            if any(v is None for v in values):
                return None
            data[key] = values
        else:
            value = _simple_scalar(raw, flow=False)
            if value is None:
                return None
            data[key] = value
    return data


_SIMPLE_BLOCK_KEY = re.compile(r"([a-z_][a-z0-9_]*):")
_FLOW_SPECIALS = re.compile(r"[\"'{}#&*!|>%@`]")
_NESTED = re.compile(r"\[[^\]]*\[|\][^\[]*\]")  # a list in a list, or a stray bracket
_FLOW_COMMA = re.compile(r",(?![^\[]*\])")  # a comma outside [ ]
_FLOW_KEY = re.compile(r"[a-z_]+")


def _simple_flow_map(line: str) -> dict[str, object] | None:
    """Return the flow mapping `  - {a: word, b: [1, 2], c: 2026-…Z}` holds, or None.

    Values are plain words, whole numbers, timestamps or flow lists of those; anything
    else (quotes, nesting, comments) is PyYAML's to read.
    """
    inner = line[len("  - {") : -1]
    if _FLOW_SPECIALS.search(inner):
        return None
    if _NESTED.search(inner):
        return None
    item: dict[str, object] = {}
    for part in _FLOW_COMMA.split(inner):
        key, colon, raw = part.strip().partition(": ")
        raw = raw.strip()
        if not colon or not raw or key in item or not _FLOW_KEY.fullmatch(key):
            return None
        if _implicit_tag(key) != _STR:
            return None
        if raw[0] == "[" and raw[-1] == "]":
            values = [_simple_scalar(v.strip(), flow=True) for v in raw[1:-1].split(",")]
            if not raw[1:-1].strip() or any(v is None for v in values):
                return None
            item[key] = values
        else:
            value = _simple_scalar(raw, flow=False)
            if value is None or "[" in raw or "]" in raw:
                return None
            item[key] = value
    return item


def _simple_counts(inner: str) -> dict[str, int] | None:
    """Return the flow mapping of words to whole numbers `{a: 1, b: 2}` holds, or None."""
    counts: dict[str, int] = {}
    for item in inner.split(",") if inner.strip() else []:
        key, colon, value = item.strip().partition(": ")
        name = _simple_scalar(key, flow=True)
        number = _simple_scalar(value.strip(), flow=True)
        if not colon or not isinstance(name, str) or not isinstance(number, int) or name in counts:
            return None
        counts[name] = number
    return counts


def _simple_scalar(raw: str, *, flow: bool) -> object:
    """Return the string or whole number `raw` reads as in YAML, or None if unsure."""
    quoted = _SIMPLE_QUOTED.fullmatch(raw)
    if quoted is not None:
        return quoted.group(1)
    if not (_SIMPLE_WORDS.fullmatch(raw) or (not flow and _SIMPLE_STAMP.fullmatch(raw))):
        return None
    tag = _implicit_tag(raw)
    if tag == _STR:
        return raw
    if tag == "tag:yaml.org,2002:int" and _WHOLE.fullmatch(raw):
        return int(raw)
    return None


# PyYAML's implicit resolvers (yaml.resolver.Resolver, YAML 1.1) in the order it adds them,
# each with the first characters it is tried for; timestamps left out, as the loader above
# leaves them. Kept here so that reading memstore's own front matter and rendering a scalar
# import no PyYAML (~25 ms of a no-daemon `memstore add`); whitespace in the verbose (re.X)
# patterns is PyYAML's layout only. tests/core/test_yaml_resolvers.py compares them with
# the installed PyYAML's, and the tags they give with its resolver's.
_DIGITS = "0123456789"
RESOLVERS: tuple[tuple[str, str, int, tuple[str, ...]], ...] = (
    (
        "tag:yaml.org,2002:bool",
        r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
        re.X,
        tuple("yYnNtTfFoO"),
    ),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
        r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        re.X,
        tuple("-+" + _DIGITS + "."),
    ),
    (
        "tag:yaml.org,2002:int",
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
        r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
        re.X,
        tuple("-+" + _DIGITS),
    ),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", 0, ("<",)),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", re.X, ("~", "n", "N", "")),
    ("tag:yaml.org,2002:value", r"^(?:=)$", 0, ("=",)),
    ("tag:yaml.org,2002:yaml", r"^(?:!|&|\*)$", 0, tuple("!&*")),
)


@functools.cache
def _resolvers() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """Return RESOLVERS by first character, compiled (on the first scalar read)."""
    table: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, pattern, flags, firsts in RESOLVERS:
        compiled = re.compile(pattern, flags)
        for first in firsts:
            table.setdefault(first, []).append((tag, compiled))
    return table


@functools.lru_cache(maxsize=1 << 14)
def _implicit_tag(value: str) -> str:
    """Return the tag PyYAML's resolver gives a plain scalar (as BaseResolver.resolve)."""
    for tag, pattern in _resolvers().get(value[:1], ()):
        if pattern.match(value):
            return tag
    return _STR


def load_yaml(text: str) -> object:
    """Return what PyYAML reads from `text` (timestamps stay strings); raises yaml_error()."""
    simple = _load_simple(text)
    if simple is not None:
        return simple
    yaml, loader = _yaml()
    return yaml.load(text, Loader=loader)


def yaml_error() -> type[Exception]:
    """Return PyYAML's error class (what `load_yaml` raises for text that is not YAML)."""
    return _yaml()[0].YAMLError


# --- rendering --------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./+@-]*(?: [A-Za-z0-9_./+@-]+)*$")
_TIMESTAMP = re.compile(
    r"^\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?$"
)


def render_scalar(value: str) -> str:
    """Render a string as YAML that reads back as the same string.

    A one-line plain word or timestamp reads back as itself exactly when YAML's resolver
    gives it the string tag (timestamps stay strings, as `load_yaml` reads them).
    """
    if (_PLAIN.match(value) or _TIMESTAMP.match(value)) and _implicit_tag(value) == _STR:
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_list(values: tuple[str, ...]) -> str:
    """Render a list of strings as a one-line YAML flow sequence."""
    return "[" + ", ".join(render_scalar(v) for v in values) + "]"


def render_counts(counts: tuple[tuple[str, int], ...]) -> str:
    """Render a per-replica counter map as a one-line YAML flow mapping."""
    return "{" + ", ".join(f"{render_scalar(name)}: {n}" for name, n in counts) + "}"


def yaml_reason(err: Exception, *, first_line: int) -> str:
    """One line naming where YAML gave up and what it wanted: 'line 4: while parsing a flow
    sequence, expected ',' or ']'' (the header's first line is the file's `first_line`), so
    doctor's line says what to fix; the bare message said only 'while parsing a flow sequence'."""
    context, problem = getattr(err, "context", None), getattr(err, "problem", None)
    mark = getattr(err, "context_mark", None) or getattr(err, "problem_mark", None)
    words = ", ".join(str(part).split(", but found")[0] for part in (context, problem) if part)
    words = words or (str(err).splitlines()[0] if str(err) else type(err).__name__)
    return f"line {mark.line + first_line}: {words}" if mark is not None else words
