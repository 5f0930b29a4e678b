"""The search engine: Whoosh BM25F over documents plus an entity table. Knows nothing of files."""

from .analysis import make_analyzer, query_terms
from .engine import (
    Document,
    IndexHit,
    Part,
    SearchIndex,
    SearchIndexError,
    connect_read_only,
    document_entities,
    write_part,
)
from .entities import extract_entities
from .parts import as_helper, shared, usable_cores

__all__ = [
    "Document",
    "IndexHit",
    "Part",
    "SearchIndex",
    "SearchIndexError",
    "as_helper",
    "connect_read_only",
    "document_entities",
    "extract_entities",
    "shared",
    "terms",
    "usable_cores",
    "write_part",
]

_ANALYZER = None


def terms(text: str) -> set[str]:
    """Return the distinct index terms of `text` (the same analysis search uses)."""
    global _ANALYZER
    if _ANALYZER is None:
        _ANALYZER = make_analyzer()
    return set(query_terms(_ANALYZER, text))
