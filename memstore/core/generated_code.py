"""The methods dataclasses generate, compiled once per machine: a one-shot process loads their code.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__` (a frozen one's
`__setattr__`, `__hash__` ...) as source text and compiles it with `exec`: 0.4-0.8 ms of CPU
a class, and a no-daemon `memstore search` defines ~45 of them while importing (25-35 ms).
`install(path)` gives the dataclasses module an `exec` that runs the code compiled from the
same text before, kept in a file read at the next start: `compile(text, "<string>", "exec",
dont_inherit=True)` is what `exec(text)` runs there, so the methods are the same (tests/core/test_generated_code.py
compares every generated method of the store's classes with a fresh compile).

The file is keyed by the interpreter's version, its byte code's magic number and memstore's
version; any other file, or one that does not read, is ignored (and rewritten). Within a
version memstore's code still changes (a checkout, a branch): the texts its classes no
longer generate would pile up to LIMIT, so each text keeps the generation (a count of the
file's writes) in which it was last used, and a write drops those unused for AGE
generations. A process rewrites the file when it compiled something, or used a text not
marked as used for AGE // 2 generations, so a text in use is never dropped. `uninstall`
gives dataclasses the builtin `exec` back.
"""

from __future__ import annotations

import builtins
import contextlib
import marshal
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

from memstore.core.pattern_cache import AGE as AGE  # a text unused this long is dropped
from memstore.core.pattern_cache import Aging, write_beside

KEY = f"{sys.version}|{MAGIC_NUMBER.hex()}"  # and memstore's version (`version`)
LIMIT = 4096  # texts kept at most (a process generating far more is not typical)


class GeneratedCode:
    """The code read from a file and what was compiled since, for writing back."""

    def __init__(self, path: Path, version: str = "") -> None:
        self.path = path
        self.key = f"{KEY}|{version}"
        self.known: dict[str, CodeType] = {}
        self.aging = Aging()  # which texts this process ran, and when each was last used
        self.compiled = 0  # compiled by this process (not read from the file)
        with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
            found = marshal.loads(path.read_bytes())
            if isinstance(found, tuple) and len(found) == 3 and found[0] == self.key:
                kept = [
                    (text, code, used_in)
                    for text, code, used_in in found[2]
                    if isinstance(text, str) and isinstance(code, CodeType)
                ]
                self.known = self.aging.read(found[1], kept)

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        """builtins.exec, running the kept code when `source` is a text compiled before."""
        if not isinstance(source, str):
            return builtins.exec(source, globals, locals)
        code = self.known.get(source)
        if code is not None:
            self.aging.hit(source)
        else:
            # dont_inherit: not this module's `annotations` future, as dataclasses has none
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
            if len(self.known) < LIMIT:
                self.known[source] = code
                self.aging.new(source)
        return builtins.exec(code, globals, locals)

    def save(self) -> None:
        """Write the code back if any was added or is due to be marked used (atomically; a
        failure keeps the old), without the texts unused for AGE generations."""
        if not self.aging.added:
            return
        generation, kept = self.aging.kept(self.known)
        if write_beside(self.path, (self.key, generation, kept)):
            self.aging.written(generation)
            self.known = {text: code for text, code, _ in kept}


def install(path: Path, version: str = "") -> GeneratedCode:
    """Make dataclasses run the code it generates through a cache kept at `path` for
    memstore `version`; return it."""
    import dataclasses

    cache = GeneratedCode(path, version)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]  # a global shadows the builtin
    return cache


def uninstall() -> None:
    """Give dataclasses the builtin `exec` back."""
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is not None and "exec" in vars(dataclasses):
        del dataclasses.exec
