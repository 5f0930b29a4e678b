"""The search engine: Whoosh BM25F over documents plus an entity table. Knows nothing of files."""

from index.engine import Document, IndexHit, SearchIndex, SearchIndexError
from index.entities import extract_entities

__all__ = ["Document", "IndexHit", "SearchIndex", "SearchIndexError", "extract_entities"]
