"""Standard library modules a one-shot CLI process imports and never uses, run on first use.

A no-daemon `memstore search` imports ~20 modules of the standard library only because
something it imports names them at its top: `inspect` (dataclasses, for a class without a
docstring), `subprocess` (git and the index's process pool), `tempfile`, `calendar` and
`queue` (Whoosh), `hashlib` (OpenSSL's libcrypto; Whoosh's term tables hash with Python's
own MD5, memstore/index/__init__.py), `json`, `traceback` (logging, for an exception it
prints) ... 15-20 ms of CPU in every such process, for modules the search never calls.
`defer()` puts a stand-in for each in `sys.modules` before those imports: `import inspect`
then binds the stand-in without running the module, and the first attribute anyone reads
of it (`inspect.signature`, `from inspect import signature`) runs the real module into it,
once, under a lock; from then on it is that module (its class is ModuleType again). A
module already imported is left as it is; only pure-Python modules found by the usual
import system are deferred.

The stand-in carries the real module's `__spec__` (not initializing), `__name__`,
`__file__`, `__loader__`, `__package__` and `__cached__`, so the import system binds it
without reading anything else: Python 3.11's own `importlib.util.LazyLoader` modules run
on the next `import` statement (it reads `__spec__` through the lazy path), which is why
this is not that. tests/core/test_deferred_modules.py.
"""

from __future__ import annotations

import _thread
import sys
from types import ModuleType

TYPE_CHECKING = False  # not typing's: the launcher runs this before anything imports typing
if TYPE_CHECKING:
    from typing import Any

# Imported at the top of what a search or add imports (memstore's modules, Whoosh, the
# standard library's own), used only by commands, errors or options those paths do not run.
# What only these import (ast, dis, tokenize, linecache, selectors, locale ...) then never is.
ONE_SHOT = (
    *("inspect", "traceback", "subprocess", "tempfile", "random", "bz2", "lzma", "calendar"),
    *("queue", "json", "base64", "ipaddress", "hashlib"),
)


class DeferredModule(ModuleType):
    """A module not run yet: the first attribute read that it lacks runs it."""

    def __getattr__(self, attr: str) -> object:
        state = self.__dict__
        lock = state.get("_deferred_lock")
        if lock is not None:
            with lock:  # another thread reading meanwhile waits for the whole module
                if type(self) is DeferredModule and not state.get("_deferred_running"):
                    self._run(state)
        if type(self) is DeferredModule:  # read by its own code while it runs: not there yet
            raise AttributeError(f"partially initialized module {self.__name__!r} has no {attr!r}")
        return getattr(self, attr)

    def _run(self, state: dict[str, Any]) -> None:
        spec = state["__spec__"]
        state["_deferred_running"] = True
        try:
            spec.loader.exec_module(self)
        except BaseException:
            if sys.modules.get(spec.name) is self:  # as a failed import leaves it: gone
                del sys.modules[spec.name]
            raise
        finally:
            del state["_deferred_running"], state["_deferred_lock"]
            object.__setattr__(self, "__class__", ModuleType)  # the module its code made


def defer(names: tuple[str, ...] = ONE_SHOT) -> list[str]:
    """Put a stand-in in `sys.modules` for each of `names` not imported yet; return them."""
    from importlib.util import find_spec, module_from_spec

    deferred = []
    for name in names:
        if name in sys.modules or "." in name:
            continue
        spec = find_spec(name)
        if spec is None or spec.loader is None or not (spec.origin or "").endswith(".py"):
            continue  # a builtin or an extension: nothing to save
        module = module_from_spec(spec)  # its attributes as the import system sets them
        module.__dict__["_deferred_lock"] = _thread.RLock()
        module.__class__ = DeferredModule
        sys.modules[name] = module
        deferred.append(name)
    return deferred


def is_deferred(module: object) -> bool:
    """Whether `module` is a stand-in that has not run yet."""
    return type(module) is DeferredModule
