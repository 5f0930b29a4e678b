"""Whoosh BM25F over documents (content + keywords) with stored fields, and its entity table."""

from __future__ import annotations

import contextlib
import gc
import heapq
import os
import pickle
import shutil
import sqlite3
import struct
import time
import warnings
import zlib
from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import chain, islice
from math import log
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.fields import ID, STORED, TEXT, Schema
from whoosh.filedb.filestore import StorageError
from whoosh.filedb.filetables import FileFormatError
from whoosh.query import Prefix, Term
from whoosh.reading import SegmentReader, TermNotFound
from whoosh.writing import LockError

from .analysis import make_analyzer, query_terms, term_sources
from .bulk import TermWriter
from .entities import extract_entities
from .scoring import (
    SCORED_FIELDS,
    LiveStats,
    PostingCache,
    TermQuery,
    live_field_lengths,
    read_postings,
    score,
    segment_id,
)
from .storage import read_in_place
from .typos import StandIn, max_distance, near_terms, nearest_surface, ranked

read_in_place()

BM25_B = 0.3  # length normalization (Whoosh's default is 0.75; docs/retrieval.md)
BM25_K1 = 1.2  # term-frequency saturation (Whoosh's default)
KEYWORD_BOOST = 0.6  # keywords count, but below the text a person or agent wrote
EXPANSION_BOOST = 0.3  # feedback terms weigh a third of the query's own
EXPANSION_MAX_DF = 0.05  # feedback terms must occur in at most 5% of documents
COMMON_TERM_MIN = 1000  # above this many documents an any-word query keeps …
ANY_TERM_LIMIT = 3  # … only its rarest terms (small vaults keep every term)
MERGE_MAX_DOCS = 500  # a commit merges segments up to this size; larger ones on compact()
MERGE_TIER = 6  # small segments merge six of a size at a time (_merge_small_segments)
COMPACT_SEGMENTS = 8  # more large segments than this and the long-running shells compact
CACHE_QUERIES = 1000  # queries whose stand-ins are kept for the index version
MAX_STAND_INS = 8  # unknown terms of one query looked at for a stand-in
CACHE_ENTITY_ROWS = 200_000  # entity rows' keys kept across look-ups (~10 MB at most)
# Stored documents kept per segment (~1 KB each: ~16 MB): a common word ties many at the
# last place, and each tied one is read (~40 µs) to break the tie by key.
CACHE_DOCUMENTS = 16_000
# Anything Whoosh raises when its files are damaged: a crash mid-commit or stray bytes
# leave any of these (and a bare Exception, see _guard).
_DAMAGE = (
    whoosh_index.IndexError,
    OSError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    TypeError,
    OverflowError,
    struct.error,
    zlib.error,
    pickle.UnpicklingError,
    FileFormatError,
    StorageError,
    TermNotFound,
)


class SearchIndexError(Exception):
    """The index cannot be opened, read or written (it may be damaged or locked)."""


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


def _schema() -> Schema:
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
        source=STORED(),
        created=STORED(),
        seen=STORED(),
    )


def _document(fields: dict[str, Any]) -> Document:
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


def _fields(doc: Document) -> dict[str, Any]:
    return {
        "key": doc.key,
        "id": doc.id,
        "workspace": doc.workspace,
        "kind": doc.kind,
        "hash": doc.hash,
        "content": doc.content,
        "keywords": "\n".join(doc.keywords),
        "source": doc.source,
        "created": doc.created,
        "seen": doc.seen,
    }


class SearchIndex:
    """A Whoosh index and an sqlite entity table under one folder."""

    def __init__(self, root: Path, ix: Any, db: sqlite3.Connection) -> None:
        self.root = root
        self._ix = ix
        self._db = db
        self._analyzer = make_analyzer()
        self._searcher: Any = None
        self._stats: LiveStats | None = None
        self._postings = PostingCache()
        self.any_term_limit = ANY_TERM_LIMIT  # an any-word query's terms kept in a large index
        self.keeps_entities = True  # an index nobody asks for entities skips extracting them
        # An index of few terms across many segments keeps them in memory for typo walks
        # (one walk instead of one per segment and field; see _term_lookup).
        self.holds_terms = False
        self._segment_terms: dict[str, frozenset[str]] = {}
        self._term_table: tuple[tuple[str, ...], list[str]] = ((), [])
        self._frequencies: dict[tuple[str, str], int] = {}  # for the current searcher
        self._stand_ins: dict[tuple[str, str], StandIn | None] = {}  # for the current searcher
        # query text → its terms with stand-ins in place, and the stand-ins
        self._resolved: dict[str, tuple[list[str], tuple[StandIn, ...]]] = {}
        self._entity_cache: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._entity_sets: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {}
        self._entity_cache_size = 0
        self._entity_version: tuple[int, int] | None = None
        self._leaves: list[tuple[int, str]] = []  # (first document number, segment id)
        self._documents: OrderedDict[tuple[str, int], Document] = OrderedDict()
        self._held_terms: OrderedDict[tuple[str, str, tuple[str, ...]], frozenset[str]] = (
            OrderedDict()
        )

    # --- lifecycle ------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path, *, create: bool = True) -> SearchIndex:
        """Open the index under `root`, creating it if missing and allowed.

        Raises SearchIndexError when it is damaged: unreadable, or missing a part (a table
        of contents, the entity table) that an index holding documents always has.
        """
        whoosh_dir = root / "whoosh"
        entities = root / "entities.sqlite"
        # Not whoosh's exists_in(): it opens the whole index once more just to say yes.
        with _guard(root, "opened"):
            if any(whoosh_dir.glob("_MAIN_*.toc")):
                ix = _open_whoosh(whoosh_dir)
                if not entities.is_file():
                    raise SearchIndexError(f"index at {root} has lost its entity table")
            elif create and not whoosh_dir.exists():
                whoosh_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                ix = whoosh_index.create_in(str(whoosh_dir), _schema())
            elif whoosh_dir.exists():
                raise SearchIndexError(f"index at {root} has lost its table of contents")
            else:
                raise SearchIndexError(f"no index at {root}")
            if entities.is_file() and not os.access(root, os.W_OK):
                db = connect_read_only(entities)  # a read-only vault can still be searched
            else:
                db = sqlite3.connect(
                    entities, timeout=10, isolation_level=None, check_same_thread=False
                )
                try:
                    _create_tables(db)
                except sqlite3.Error:
                    db.close()
                    raise
        return cls(root, ix, db)

    @staticmethod
    def quarantine(root: Path) -> Path:
        """Move a damaged index aside (kept for inspection) and return where it went."""
        stamp = time.strftime("%Y%m%dT%H%M%S")
        target = root.with_name(f"{root.name}.damaged-{stamp}")
        if os.path.lexists(target):  # two in one second, or another process's
            target = root.with_name(f"{root.name}.damaged-{stamp}-{os.getpid()}-{time.time_ns()}")
        with contextlib.suppress(FileNotFoundError):  # another process moved it first
            os.rename(root, target)
        return target

    @staticmethod
    def delete(root: Path) -> None:
        """Remove the index folder entirely (or a file in its place)."""
        if root.is_dir() and not root.is_symlink():
            shutil.rmtree(root, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                root.unlink()

    def close(self) -> None:
        """Release the searcher and the database."""
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        self._db.close()

    def take_over(self, other: SearchIndex) -> None:
        """Close this index and become `other` (a rebuilt one): references stay valid."""
        with contextlib.suppress(*_DAMAGE, sqlite3.Error):  # it is damaged: close what closes
            self.close()
        self.__dict__.update(other.__dict__)

    # --- reading --------------------------------------------------------------------

    def _reader(self) -> Any:
        try:
            # Not Searcher.refresh(): it reuses segment readers by segment id, so a commit
            # that only deletes documents stays invisible to the refreshed searcher.
            if self._searcher is not None and not self._searcher.up_to_date():
                self._searcher.close()
                self._searcher = None
            if self._searcher is None:
                searcher = self._ix.searcher()
                self._stats = LiveStats(searcher.reader(), self._lengths(searcher))
                leaves = searcher.reader().leaf_readers()
                self._postings.forget_except(r for r, _ in leaves)
                self._leaves = [(base, segment_id(r)) for r, base in leaves if r.doc_count_all()]
                live = {segment for _, segment in self._leaves}
                for gone in [k for k in self._documents if k[0] not in live]:
                    del self._documents[gone]
                self._frequencies = {}
                self._stand_ins = {}
                self._resolved = {}
                self._searcher = searcher
        except Exception as err:
            _raise_if_damage(err, self.root)
            raise
        return self._searcher

    def _lengths(self, searcher: Any) -> dict[str, int]:
        # Summing lengths costs ~10 ms per field at 10k documents: do it once per index
        # version, shared by every process through the sqlite table.
        name = f"live-lengths@{searcher.reader().generation()}"
        cached = self.get_meta(name)
        if cached:
            return {f: int(v) for f, v in zip(SCORED_FIELDS, cached.split(","), strict=True)}
        lengths = live_field_lengths(searcher.reader())
        # A read-only vault just recomputes next time; a damaged table showed in get_meta.
        with contextlib.suppress(sqlite3.OperationalError):
            self._db.execute("DELETE FROM meta WHERE name LIKE 'live-lengths@%'")
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [name, ",".join(str(lengths[f]) for f in SCORED_FIELDS)],
            )
        return lengths

    def search(
        self,
        text: str,
        *,
        workspaces: Collection[str] | None = None,
        limit: int = 5,
        any_term: bool = False,
        expansion: Collection[str] = (),
        typos: bool = False,
        coverage: bool = False,
    ) -> list[IndexHit]:
        """Return the best documents for `text`: all terms must match unless `any_term`.

        With `typos`, a term no document holds is searched as its stand-in (`stand_ins`).
        With `coverage`, each hit says what `coverage` would (counted from the postings the
        search read, not from the document's text).
        """
        searcher = self._reader()
        terms = self._terms(text, typos)
        if not terms or limit <= 0:
            return []
        wanted = len(set(terms))
        if any_term:
            terms = self._selective(terms)
        # The postings of terms a large index's any-word search leaves out are not read:
        # coverage then reads each hit's text (`coverage`).
        counted = coverage and len(set(terms)) == wanted
        query = TermQuery(
            tuple(terms),
            require_all=not any_term,
            extra=tuple(t for t in expansion if t not in terms),
            extra_boost=EXPANSION_BOOST,
        )
        assert self._stats is not None  # set with the searcher
        held: dict[int, int] | None = {} if counted else None
        try:
            best = score(
                searcher.reader(),
                self._stats,
                self._postings,
                query,
                b=BM25_B,
                k1=BM25_K1,
                allowed=workspaces or None,
                limit=limit,
                held=held,
            )
            hits = [
                IndexHit(
                    self._stored(searcher, n),
                    value,
                    None if held is None else round(held[n] / wanted, 4),
                )
                for value, n in best
            ]
            if coverage and held is None:
                hits = [
                    replace(h, coverage=self.coverage(h.document, text, typos=typos)) for h in hits
                ]
        except Exception as err:
            _raise_if_damage(err, self.root)
            raise
        # Ties are broken by key, not by document number, so a rebuilt index returns the
        # same order as the one it replaces.
        hits.sort(key=lambda h: (-round(h.score, 6), h.document.key))
        return hits[:limit]

    def _stored(self, searcher: Any, number: int) -> Document:
        """Return the stored document `number` of the current searcher, kept per segment (a
        segment's documents never change; a deleted one is never asked for)."""
        at = bisect_right(self._leaves, (number, "\uffff")) - 1
        base, segment = self._leaves[at] if at >= 0 else (0, "")
        key = (segment, number - base)
        found = self._documents.get(key)
        if found is not None:
            self._documents.move_to_end(key)
            return found
        found = _document(searcher.stored_fields(number))
        self._documents[key] = found
        if len(self._documents) > CACHE_DOCUMENTS:
            self._documents.popitem(last=False)
        return found

    def _frequency(self, fieldname: str, term: str) -> int:
        """Return how many documents hold `term` (Whoosh's count, deleted ones included).

        The caller has called _reader() in this operation (which empties the cache when the
        index changed); Whoosh asks every segment each time, ~10 µs a term.
        """
        key = (fieldname, term)
        if key not in self._frequencies:
            with _guard(self.root, "read"):
                self._frequencies[key] = self._searcher.reader().doc_frequency(fieldname, term)
        return self._frequencies[key]

    def _selective(self, terms: list[str]) -> list[str]:
        """In a large vault, keep an any-word query to its few rarest terms.

        Terms most documents contain add almost nothing to a BM25 ranking (their idf is near
        zero), and their long posting lists are most of the query's cost: above
        COMMON_TERM_MIN documents the query keeps its `any_term_limit` (default
        ANY_TERM_LIMIT) rarest terms.
        """
        # The searcher of this search, not a fresh look: another process's commit between
        # would close the searcher the search goes on with (ReaderClosed, seen live).
        if self._searcher is None:
            self._reader()
        if self._searcher.reader().doc_count() <= COMMON_TERM_MIN:
            return terms
        df = {t: self._frequency("content", t) + self._frequency("keywords", t) for t in terms}
        kept = set(sorted(terms, key=lambda t: (df[t], t))[: self.any_term_limit])
        return [t for t in terms if t in kept]

    def expansion_terms(
        self, documents: list[Document], exclude: Collection[str], count: int
    ) -> list[str]:
        """Return the terms most characteristic of `documents` (tf × idf), for feedback."""
        reader = self._reader()
        total = max(reader.doc_count(), 1)
        weights: dict[str, float] = {}
        common = max(EXPANSION_MAX_DF * total, 5)
        for doc in documents:
            for term in query_terms(self._analyzer, doc.content):
                if term in exclude or len(term) < 3:
                    continue
                df = self._frequency("content", term)
                if df > common:
                    continue  # a common word says little, and costs a long posting list
                weights[term] = weights.get(term, 0.0) + log((total + 1) / (df + 1))
        return sorted(weights, key=lambda t: (-weights[t], t))[:count]

    def coverage(self, doc: Document, text: str, *, typos: bool = False) -> float:
        """Return the share of `text`'s terms (with `typos`, stand-ins for unknown ones)
        that `doc` contains."""
        wanted = set(self._terms(text, typos))
        return self._coverage(doc, wanted) if wanted else 0.0

    def coverage_of(self, doc: Document, terms: Collection[str]) -> float:
        """Return the share of `terms` (index terms, not text) that `doc` contains."""
        return self._coverage(doc, set(terms)) if terms else 0.0

    def term_frequencies(self, text: str, *, typos: bool = False) -> dict[str, int]:
        """Return how many documents hold each of `text`'s terms (with `typos`, stand-ins
        for unknown ones), in content or keywords, as Whoosh counts them."""
        self._reader()
        return {
            term: self._frequency("content", term) + self._frequency("keywords", term)
            for term in self._terms(text, typos)
        }

    def _coverage(self, doc: Document, wanted: set[str]) -> float:
        return round(len(wanted & self._held(doc)) / len(wanted), 4)

    def _held(self, doc: Document) -> frozenset[str]:
        """Return the terms `doc`'s text and keywords hold, kept per document version (a
        weak hit's coverage analysed its whole text on every query: a code chunk's ~0.5 ms)."""
        key = (doc.key, doc.content, doc.keywords)  # exact: a document without a hash too
        found = self._held_terms.get(key)
        if found is not None:
            self._held_terms.move_to_end(key)
            return found
        text = f"{doc.content}\n{' '.join(doc.keywords)}"
        found = frozenset(query_terms(self._analyzer, text))
        self._held_terms[key] = found
        if len(self._held_terms) > CACHE_DOCUMENTS:
            self._held_terms.popitem(last=False)
        return found

    def unknown_terms(self, text: str, *, typos: bool = False) -> int:
        """Return how many of `text`'s terms no document contains (with `typos`, those
        without a stand-in)."""
        self._reader()
        return sum(1 for term in self._terms(text, typos) if not self._known(term))

    def _known(self, term: str) -> bool:
        return bool(self._frequency("content", term) or self._frequency("keywords", term))

    def document_count(self) -> int:
        """Return how many live documents the current searcher sees (no look at the disk)."""
        if self._stats is None:
            self._reader()
        assert self._stats is not None  # set with the searcher
        return self._stats.count

    def _terms(self, text: str, typos: bool) -> list[str]:
        """Return the query terms of `text`, each unknown one replaced by its stand-in (with
        `typos`; against the searcher of this operation, kept for its index version)."""
        if not typos:
            return query_terms(self._analyzer, text)
        return self._resolve(text)[0]

    def stand_ins(self, text: str) -> list[StandIn]:
        """Return a stand-in for each term of `text` that no document holds and that is
        near a term some document does: typo tolerance (index/typos.py). A search of `text`
        just made has them at hand (no second look at the index)."""
        if text not in self._resolved:
            self._reader()
        return list(self._resolve(text)[1])

    def _resolve(self, text: str) -> tuple[list[str], tuple[StandIn, ...]]:
        """Return `text`'s terms with stand-ins in place, and the stand-ins."""
        if text not in self._resolved:
            terms = query_terms(self._analyzer, text)
            found = self._stand_ins_of(terms, term_sources(self._analyzer, text))
            swapped = {s.term: s.stand_in_term for s in found}
            if len(self._resolved) > CACHE_QUERIES:
                self._resolved.clear()
            resolved = list(dict.fromkeys(swapped.get(t, t) for t in terms))
            self._resolved[text] = (resolved, tuple(found))
        return self._resolved[text]

    def _stand_ins_of(self, terms: list[str], sources: dict[str, str]) -> list[StandIn]:
        """Return the stand-ins of the first MAX_STAND_INS unknown `terms` (a pasted log or
        stack trace holds many words no memory does, and is no typo)."""
        if self._searcher is None:
            self._reader()
        found = []
        unknown = [t for t in terms if not self._known(t)]
        for term in unknown[:MAX_STAND_INS]:
            word = sources.get(term, term)
            if (term, word) not in self._stand_ins:
                if len(self._stand_ins) > CACHE_QUERIES:
                    self._stand_ins.clear()
                self._stand_ins[term, word] = self._nearest(term, word)
            best = self._stand_ins[term, word]
            if best is not None:
                found.append(best)
        return found

    def _nearest(self, term: str, word: str) -> StandIn | None:
        """Return the stand-in for unknown `term` (typed as `word`), if a known term is near."""
        edits = max_distance(term)
        if not edits:
            return None
        with _guard(self.root, "read"):
            if self.holds_terms:
                lookups = [self._term_lookup()]
            else:
                lookups = [
                    segment.cursor(field).find
                    for segment, _ in self._searcher.reader().leaf_readers()
                    for field in SCORED_FIELDS
                    if segment.doc_count()
                ]
            near = near_terms(term, edits, lookups)
        frequencies = {
            t: self._frequency("content", t) + self._frequency("keywords", t) for t in near
        }
        for apart, candidate in ranked(term, frequencies):
            surface = nearest_surface(word, self._surfaces(candidate))
            if surface is not None:
                return StandIn(word, term, surface, apart, candidate)
        return None

    def load_terms(self) -> None:
        """Read now the terms `holds_terms` keeps, not in the first typo walk."""
        if self.holds_terms:
            self._reader()
            with _guard(self.root, "read"):
                self._term_lookup()

    def _term_lookup(self) -> Callable[[str], str | None]:
        """Return a look-up of the first term at or after a word, over every segment's
        scored fields at once, from a sorted list kept per index version (each segment's
        terms read once: segments never change)."""
        leaves = [
            (segment, segment_id(segment))
            for segment, _ in self._searcher.reader().leaf_readers()
            if segment.doc_count()
        ]
        ids = tuple(sid for _, sid in leaves)
        if self._term_table[0] != ids:
            kept: dict[str, frozenset[str]] = {}
            for segment, sid in leaves:
                terms = self._segment_terms.get(sid)
                if terms is None:
                    terms = frozenset(
                        term.decode("utf-8") if isinstance(term, bytes) else term
                        for field in SCORED_FIELDS
                        for term in segment.lexicon(field)
                    )
                kept[sid] = terms
            self._segment_terms = kept
            self._term_table = (ids, sorted(frozenset[str]().union(*kept.values())))
        table = self._term_table[1]

        def lookup(word: str) -> str | None:
            at = bisect_left(table, word)
            return table[at] if at < len(table) else None

        return lookup

    def _surfaces(self, term: str, documents: int = 3) -> set[str]:
        """Return the words that analyze to `term` in a few of the documents holding it."""
        reader = self._searcher.reader()
        found: set[str] = set()
        with _guard(self.root, "read"):
            for field in SCORED_FIELDS:
                if not reader.doc_frequency(field, term):
                    continue
                postings = reader.postings(field, term)
                for _ in range(documents):
                    if not postings.is_active():  # past the end, or only replaced documents
                        break
                    text = reader.stored_fields(postings.id()).get(field) or ""
                    found.update(
                        w for t, w in term_sources(self._analyzer, text).items() if t == term
                    )
                    postings.next()
                if found:
                    break
        return found

    def find(self, workspace: str) -> list[Document]:
        """Return the documents of one workspace, by key."""
        searcher = self._reader()
        try:
            hits = searcher.search(Term("workspace", workspace), limit=None)
            return sorted((_document(dict(hit.fields())) for hit in hits), key=lambda d: d.key)
        except Exception as err:
            _raise_if_damage(err, self.root)
            raise

    def get(self, keys: Collection[str]) -> dict[str, Document]:
        """Return the stored documents for `keys` (missing keys are left out)."""
        if not keys:
            return {}
        searcher = self._reader()
        found = {}
        try:
            # One term lookup per key: a query OR-ing hundreds of keys is far slower in Whoosh.
            for key in keys:
                number = searcher.document_number(key=key)
                if number is not None:
                    found[key] = _document(searcher.stored_fields(number))
        except Exception as err:
            _raise_if_damage(err, self.root)
            raise
        return found

    def keys_with_prefix(self, prefix: str) -> list[str]:
        """Return the keys of the live documents whose key starts with `prefix`."""
        searcher = self._reader()
        with _guard(self.root, "read"):
            if not prefix:
                return sorted(fields["key"] for fields in searcher.all_stored_fields())
            results = searcher.search(Prefix("key", prefix), limit=None)
            return sorted(hit["key"] for hit in results)

    def version(self) -> int:
        """Return a number that changes whenever the index does (for caches)."""
        with _guard(self.root, "read"):
            return int(self._ix.latest_generation())

    def documents(self) -> list[Document]:
        """Return every document (for stats and consistency checks)."""
        searcher = self._reader()
        with _guard(self.root, "read"):
            stored = [_document(fields) for fields in searcher.all_stored_fields()]
        return sorted(stored, key=lambda d: d.key)

    def count(self) -> int:
        """Return the number of documents (from the table of contents alone: cheap)."""
        with _guard(self.root, "read"):
            return sum(int(segment.doc_count()) for segment in self._ix._segments())

    def verify(self) -> None:
        """Read every posting list, field length, stored field and entity row (slow: doctor).

        Raises SearchIndexError naming the damage; a cheap open does not find damage in
        the middle of a segment, which a search may meet only later.
        """
        searcher = self._reader()
        try:
            for segment, _ in searcher.reader().leaf_readers():
                _read_segment(segment)
            for _fields in searcher.all_stored_fields():
                pass
            check = self._db.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise SearchIndexError(f"entity table is damaged ({' '.join(check.split())})")
            # Stray bytes in a posting list may still decode: the checksums tell.
            for name, size, crc in self._db.execute("SELECT name, size, crc FROM segments"):
                path = self.root / "whoosh" / name
                if path.exists() and _checksum(path) != (size, crc):
                    raise SearchIndexError(f"segment {name} does not match its checksum")
        except Exception as err:  # reading all of a damaged index can raise anything
            detail = str(err) if isinstance(err, SearchIndexError) else _name(err)
            raise SearchIndexError(f"index at {self.root} is damaged ({detail})") from err

    def size_bytes(self) -> int:
        """Return the bytes the index takes on disk."""
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())

    def entity_keys(self, entities: Iterable[str]) -> dict[str, int]:
        """Return, per document key, how many of `entities` it mentions."""
        wanted = sorted({e.lower() for e in entities})
        if not wanted:
            return {}
        with _guard(self.root, "read"):
            keys_of = self._entity_rows(wanted)
        # Counter counts in C: an entity such as a person's @name has thousands of rows
        return dict(Counter(chain.from_iterable(keys_of[e] for e in wanted)))

    def shared_with(
        self, entities: Iterable[str], limit: int, exclude: Collection[str]
    ) -> list[str]:
        """Return the `limit` keys, none of `exclude`, that mention the most of `entities`,
        ties by key: sorted(entity_keys(...), key=(-count, key))[:limit], without counting
        each of the thousands of keys a common entity (a person's @name) has.

        A key mentioning two or more of them is in the intersection of two entities' key
        sets; the rest come in key order from the entities' sorted key lists.
        """
        wanted = sorted({e.lower() for e in entities})
        if not wanted or limit < 1:
            return []
        with _guard(self.root, "read"):
            lists = list(self._entity_rows(wanted).values())
        sets = [self._key_set(e, keys) for e, keys in zip(wanted, lists, strict=True)]
        # A key in c of the sets is in c(c-1)/2 of their pairwise intersections: counting
        # those (in C) ranks the keys as counting every row would.
        pairs = Counter(
            chain.from_iterable(a & b for i, a in enumerate(sets) for b in sets[i + 1 :])
        )
        for key in exclude:
            pairs.pop(key, None)
        ranked = most_shared(pairs, limit)
        if len(ranked) < limit:
            # Each remaining key is in one list only, and every list is sorted.
            once = (k for k in heapq.merge(*lists) if k not in pairs and k not in exclude)
            ranked += islice(once, limit - len(ranked))
        return ranked

    def _key_set(self, entity: str, keys: tuple[str, ...]) -> frozenset[str]:
        """Return the set of an entity's keys (kept while its row list stays cached)."""
        found = self._entity_sets.get(entity)
        if found is None or found[0] is not keys:
            found = (keys, frozenset(keys))
            self._entity_sets[entity] = found
        return found[1]

    def _entity_rows(self, wanted: list[str]) -> dict[str, tuple[str, ...]]:
        """Return the keys of each entity's rows in key order, from the table or the cache."""
        # The cache holds while no connection changes the table: data_version counts the
        # others' commits, total_changes this one's.
        version = (self._db.execute("PRAGMA data_version").fetchone()[0], self._db.total_changes)
        cache = self._entity_cache
        if version != self._entity_version:
            cache.clear()
            self._entity_sets.clear()
            self._entity_cache_size = 0
            self._entity_version = version
        missing = [e for e in wanted if e not in cache]
        if missing:
            rows: dict[str, list[str]] = {e: [] for e in missing}
            marks = ",".join("?" * len(missing))
            query = f"SELECT entity, key FROM entities WHERE entity IN ({marks}) ORDER BY key"
            for entity, key in self._db.execute(query, missing):
                rows[entity].append(key)
            for entity, keys in rows.items():
                cache[entity] = tuple(keys)
                self._entity_cache_size += len(keys) + 1
        found = {e: cache[e] for e in wanted}
        for entity in wanted:
            cache.move_to_end(entity)
        while self._entity_cache_size > CACHE_ENTITY_ROWS and len(cache) > len(wanted):
            gone, evicted = cache.popitem(last=False)
            self._entity_sets.pop(gone, None)
            self._entity_cache_size -= len(evicted) + 1
        return found

    def entities_of(self, key: str) -> list[tuple[str, str]]:
        """Return the (entity, kind) pairs recorded for one document."""
        with _guard(self.root, "read"):
            rows = self._db.execute(
                "SELECT entity, kind FROM entities WHERE key = ? ORDER BY 1", [key]
            ).fetchall()
        return [(entity, kind) for entity, kind in rows]

    def get_meta(self, name: str) -> str | None:
        """Return a stored metadata value."""
        with _guard(self.root, "read"):
            row = self._db.execute("SELECT value FROM meta WHERE name = ?", [name]).fetchone()
        return None if row is None else str(row[0])

    # --- writing --------------------------------------------------------------------

    def apply(
        self,
        upserts: Iterable[Document],
        deletes: Iterable[str] = (),
        *,
        meta: dict[str, str] | None = None,
        limitmb: int = 128,
        new: Collection[str] = (),
        entities: Mapping[str, list[tuple[str, str]]] | None = None,
        parts: Callable[[], Iterable[Part]] = tuple,
    ) -> None:
        """Add or replace `upserts` and drop `deletes` (keys) in one commit.

        `upserts` is read as it is indexed (a generator may still be reading files).
        `new` names keys the caller knows the index does not hold: they are added without
        looking for an old version (at 100,000 documents the look-up is most of an update).
        `entities` holds `extract_entities` already run for some keys (filled by the time
        the last document is read). `parts` gives, once the last document is read, the
        shares of a fresh build other processes indexed (`write_part`): their segments
        join this commit as they are, and `entities` holds theirs too.
        """
        docs: list[Document] = []
        deletes = list(deletes)
        adopted: list[Part] = []
        writer = self._writer(limitmb)
        try:
            for key in deletes:
                writer.delete_by_term("key", key)
            for doc in upserts:
                docs.append(doc)
                if doc.key in new:
                    writer.add_document(**_fields(doc))
                else:
                    writer.update_document(**_fields(doc))
            adopted = list(parts())
            for part in adopted:
                self._move_in(part)
            segments = [part.segment for part in adopted]
            writer.commit(mergetype=lambda w, s: [*_merge_small_segments(w, s), *segments])
        except Exception as err:
            with contextlib.suppress(Exception):  # the damage may break cancelling too
                writer.cancel()
            _raise_if_damage(err, self.root, "written")
            raise
        keys = [key for part in adopted for key in part.keys]
        self._write_entities(docs, deletes, meta or {}, new, entities or {}, keys)

    def _move_in(self, part: Part) -> None:
        """Move a part's segment files beside this index's own (the commit lists them)."""
        prefix = f"{part.segment.segment_id()}."
        names = [name for name in os.listdir(part.folder) if name.startswith(prefix)]
        if not names:
            raise SearchIndexError(f"index part at {part.folder} has no segment files")
        for name in names:
            os.replace(part.folder / name, self.root / "whoosh" / name)

    def _writer(self, limitmb: int = 128, *, merging_all: bool = False) -> Any:
        """Return a writer holding the index's lock: a `TermWriter`, or Whoosh's own when
        the commit merges every segment (its pool spills to disk past `limitmb`)."""
        try:
            if merging_all:
                return self._ix.writer(timeout=30.0, limitmb=limitmb)
            return TermWriter(self._ix, timeout=30.0, limitmb=limitmb)
        except LockError as err:
            raise SearchIndexError(f"index at {self.root} is locked by another writer") from err
        except Exception as err:
            _raise_if_damage(err, self.root, "written")
            raise

    def segment_count(self) -> int:
        """Return how many segments the index has (each costs a little on every search)."""
        searcher = self._reader()
        with _guard(self.root, "read"):
            leaves = searcher.reader().leaf_readers()
            return sum(1 for reader, _ in leaves if reader.doc_count_all())

    def needs_compacting(self) -> bool:
        """Say whether enough large segments piled up that searches pay for them (small
        ones are kept few by the tiers commits merge them in)."""
        searcher = self._reader()
        with _guard(self.root, "read"):
            leaves = searcher.reader().leaf_readers()
            large = sum(1 for reader, _ in leaves if reader.doc_count_all() > MERGE_MAX_DOCS)
        return large > COMPACT_SEGMENTS

    def compact(self) -> None:
        """Merge every segment into one (seconds at 10,000 documents)."""
        writer = self._writer(merging_all=True)
        try:
            writer.commit(optimize=True)
        except Exception as err:
            with contextlib.suppress(Exception):  # the damage may break cancelling too
                writer.cancel()
            _raise_if_damage(err, self.root, "written")
            raise
        self._write_entities([], [], {})

    def _write_entities(
        self,
        upserts: list[Document],
        deletes: list[str],
        meta: dict[str, str],
        new: Collection[str] = (),
        found: Mapping[str, list[tuple[str, str]]] | None = None,
        adopted: Iterable[str] = (),
    ) -> None:
        db = self._db
        found = found or {}
        try:
            db.execute("BEGIN IMMEDIATE")
            stale = [*deletes, *(d.key for d in upserts if d.key not in new)]
            db.executemany("DELETE FROM entities WHERE key = ?", [[key] for key in stale])
            rows = [
                (doc.key, entity, kind)
                for doc in (upserts if self.keeps_entities else ())
                for entity, kind in (found[doc.key] if doc.key in found else document_entities(doc))
            ]
            if self.keeps_entities:
                rows += [(key, entity, kind) for key in adopted for entity, kind in found[key]]
            db.executemany("INSERT INTO entities (key, entity, kind) VALUES (?, ?, ?)", rows)
            db.executemany(
                "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", sorted(meta.items())
            )
            self._record_checksums()
            db.execute("COMMIT")
        except sqlite3.Error as err:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            raise SearchIndexError(
                f"entity table at {self.root} cannot be written ({_name(err)})"
            ) from err

    def _record_checksums(self) -> None:
        """Checksum each segment file new since the last commit (Whoosh never changes one)."""
        on_disk = {path.name: path for path in (self.root / "whoosh").glob("*.seg")}
        known = {name for (name,) in self._db.execute("SELECT name FROM segments")}
        gone = [[name] for name in known - set(on_disk)]
        self._db.executemany("DELETE FROM segments WHERE name = ?", gone)
        for name in sorted(set(on_disk) - known):
            with contextlib.suppress(FileNotFoundError):  # merged away meanwhile
                size, crc = _checksum(on_disk[name])
                self._db.execute("INSERT INTO segments VALUES (?, ?, ?)", [name, size, crc])


def most_shared(counts: Mapping[str, int], limit: int) -> list[str]:
    """Return the `limit` keys with the highest counts, ties by key: sorted(counts, key=
    (-count, key))[:limit] without a Python key call for each of thousands of keys."""
    ranked: list[str] = []
    for count in sorted(set(counts.values()), reverse=True):
        if len(ranked) >= limit:
            break
        level = [key for key, n in counts.items() if n == count]
        ranked += heapq.nsmallest(limit - len(ranked), level)
    return ranked


def document_entities(doc: Document) -> list[tuple[str, str]]:
    """Return the (entity, kind) pairs the entity table records for a document."""
    return extract_entities(f"{doc.content}\n{' '.join(doc.keywords)}")


def write_part(folder: Path, docs: Iterable[Document], limitmb: int = 128) -> Any | None:
    """Index `docs` into an index of their own under `folder`, as one segment for
    `SearchIndex.apply` to adopt (a fresh build shared by processes); None if none came."""
    folder.mkdir(parents=True, exist_ok=True)
    ix = whoosh_index.create_in(str(folder), _schema())
    writer = TermWriter(ix, limitmb=limitmb)
    try:
        for doc in docs:
            writer.add_document(**_fields(doc))
        writer.commit(merge=False)
    except BaseException:
        with contextlib.suppress(Exception):
            writer.cancel()
        raise
    segments = ix._segments()
    ix.close()
    return segments[0] if segments else None


def _merge_small_segments(writer: Any, segments: list[Any]) -> list[Any]:
    """Merge small segments by tiers: MERGE_TIER segments of about one size (a power of
    MERGE_TIER apart) merge into one of the next, and segments above MERGE_MAX_DOCS merge
    only when asked (`compact`).

    Whoosh's own policy (MERGE_SMALL) folds the smallest segments into the growing one
    every few commits, rewriting a few hundred documents: at 100,000 memories one `add` in
    ten spent 100–300 ms merging. By tiers a document is rewritten once a tier, and one
    commit in twenty rewrites a handful of documents (tests/benchmarks/bench_scale.py).
    """
    tiers: dict[int, list[Any]] = {}
    kept = []
    for segment in segments:
        count = segment.doc_count_all()
        if count > MERGE_MAX_DOCS:
            kept.append(segment)
        else:
            tiers.setdefault(_tier(count), []).append(segment)
    for tier in tiers.values():
        if len(tier) < MERGE_TIER - 1:  # with the segment this commit writes, a tier's worth
            kept += tier
            continue
        for segment in tier:
            reader = SegmentReader(writer.storage, writer.schema, segment)
            writer.add_reader(reader)
            reader.close()
    return kept


def _tier(count: int) -> int:
    """Return how many times MERGE_TIER goes into `count` (0 below MERGE_TIER)."""
    tier = 0
    while count >= MERGE_TIER:
        count //= MERGE_TIER
        tier += 1
    return tier


def _open_whoosh(folder: Path) -> Any:
    # On a damaged table of contents Whoosh leaves the file it was parsing open; it is
    # closed as the error unwinds, and that is not worth a ResourceWarning.
    failure = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            ix = whoosh_index.open_dir(str(folder))
            ix.doc_count()
        except Exception as err:  # a garbled table of contents unpickles into anything
            failure = _name(err)
        gc.collect()  # the traceback is gone: the leaked file closes here, quietly
    if failure:
        raise SearchIndexError(f"index at {folder} cannot be opened ({failure})")
    return ix


def _is_damage(err: BaseException) -> bool:
    # Whoosh raises a bare Exception for some damaged blocks ("Block tag error"): that exact
    # type counts as damage, a subclass of it not (it is a bug of ours, and stays loud).
    return isinstance(err, (*_DAMAGE, sqlite3.DatabaseError)) or type(err) is Exception


def _name(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _raise_if_damage(err: BaseException, root: Path, action: str = "read") -> None:
    """Raise SearchIndexError from `err` when it is what damaged files raise."""
    if isinstance(err, SearchIndexError):
        raise err
    if _is_damage(err):
        raise SearchIndexError(f"index at {root} cannot be {action} ({_name(err)})") from err


@contextlib.contextmanager
def _guard(root: Path, action: str) -> Iterator[None]:
    """Turn what damaged files make Whoosh or sqlite raise into SearchIndexError."""
    try:
        yield
    except Exception as err:  # narrowed by _raise_if_damage; anything else is re-raised
        _raise_if_damage(err, root, action)
        raise


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open an sqlite file in a folder that cannot be written (no WAL, no journal)."""
    uri = f"{path.resolve().as_uri()}?immutable=1"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def _read_segment(segment: Any) -> None:
    """Read every posting list and field length of one segment."""
    for fieldname in segment.indexed_field_names():
        for text in segment.lexicon(fieldname):
            ids, _weights = read_postings(segment, fieldname, text)
            if ids and not 0 <= min(ids) <= max(ids) < segment.doc_count_all():
                raise SearchIndexError(f"a posting list of {text!r} points past the segment")
    for fieldname in SCORED_FIELDS:
        for number in range(segment.doc_count_all()):
            segment.doc_field_length(number, fieldname, 0)


def _checksum(path: Path) -> tuple[int, int]:
    """Return a file's size and CRC-32."""
    crc = size = 0
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return size, crc


def _create_tables(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA journal_mode=WAL")
    # A cache: a power cut may lose the last commit (the count check then rebuilds),
    # never corrupt it; a killed process loses nothing. Saves an fsync per write.
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS entities (key TEXT, entity TEXT, kind TEXT)")
    db.execute("CREATE INDEX IF NOT EXISTS entities_entity ON entities (entity)")
    db.execute("CREATE INDEX IF NOT EXISTS entities_key ON entities (key)")
    db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE IF NOT EXISTS segments (name TEXT PRIMARY KEY, size INT, crc INT)")
