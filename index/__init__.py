"""The search engine: Whoosh BM25F over documents plus an entity table. Knows nothing of files.

Documents and a query in, hits out: `SearchIndex.open(folder)`, `apply(documents)`,
`search(Query.of(text))`. The Whoosh patches (`_patches`) and the process pool that shares
a fresh build are not part of it.
"""

from .damage import SearchIndexError

# as_helper, shared, usable_cores and write_part are the process pool, importable for the
# catalog's indexers only and not in __all__ (issue 37 moves the pool to index/parts.py).
from .engine import SearchIndex, as_helper, shared, usable_cores, write_part  # noqa: F401
from .entities import extract_entities
from .entity_table import connect_read_only, document_entities, most_shared
from .query import Query, terms
from .schema import Document, IndexHit, Part
from .typos import StandIn

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
