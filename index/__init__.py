"""The search engine: Whoosh BM25F over documents plus an entity table. Knows nothing of files.

Documents and a query in, hits out: `SearchIndex.open(folder)`, `apply(documents)`,
`search(Query.of(text))`. The Whoosh patches (`_patches`) and the process pool that shares
a fresh build are not part of it.
"""

from .damage import SearchIndexError
from .engine import SearchIndex
from .entities import extract_entities
from .entity_table import connect_read_only, document_entities, most_shared

# The process pool (index/parts.py) and the part it writes, importable for the catalog's
# indexers only: not in __all__.
from .parts import as_helper, shared, usable_cores  # noqa: F401
from .query import Query, terms
from .schema import Document, IndexHit, Part
from .typos import StandIn
from .writer import write_part  # noqa: F401

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
