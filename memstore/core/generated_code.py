"""The methods dataclasses generate, compiled once per machine: a one-shot process loads their code.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__` (a frozen one's
`__setattr__`, `__hash__` ...) as source text and compiles it with `exec`: 0.4-0.8 ms of CPU
a class, and a no-daemon `memstore search` defines ~45 of them while importing (25-35 ms).
`install(path)` gives the dataclasses module an `exec` that runs the code compiled from the
same text before, kept in a file read at the next start: `compile(text, "<string>", "exec",
dont_inherit=True)` is what `exec(text)` runs there, so the methods are the same (tests/core/test_generated_code.py
compares every generated method of the store's classes with a fresh compile).

The file is keyed by the interpreter's version and its byte code's magic number; any other
file, or one that does not read, is ignored (and rewritten). `uninstall` gives dataclasses
the builtin `exec` back.
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

KEY = f"{sys.version}|{MAGIC_NUMBER.hex()}"
LIMIT = 4096  # texts kept at most (a process generating far more is not typical)


class GeneratedCode:
    """The code read from a file and what was compiled since, for writing back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.known: dict[str, CodeType] = {}
        self.added = 0  # compiled since read or saved
        self.compiled = 0  # compiled by this process (not read from the file)
        with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
            found = marshal.loads(path.read_bytes())
            if isinstance(found, tuple) and len(found) == 2 and found[0] == KEY:
                self.known = {
                    text: code
                    for text, code in found[1]
                    if isinstance(text, str) and isinstance(code, CodeType)
                }

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        """builtins.exec, running the kept code when `source` is a text compiled before."""
        if not isinstance(source, str):
            return builtins.exec(source, globals, locals)
        code = self.known.get(source)
        if code is None:
            # dont_inherit: not this module's `annotations` future, as dataclasses has none
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
            if len(self.known) < LIMIT:
                self.known[source] = code
                self.added += 1
        return builtins.exec(code, globals, locals)

    def save(self) -> None:
        """Write the code back if any was added (atomically; a failure keeps the old)."""
        from memstore.core.pattern_cache import write_beside

        if self.added and write_beside(self.path, (KEY, list(self.known.items()))):
            self.added = 0


def install(path: Path) -> GeneratedCode:
    """Make dataclasses run the code it generates through a cache kept at `path`; return it."""
    import dataclasses

    cache = GeneratedCode(path)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]  # a global shadows the builtin
    return cache


def uninstall() -> None:
    """Give dataclasses the builtin `exec` back."""
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is not None and "exec" in vars(dataclasses):
        del dataclasses.exec
