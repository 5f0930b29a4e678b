"""The search engine: Whoosh BM25F over documents plus an entity table. Knows nothing of files.

Documents and a query in, hits out: `SearchIndex.open(folder)`, `apply(documents)`,
`search(Query.of(text))`. The Whoosh patches (`_patches`) and the process pool that shares
a fresh build are not part of it.
"""

import sys
import types


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


def _import_whoosh() -> None:
    """Import Whoosh without imports it makes and memstore never uses, a third of the
    cost of a search process's imports before this: `urllib.request` (for a download
    helper; it brings http, ssl and email), `asyncio` (the `cached_property` package's
    support for coroutines) and the English word forms of `Variations` queries (six
    large patterns compiled, ~5 ms). Stand-ins are in `sys.modules` only while Whoosh
    imports."""
    stand_ins = {}
    if "whoosh.lang.morph_en" not in sys.modules:
        stand_ins["whoosh.lang.morph_en"] = types.ModuleType("whoosh.lang.morph_en")
        stand_ins["whoosh.lang.morph_en"].variations = _variations  # type: ignore[attr-defined]
    if "urllib.request" not in sys.modules:
        stand_ins["urllib.request"] = types.ModuleType("urllib.request")
        stand_ins["urllib.request"].urlretrieve = _no_download  # type: ignore[attr-defined]
    if "cached_property" not in sys.modules:
        stand_ins["cached_property"] = types.ModuleType("cached_property")
        stand_ins["cached_property"].cached_property = _CachedProperty  # type: ignore[attr-defined]
    sys.modules.update(stand_ins)
    try:
        import whoosh.compat
        import whoosh.query
        import whoosh.reading  # noqa: F401
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


_import_whoosh()

from .damage import SearchIndexError  # noqa: E402
from .engine import SearchIndex  # noqa: E402
from .entities import extract_entities  # noqa: E402
from .entity_table import connect_read_only, document_entities, most_shared  # noqa: E402

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
