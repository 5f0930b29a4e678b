"""The values the index takes and gives (a document, a hit, a part) and its Whoosh schema."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh.fields import ID, STORED, TEXT, Schema

from .analysis import ExactAnalyzer, make_analyzer
from .scoring import EXACT_FIELD

KEYWORD_BOOST = 0.6  # keywords count, but below the text a person or agent wrote


@dataclass(frozen=True)
class Document:
    """One searchable document; `key` is unique (the caller decides what it means)."""

    key: str
    id: str
    workspace: str
    kind: str
    content: str
    keywords: tuple[str, ...] = ()
    source: str = ""
    created: str = ""
    seen: int = 1
    hash: str = ""


@dataclass(frozen=True)
class Part:
    """A share of a fresh build indexed by another process, for `SearchIndex.apply` to
    adopt: the one segment `write_part` left in `folder`, and the keys it holds."""

    folder: Path
    segment: Any
    keys: tuple[str, ...]


@dataclass(frozen=True)
class IndexHit:
    """A document and its BM25F score."""

    document: Document
    score: float
    # Share of the query's terms the document holds, when the search was asked for it.
    coverage: float | None = None


def make_schema() -> Schema:
    """Return the Whoosh schema of an index: what is searched, what is only stored."""
    analyzer = make_analyzer()
    return Schema(
        key=ID(stored=True, unique=True),
        # id and hash are looked up in the indexer's rows (sqlite), never through postings:
        # indexed, each memory gave the term tables two terms of its own to write.
        id=STORED(),
        workspace=ID(stored=True),
        kind=STORED(),  # never searched: kept, not indexed (no postings to write)
        hash=STORED(),
        # No positions (phrase=False): scoring reads term frequencies only, and positions
        # cost every commit their encoding and the index its size.
        content=TEXT(analyzer=analyzer, stored=True, phrase=False),
        keywords=TEXT(analyzer=analyzer, stored=True, phrase=False, field_boost=KEYWORD_BOOST),
        # Not searched on its own: a query's accented words score here on top of what their
        # folded terms matched (index/scoring.py), so "dấu" ranks "dấu" above "dau". An
        # ASCII text has nothing here (its analyzer returns at once).
        exact=TEXT(analyzer=ExactAnalyzer(), phrase=False),
        source=STORED(),
        created=STORED(),
        seen=STORED(),
    )


def parse_stored(fields: dict[str, Any]) -> Document:
    """Return the document a hit's stored fields hold."""
    keywords = fields.get("keywords") or ""
    return Document(
        key=fields["key"],
        id=fields["id"],
        workspace=fields["workspace"],
        kind=fields["kind"],
        content=fields.get("content", ""),
        keywords=tuple(k for k in keywords.split("\n") if k),
        source=fields.get("source", ""),
        created=fields.get("created", ""),
        seen=int(fields.get("seen", 1)),
        hash=fields.get("hash", ""),
    )


def render_fields(doc: Document) -> dict[str, Any]:
    """Return the fields Whoosh indexes and stores for `doc`."""
    return {
        "key": doc.key,
        "id": doc.id,
        "workspace": doc.workspace,
        "kind": doc.kind,
        "hash": doc.hash,
        "content": doc.content,
        "keywords": "\n".join(doc.keywords),
        EXACT_FIELD: "\n".join((doc.content, *doc.keywords)),
        "source": doc.source,
        "created": doc.created,
        "seen": doc.seen,
    }
