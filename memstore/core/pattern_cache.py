"""Regular expressions compiled once per machine: a one-shot CLI process loads their code.

A no-daemon `memstore search` compiles ~230 patterns while importing (memstore's, Whoosh's,
the standard library's) and an add ~110 more (the contradiction hint's): parsing and
compiling them cost 20–45 ms of CPU in every such process. `install(path)` makes
`re` keep what its compiler produced (the opcode list, flags and groups `_sre.compile`
takes) in a file read at the next start, so the next process builds each pattern from
its code without parsing it: the same `_sre.compile` call with the same arguments, hence
the same pattern (tests/core/test_pattern_cache.py compares the code with a fresh compile).

The file is keyed by the interpreter's version, its regular expression engine's magic
number and memstore's version; any other file, or one that does not read, is ignored (and
rewritten). Within a version memstore's code still changes (a checkout, a branch): the
patterns it no longer compiles would pile up to LIMIT, so each keeps the generation (a count
of the file's writes) in which it was last used, and a write drops those unused for AGE
generations. A process rewrites the file when it compiled something, or used a pattern not
marked as used for AGE // 2 generations, so a pattern in use is never dropped (the aging of
core/generated_code.py). Patterns compiled with DEBUG, or from something other than a str or
bytes, are not kept.
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

KEY = f"{sys.version}|{getattr(_sre, 'MAGIC', '')}|{getattr(_sre, 'CODESIZE', '')}"  # + version
LIMIT = 4096  # patterns kept at most (a process compiling far more is not typical)
AGE = 16  # a pattern unused in this many of the file's writes is dropped (stale code's)
Entry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]
Key = tuple[str, str | bytes, int]  # the pattern's type name, the pattern, its flags


class Aging:
    """When each entry of a cache file was last used, counted in the file's writes
    (generations): a write drops the entries unused for AGE generations, and a process that
    used an entry not marked used for AGE // 2 generations writes the file (so an entry in
    use is never dropped). Shared by this cache and core/generated_code.py."""

    def __init__(self) -> None:
        self.used_in: dict[Any, int] = {}  # entry key → the generation it was last used in
        self.generation = 0  # how many times the file was written
        self.used: set[Any] = set()  # the entries this process used or added
        self.added = 0  # added since read or saved (or kept entries due to be marked used)

    def read(self, generation: Any, kept: list[tuple[Any, Any, Any]]) -> dict[Any, Any]:
        """Take the generation and the `(key, value, used_in)` entries a file held; return
        the entries by key."""
        self.generation = int(generation)
        self.used_in = {key: int(used_in) for key, _, used_in in kept}
        return {key: value for key, value, _ in kept}

    def hit(self, key: Any) -> None:
        """Note a kept entry used."""
        if key not in self.used:
            self.used.add(key)
            if self.used_in.get(key, 0) <= self.generation - AGE // 2:
                self.added += 1  # marked used again at the next save: not dropped

    def new(self, key: Any) -> None:
        """Note an entry added."""
        self.used.add(key)
        self.added += 1

    def kept(self, known: dict[Any, Any]) -> tuple[int, list[tuple[Any, Any, int]]]:
        """Return the next generation and the `(key, value, used_in)` entries to write: those
        used within AGE generations, this process's marked used in it."""
        generation = self.generation + 1
        for key in self.used:
            self.used_in[key] = generation
        return generation, [
            (key, value, self.used_in.get(key, generation))
            for key, value in known.items()
            if self.used_in.get(key, generation) > generation - AGE
        ]

    def written(self, generation: int) -> None:
        """Note the file written at `generation`."""
        self.generation, self.added = generation, 0


class PatternCache:
    """The patterns read from a file and those compiled since, for writing back."""

    def __init__(self, path: Path, version: str = "") -> None:
        self.path = path
        self.key = f"{KEY}|{version}"
        self.known: dict[Key, Entry] = {}
        self.aging = Aging()
        self.compiled = 0  # compiled by this process (not built from the file)
        with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
            found = marshal.loads(path.read_bytes())
            if isinstance(found, tuple) and len(found) == 3 and found[0] == self.key:
                kept = [(tuple(key), entry, used_in) for key, entry, used_in in found[2]]
                self.known = self.aging.read(found[1], kept)

    @property
    def added(self) -> int:
        """Patterns compiled since read or saved (or kept ones due to be marked used)."""
        return self.aging.added

    def compile(self, pattern: Any, flags: int = 0) -> Any:
        """re._compiler.compile, from the kept code when the pattern was compiled before."""
        from re import _compiler, _parser  # type: ignore[attr-defined]

        if not isinstance(pattern, (str, bytes)) or flags & re.DEBUG:
            return _ORIGINAL(pattern, flags)
        key = (type(pattern).__name__, pattern, int(flags))
        entry = self.known.get(key)
        if entry is not None:
            self.aging.hit(key)
        else:
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
                self.aging.new(key)
        try:
            final, code, groups, groupindex, names = entry
            return _sre.compile(pattern, final, list(code), groups, dict(groupindex), names)
        except (RuntimeError, TypeError, ValueError, OverflowError):  # a garbled entry
            self.known.pop(key, None)
            return (_ORIGINAL or _compiler.compile)(pattern, flags)

    def save(self) -> None:
        """Write the patterns back if any was added or is due to be marked used (atomically;
        a failure keeps the old), without those unused for AGE generations."""
        if not self.aging.added:
            return
        generation, kept = self.aging.kept(self.known)
        if write_beside(self.path, (self.key, generation, kept)):
            self.aging.written(generation)
            self.known = {key: entry for key, entry, _ in kept}


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


def install(path: Path, version: str = "") -> PatternCache | None:
    """Make `re` compile through a cache kept at `path` for memstore `version`; return it
    (None where this interpreter's `re` is not the one this was written for)."""
    global _ORIGINAL, INSTALLED
    from re import _compiler  # type: ignore[attr-defined]

    if _sre is None or not hasattr(_compiler, "_code") or not hasattr(_compiler, "compile"):
        return None
    cache = PatternCache(path, version)
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
