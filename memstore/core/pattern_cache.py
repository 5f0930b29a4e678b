"""Regular expressions compiled once per machine: a one-shot CLI process loads their code.

A no-daemon `memstore search` compiles ~230 patterns while importing (memstore's, Whoosh's,
the standard library's) and an add ~110 more (the contradiction hint's): parsing and
compiling them cost 20–45 ms of CPU in every such process. `install(path)` makes
`re` keep what its compiler produced (the opcode list, flags and groups `_sre.compile`
takes) in a file read at the next start, so the next process builds each pattern from
its code without parsing it: the same `_sre.compile` call with the same arguments, hence
the same pattern (tests/core/test_pattern_cache.py compares the code with a fresh compile).

The file is keyed by the interpreter's version and its regular expression engine's magic
number; any other file, or one that does not read, is ignored (and rewritten). Patterns
compiled with DEBUG, or from something other than a str or bytes, are not kept.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

try:
    import _sre  # type: ignore[import-not-found]  # the engine re compiles for
except ImportError:  # another interpreter's re: not cached
    _sre = None

KEY = f"{sys.version}|{getattr(_sre, 'MAGIC', '')}|{getattr(_sre, 'CODESIZE', '')}"
LIMIT = 4096  # patterns kept at most (a process compiling far more is not typical)
Entry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]


class PatternCache:
    """The patterns read from a file and those compiled since, for writing back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.known: dict[tuple[str, str | bytes, int], Entry] = {}
        self.added = 0  # compiled since read or saved
        self.compiled = 0  # compiled by this process (not built from the file)
        with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
            found = marshal.loads(path.read_bytes())
            if isinstance(found, tuple) and len(found) == 2 and found[0] == KEY:
                self.known = dict(found[1])

    def compile(self, pattern: Any, flags: int = 0) -> Any:
        """re._compiler.compile, from the kept code when the pattern was compiled before."""
        from re import _compiler, _parser  # type: ignore[attr-defined]

        if not isinstance(pattern, (str, bytes)) or flags & re.DEBUG:
            return _ORIGINAL(pattern, flags)
        key = (type(pattern).__name__, pattern, int(flags))
        entry = self.known.get(key)
        if entry is None:
            tree = _parser.parse(pattern, flags)
            code = [int(op) for op in _compiler._code(tree, flags)]  # named constants: ints
            groupindex = dict(tree.state.groupdict)
            indexgroup: list[str | None] = [None] * tree.state.groups
            for name, number in groupindex.items():
                indexgroup[number] = name
            groups = tree.state.groups - 1
            entry = (int(flags | tree.state.flags), code, groups, groupindex, tuple(indexgroup))
            self.compiled += 1
            if len(self.known) < LIMIT:
                self.known[key] = entry
                self.added += 1
        try:
            final, code, groups, groupindex, names = entry
            return _sre.compile(pattern, final, list(code), groups, dict(groupindex), names)
        except (RuntimeError, TypeError, ValueError, OverflowError):  # a garbled entry
            self.known.pop(key, None)
            return (_ORIGINAL or _compiler.compile)(pattern, flags)

    def save(self) -> None:
        """Write the patterns back if any was added (atomically; a failure keeps the old)."""
        if self.added and write_beside(self.path, (KEY, list(self.known.items()))):
            self.added = 0


def write_beside(path: Path, value: Any) -> bool:
    """Write `value` marshalled to `path` through a temporary file beside it, renamed over
    it (a reader sees the old file or the new one); say whether it was written (a failure
    keeps the old: a cache)."""
    with contextlib.suppress(OSError, ValueError):  # ValueError: not marshallable
        _write_beside(path, marshal.dumps(value))
        return True
    return False


def _write_beside(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(name, path)


_ORIGINAL: Any = None
INSTALLED: PatternCache | None = None  # the cache installed last (kept once uninstalled)


def install(path: Path) -> PatternCache | None:
    """Make `re` compile through a cache kept at `path`; return it (None where this
    interpreter's `re` is not the one this was written for)."""
    global _ORIGINAL, INSTALLED
    from re import _compiler  # type: ignore[attr-defined]

    if _sre is None or not hasattr(_compiler, "_code") or not hasattr(_compiler, "compile"):
        return None
    cache = PatternCache(path)
    if _ORIGINAL is None:
        _ORIGINAL = _compiler.compile
    INSTALLED = cache
    _compiler.compile = cache.compile
    return cache


def uninstall() -> None:
    """Give `re` its own compiler back."""
    from re import _compiler  # type: ignore[attr-defined]

    if _ORIGINAL is not None:
        _compiler.compile = _ORIGINAL
