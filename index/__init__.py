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


class _WordForms(types.ModuleType):
    """`whoosh.lang.morph_en` until something uses it: the real module (six large patterns,
    ~5 ms to compile) is imported then, in its place, and answers."""

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_real_word_forms(), name)


def _real_word_forms() -> types.ModuleType:
    import importlib

    if isinstance(sys.modules.get("whoosh.lang.morph_en"), _WordForms):
        del sys.modules["whoosh.lang.morph_en"]
    return importlib.import_module("whoosh.lang.morph_en")


def _variations(word: str) -> object:
    # whoosh.query.Variations' word forms, from the real module (imported on first use)
    return _real_word_forms().variations(word)


def _import_whoosh() -> None:
    """Import Whoosh without imports it makes and memstore never uses, a third of the
    cost of a search process's imports before this: `urllib.request` (for a download
    helper; it brings http, ssl and email) and `asyncio` (the `cached_property` package's
    support for coroutines), stand-ins in `sys.modules` only while Whoosh imports; and
    the English word forms of `Variations` queries (six large patterns compiled, ~5 ms),
    `whoosh.lang.morph_en` standing in until first used. `whoosh.query` and
    `whoosh.searching` are left to whoever uses them: a one-shot search does not
    (index/lean_searcher.py)."""
    if "whoosh.lang.morph_en" not in sys.modules:
        import whoosh.lang

        forms = _WordForms("whoosh.lang.morph_en")
        forms.variations = _variations  # type: ignore[attr-defined]
        sys.modules["whoosh.lang.morph_en"] = whoosh.lang.morph_en = forms
    stand_ins = {}
    if "urllib.request" not in sys.modules:
        stand_ins["urllib.request"] = types.ModuleType("urllib.request")
        stand_ins["urllib.request"].urlretrieve = _no_download  # type: ignore[attr-defined]
    if "cached_property" not in sys.modules:
        stand_ins["cached_property"] = types.ModuleType("cached_property")
        stand_ins["cached_property"].cached_property = _CachedProperty  # type: ignore[attr-defined]
    sys.modules.update(stand_ins)
    try:
        import whoosh.compat
        import whoosh.reading
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
