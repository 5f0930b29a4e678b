"""The front matter memstore writes, read straight into a Memory (the codec's fast path).

A reindex reads every file: YAML's fast path (`yaml_values._load_simple`) built a dict of
the front matter, and the codec then looked up each of fifteen keys, split the header into
entries again for unknown keys and parsed citations, ~40% of a rebuild's reading. Most files
hold only the keys memstore writes for a plain memory (id, kind, keywords, source, session,
created, seen, and maybe recalled, last_recalled, confirmed, archived, supersedes), one per line,
each value a scalar or a flow list. Those are read here, each scalar exactly as YAML reads it
(`yaml_values._simple_scalar`: PyYAML's own implicit resolvers); anything else (another key,
a counter map, citations, a comment, a value that is not a whole number, an unknown kind, a
duplicate key, no id) returns None and the codec's full reader takes the file.
`tests/core/test_own_front_matter.py` compares the two on generated and hand-written
front matter.
"""

from __future__ import annotations

from memstore.core.model import Memory, Newline, is_kind
from memstore.core.yaml_values import _simple_scalar

_TEXT_KEYS = frozenset({"source", "session", "created", "last_recalled", "archived"})
_COUNT_KEYS = frozenset({"seen", "recalled", "confirmed"})
_LIST_KEYS = frozenset({"keywords", "supersedes"})
_KEYS = frozenset({"id", "kind", *_TEXT_KEYS, *_COUNT_KEYS, *_LIST_KEYS})


def read_own(header: str, body: str, *, workspace: str, newline: Newline) -> Memory | None:
    """Return the memory a front matter of memstore's own keys gives, or None (the full
    reader's to read: see the module's docstring)."""
    if not header.isascii() or "\r" in header or "#" in header:
        return None
    values: dict[str, object] = {}
    for line in header.split("\n"):
        if not line:
            continue  # a blank line means nothing in YAML
        key, colon, raw = line.partition(": ")
        if not colon or key not in _KEYS or key in values or not raw or raw[0] == " ":
            return None
        value = _list(raw) if key in _LIST_KEYS else _scalar(raw, _BLOCK_SCALARS)
        if value is None or (key in _COUNT_KEYS and type(value) is not int):
            return None
        values[key] = value
    memory_id = _text(values.get("id"))
    kind = _text(values.get("kind", "note"))
    if not memory_id or not is_kind(kind):
        return None
    return Memory(
        id=memory_id.lower(),
        workspace=workspace,
        body=body,
        kind=kind,
        keywords=values.get("keywords", ()),  # type: ignore[arg-type]
        source=_text(values.get("source")),
        session=_text(values.get("session")),
        created=_text(values.get("created")),
        seen=values.get("seen", 1),  # type: ignore[arg-type]
        recalled=values.get("recalled", 0),  # type: ignore[arg-type]
        last_recalled=_text(values.get("last_recalled")),
        confirmed=values.get("confirmed", 0),  # type: ignore[arg-type]
        archived=_text(values.get("archived")),
        supersedes=tuple(s.lower() for s in values.get("supersedes", ())),  # type: ignore[attr-defined]
        newline=newline,
    )


# What `_simple_scalar` read of each raw scalar, outside and inside a flow list: a reindex
# reads the same kinds, sources, counts and keywords again in most files (strings, whole
# numbers and None only: nothing a caller could change). Started over past SCALAR_CACHE.
SCALAR_CACHE = 50_000
_BLOCK_SCALARS: dict[str, object] = {}
_FLOW_SCALARS: dict[str, object] = {}
_UNSEEN = object()


def _scalar(raw: str, cache: dict[str, object]) -> object:
    """Return `_simple_scalar(raw)` (flow: `cache` is _FLOW_SCALARS), remembered."""
    value = cache.get(raw, _UNSEEN)
    if value is _UNSEEN:
        if len(cache) >= SCALAR_CACHE:
            cache.clear()
        value = cache[raw] = _simple_scalar(raw, flow=cache is _FLOW_SCALARS)
    return value


def _text(value: object) -> str:
    # codec._as_str of what _simple_scalar reads (a string or a whole number, never a bool)
    return "" if value is None else str(value).strip()


def _list(raw: str) -> tuple[str, ...] | None:
    """Return a flow list's distinct items as the codec keeps them (`_as_list`), or None."""
    if raw[0] != "[" or raw[-1] != "]":
        return None
    inner = raw[1:-1]
    if not inner.strip():
        return ()
    kept: dict[str, None] = {}
    for item in inner.split(","):
        value = _scalar(item.strip(), _FLOW_SCALARS)
        if value is None:
            return None
        text = _text(value)
        if text:
            kept.setdefault(text, None)
    return tuple(kept)
