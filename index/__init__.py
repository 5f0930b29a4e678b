"""The search engine: Whoosh BM25F over documents plus an entity table. Knows nothing of files.

Documents and a query in, hits out: `SearchIndex.open(folder)`, `apply(documents)`,
`search(Query.of(text))`. The Whoosh patches (`_patches`) and the process pool that shares
a fresh build are not part of it.
"""

import sys
import types
from typing import Any


class _CachedProperty:
    """The `cached_property` package's decorator for plain methods (all Whoosh uses it for)."""

    def __init__(self, func: types.FunctionType) -> None:
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, obj: object, cls: type) -> object:
        if obj is None:
            return self
        value = obj.__dict__[self.func.__name__] = self.func(obj)
        return value


def _no_download(*_args: object, **_kwargs: object) -> None:
    raise OSError("memstore's index downloads nothing")


def _variations(word: str) -> object:
    # whoosh.query.Variations' word forms, from the real module (imported on first use)
    from whoosh.lang.morph_en import variations

    return variations(word)


def _html_escape(s: str, quote: bool = True) -> str:
    # whoosh.compat.htmlescape (for highlighting), from the real module on first use
    from html import escape

    return escape(s, quote)


def _stand_ins(query: bool) -> dict[str, types.ModuleType]:
    """Return stand-ins for what Whoosh imports and memstore never uses (see _import_whoosh)
    that are not imported yet; `query`: those whoosh.query's own modules import."""
    stand_ins = {}
    if query and "whoosh.lang.morph_en" not in sys.modules:
        stand_ins["whoosh.lang.morph_en"] = types.ModuleType("whoosh.lang.morph_en")
        stand_ins["whoosh.lang.morph_en"].variations = _variations  # type: ignore[attr-defined]
    if not query and "urllib.request" not in sys.modules:
        stand_ins["urllib.request"] = types.ModuleType("urllib.request")
        stand_ins["urllib.request"].urlretrieve = _no_download  # type: ignore[attr-defined]
    if not query and "cached_property" not in sys.modules:
        stand_ins["cached_property"] = types.ModuleType("cached_property")
        stand_ins["cached_property"].cached_property = _CachedProperty  # type: ignore[attr-defined]
    if not query and "html" not in sys.modules:
        stand_ins["html"] = types.ModuleType("html")
        stand_ins["html"].escape = _html_escape  # type: ignore[attr-defined]
    md5 = _builtin_md5()
    if not query and md5 is not None and "md5" not in vars(sys.modules.get("hashlib", sys)):
        stand_ins["hashlib"] = types.ModuleType("hashlib")  # not imported, or not run yet
        stand_ins["hashlib"].md5 = md5  # type: ignore[attr-defined]
    return stand_ins


def _builtin_md5() -> object:
    """Python's own MD5 (the same digests as OpenSSL's), for Whoosh's term tables' hash:
    hashlib loads OpenSSL's libcrypto (~3 ms of CPU), which a search otherwise never calls."""
    try:
        from _md5 import md5  # type: ignore[import-not-found]
    except ImportError:  # an interpreter built without it
        return None
    return md5


def _swapped(stand_ins: dict[str, types.ModuleType]) -> dict[str, types.ModuleType | None]:
    """Put `stand_ins` in `sys.modules`; return what they replaced (a module not run yet)."""
    replaced = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    return replaced


def _restored(
    stand_ins: dict[str, types.ModuleType], replaced: dict[str, types.ModuleType | None]
) -> None:
    for name, stand_in in stand_ins.items():
        if sys.modules.get(name) is stand_in:
            before = replaced[name]
            if before is None:
                del sys.modules[name]
            else:
                sys.modules[name] = before


class _WithStandIns:
    """A loader running another with stand-ins in `sys.modules` (and only while it runs)."""

    def __init__(self, loader: Any, query: bool) -> None:
        self.loader = loader
        self.query = query

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        stand_ins = _stand_ins(self.query)
        replaced = _swapped(stand_ins)
        try:
            self.loader.exec_module(module)
        finally:
            _restored(stand_ins, replaced)


class _QueryFinder:
    """Finds `whoosh.query` (imported by whoosh.searching, reader look-ups, tests; never by a
    one-shot search) for the import system, loading it with its stand-ins; once."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name != "whoosh.query":
            return None
        from importlib.machinery import PathFinder

        if _QueryFinder in sys.meta_path:
            sys.meta_path.remove(_QueryFinder)
        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _WithStandIns(spec.loader, query=True)  # type: ignore[assignment]
        return spec


def _import_whoosh() -> None:
    """Import Whoosh without imports it makes and memstore never uses, a third of the
    cost of a search process's imports before this: `urllib.request` (for a download
    helper; it brings http, ssl and email), `asyncio` (the `cached_property` package's
    support for coroutines), `html` (for highlighting), OpenSSL's MD5 (Python's own gives
    the same digests) and the English word forms of `Variations` queries (six large
    patterns compiled, ~5 ms). Stand-ins are in `sys.modules` only while Whoosh imports.
    `whoosh.query` (~4 ms: every query class), which reading an index does not need, is
    imported when something first asks for it, with its own stand-in (_QueryFinder)."""
    stand_ins = _stand_ins(query=False)
    replaced = _swapped(stand_ins)
    try:
        import whoosh.compat
        import whoosh.filedb.filetables
        import whoosh.reading  # noqa: F401
    finally:
        _restored(stand_ins, replaced)
    if "whoosh.query" not in sys.modules and _QueryFinder not in sys.meta_path:
        sys.meta_path.insert(0, _QueryFinder)


_import_whoosh()

from .damage import SearchIndexError  # noqa: E402
from .engine import SearchIndex  # noqa: E402
from .entities import extract_entities  # noqa: E402

# roomy_cache: large writes' page cache, the catalog's manifest's too (not in __all__)
from .entity_table import (  # noqa: E402
    connect_read_only,
    document_entities,
    most_shared,
    roomy_cache,  # noqa: F401
)

# The process pool (index/parts.py) and the part it writes, importable for the catalog's
# indexers only: not in __all__.
from .parts import as_helper, shared, usable_cores  # noqa: F401, E402
from .query import Query, terms  # noqa: E402
from .schema import Document, IndexHit, Part  # noqa: E402
from .typos import StandIn  # noqa: E402
from .writer import write_part  # noqa: F401, E402

__all__ = [
    "Document",
    "IndexHit",
    "Part",
    "Query",
    "SearchIndex",
    "SearchIndexError",
    "StandIn",
    "connect_read_only",
    "document_entities",
    "extract_entities",
    "most_shared",
    "terms",
]
