"""Reading the index: BM25F search over the current searcher, stored documents, look-ups."""

from __future__ import annotations

import contextlib
import mmap
from collections import OrderedDict
from collections.abc import Collection, Iterable
from dataclasses import replace
from math import log
from pathlib import Path
from typing import Any, Literal

from whoosh.reading import MultiReader, SegmentReader, TermNotFound

from . import scoring
from .analysis import query_terms
from .damage import SearchIndexError, describe, guard, raise_if_damage
from .entity_table import EntityTable
from .lean_searcher import ReaderSearcher
from .lexicon import Lexicon
from .query import Query
from .schema import Document, IndexHit, parse_stored
from .scoring import (
    SCORED_FIELDS,
    LiveStats,
    PostingCache,
    TermQuery,
    read_postings,
    score,
    segment_field_lengths,
    segment_id,
)
from .stored import StoredCache
from .typos import StandIn

BM25_B = 0.3  # length normalization (Whoosh's default is 0.75; docs/retrieval.md)
BM25_K1 = 1.2  # term-frequency saturation (Whoosh's default)
EXPANSION_BOOST = 0.3  # feedback terms weigh a third of the query's own
# A query word typed with accents, found as written, adds this share of its BM25 weight in
# the exact field (docs/search.md#languages)
EXACT_BOOST = 0.5
EXPANSION_MAX_DF = 0.05  # feedback terms must occur in at most 5% of documents
COMMON_TERM_MIN = 1000  # above this many documents an any-word query keeps …
ANY_TERM_LIMIT = 3  # … only its rarest terms (small vaults keep every term)
HOLDER_FIELDS = ("content", "keywords")  # a memory "holds" a term in its text or its keywords
# The terms a weak hit's text holds (~600 B each), for its coverage: asked only of the few
# hits a query keeps, so fewer are kept than documents (a miss analyses the text again).
CACHE_HELD_TERMS = 2_000
# The entity table's row of each segment's live field lengths (segment, deleted count):
# a new process after an add sums only the new segment's (all of them, without numpy,
# cost ~50 ms at 100,000 memories).
SEGMENT_LENGTHS = "segment-lengths"


class IndexReader:
    """Searches and look-ups over one Whoosh index, through a searcher kept until the index
    changes, with the caches that live as long as it (statistics, postings, documents)."""

    def __init__(self, root: Path, ix: Any, table: EntityTable, analyzer: Any) -> None:
        self.root = root
        self._ix = ix
        self._table = table
        self._analyzer = analyzer
        self._searcher: Any = None
        self._stats: LiveStats | None = None
        self._postings = PostingCache()
        self.lexicon = Lexicon(root, analyzer)
        self._postings.lacks = self.lexicon.lacks
        self.any_term_limit = ANY_TERM_LIMIT  # an any-word query's terms kept in a large index
        self.stored = StoredCache()  # hits' documents and tied ones' keys, by segment
        self._held_terms: OrderedDict[tuple[str, str, tuple[str, ...]], frozenset[str]] = (
            OrderedDict()
        )
        # live field lengths per (segment id, deleted documents): an add's new index version
        # sums only its new segment's (all of them cost ~0.8 ms at 100,000 memories)
        self._segment_lengths: dict[tuple[str, int], dict[str, int]] = {}

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None

    def searcher(self) -> Any:
        """Return the searcher of the index as it is now (a new one once it changed)."""
        try:
            # Not Searcher.refresh(): it reuses segment readers by segment id, so a commit
            # that only deletes documents stays invisible to the refreshed searcher.
            if self._searcher is not None and not self._searcher.up_to_date():
                previous, self._searcher = self._searcher, None
                self._open_searcher(previous)
            if self._searcher is None:
                self._open_searcher()
        except Exception as err:
            raise_if_damage(err, self.root)
            raise
        return self._searcher

    def _open_searcher(self, previous: Any = None) -> None:
        searcher = None
        if previous is not None:
            searcher = _searcher_reusing(self._ix, previous)
            if searcher is None:
                previous.close()
        if searcher is None and scoring.PLAIN:  # one search: no whoosh.searching, no query
            searcher = ReaderSearcher(self._ix.reader(), self._ix)
        if searcher is None:
            searcher = self._ix.searcher()
        self._stats = LiveStats(searcher.reader(), self._lengths(searcher))
        leaves = searcher.reader().leaf_readers()
        self._postings.forget_except(r for r, _ in leaves)
        self.stored.reset([(base, segment_id(r)) for r, base in leaves if r.doc_count_all()])
        self.lexicon.reset(searcher)
        self._searcher = searcher

    def _current(self) -> Any:
        """Return the searcher this operation already took (a fresh look only when none):
        another process's commit between would close the searcher the operation goes on
        with (ReaderClosed, seen live)."""
        return self._searcher if self._searcher is not None else self.searcher()

    def _lengths(self, searcher: Any) -> dict[str, int]:
        # Summing lengths costs ~10 ms per field at 10k documents: do it once per index
        # version, shared by every process through the sqlite table.
        name = f"live-lengths@{searcher.reader().generation()}"
        cached = self._table.get_meta(name)
        if cached:
            return {f: int(v) for f, v in zip(SCORED_FIELDS, cached.split(","), strict=True)}
        if not self._segment_lengths:  # a new process: the sums the last version recorded
            self._segment_lengths = _parse_segment_lengths(self._table.get_meta(SEGMENT_LENGTHS))
        lengths = self._live_lengths(searcher.reader())
        value = ",".join(str(lengths[f]) for f in SCORED_FIELDS)
        kept = ";".join(
            f"{segment}:{gone}:" + ",".join(str(found[f]) for f in SCORED_FIELDS)
            for (segment, gone), found in self._segment_lengths.items()
        )
        self._table.replace_meta(
            ("live-lengths@", name, value), (SEGMENT_LENGTHS, SEGMENT_LENGTHS, kept)
        )
        return lengths

    def _live_lengths(self, reader: Any) -> dict[str, int]:
        """Sum the live field lengths of every segment (scoring.segment_field_lengths), each
        segment's kept while it lives with as many deleted documents."""
        totals = dict.fromkeys(SCORED_FIELDS, 0)
        kept: dict[tuple[str, int], dict[str, int]] = {}
        for segment, _ in reader.leaf_readers():
            if not segment.doc_count_all():
                continue
            gone = len(segment.deleted_docs_set) if segment.has_deletions() else 0
            key = (segment_id(segment), gone)
            found = self._segment_lengths.get(key)
            if found is None:
                found = segment_field_lengths(segment, arrays=not self._postings.plain)
            kept[key] = found
            for fieldname, length in found.items():
                totals[fieldname] += length
        self._segment_lengths = kept
        return totals

    # --- ranked search ----------------------------------------------------------------

    def search(
        self,
        query: Query,
        *,
        workspaces: Collection[str] | None = None,
        limit: int = 5,
        any_term: bool = False,
        expansion: Collection[str] = (),
        expansion_boost: float = EXPANSION_BOOST,
        typos: bool = False,
        coverage: bool = False,
    ) -> list[IndexHit]:
        """Return the best documents for `query` (SearchIndex.search says how)."""
        searcher = self.searcher()
        terms = self._terms(query, typos)
        if not terms or limit <= 0:
            return []
        wanted = len(set(terms))
        if any_term:
            terms = self._selective(terms)
        # The postings of terms a large index's any-word search leaves out are not read:
        # coverage then reads each hit's text (`coverage`).
        counted = coverage and len(set(terms)) == wanted
        if any_term:
            terms = self._held(terms)
        bag = TermQuery(
            tuple(terms),
            require_all=not any_term,
            extra=tuple(t for t in expansion if t not in terms),
            extra_boost=expansion_boost,
            exact=query.exact,
            exact_boost=EXACT_BOOST,
        )
        assert self._stats is not None  # set with the searcher
        held: dict[int, int] | None = {} if counted else None
        try:
            best = score(
                searcher.reader(),
                self._stats,
                self._postings,
                bag,
                b=BM25_B,
                k1=BM25_K1,
                allowed=workspaces or None,
                limit=limit,
                held=held,
            )
            if len(best) > limit:  # ties at the last place: the first keys among them
                best = self.stored.first(searcher, best, limit)
            hits = [
                IndexHit(
                    self.stored.document(searcher, n),
                    value,
                    None if held is None else round(held[n] / wanted, 4),
                )
                for value, n in best
            ]
            if coverage and held is None:
                hits = [
                    replace(h, coverage=self.coverage(h.document, query, typos=typos)) for h in hits
                ]
        except Exception as err:
            raise_if_damage(err, self.root)
            raise
        # Ties are broken by key, not by document number, so a rebuilt index returns the
        # same order as the one it replaces.
        hits.sort(key=lambda h: (-round(h.score, 6), h.document.key))
        return hits[:limit]

    def _selective(self, terms: list[str]) -> list[str]:
        """In a large vault, keep an any-word query to its few rarest terms.

        Terms most documents contain add almost nothing to a BM25 ranking (their idf is near
        zero), and their long posting lists are most of the query's cost: above
        COMMON_TERM_MIN documents the query keeps its `any_term_limit` (default
        ANY_TERM_LIMIT) rarest terms.
        """
        if not self.keeps_rarest():
            return terms
        df = {t: self.lexicon.held_by(t) for t in terms}
        kept = set(sorted(terms, key=lambda t: (df[t], t))[: self.any_term_limit])
        return [t for t in terms if t in kept]

    def _held(self, terms: list[str]) -> list[str]:
        """Leave out of an any-word query the terms no document holds, in a large index
        (where `_selective` counted them already): they match nothing and add nothing to a
        score, yet each costs a look-up per segment and field. A new memory's own words (a
        hash, a version, an id) are often such terms, and its contradiction hint's query
        keeps them as its rarest. The scores, order and counts of every hit are the same."""
        if not self.keeps_rarest():
            return terms
        return [t for t in terms if self.lexicon.held_by(t)]

    def keeps_rarest(self) -> bool:
        """Say whether an any-word query keeps only its rarest terms here (`_selective`)."""
        return self._current().reader().doc_count() > COMMON_TERM_MIN

    def _terms(self, query: Query, typos: bool) -> list[str]:
        """Return the query's terms, each unknown one replaced by its stand-in (with
        `typos`; against the searcher of this operation, kept for its index version)."""
        if not typos:
            return list(query.terms)
        self._current()
        return self.lexicon.resolve(query)[0]

    # --- what a query's terms are to the index ------------------------------------------

    def expansion_terms(
        self, documents: list[Document], exclude: Collection[str], count: int
    ) -> list[str]:
        """Return the terms most characteristic of `documents` (tf × idf), for feedback."""
        reader = self.searcher()
        total = max(reader.doc_count(), 1)
        weights: dict[str, float] = {}
        common = max(EXPANSION_MAX_DF * total, 5)
        for doc in documents:
            for term in query_terms(self._analyzer, doc.content):
                if term in exclude or len(term) < 3:
                    continue
                df = self.lexicon.frequency("content", term)
                if df > common:
                    continue  # a common word says little, and costs a long posting list
                weights[term] = weights.get(term, 0.0) + log((total + 1) / (df + 1))
        return sorted(weights, key=lambda t: (-weights[t], t))[:count]

    def coverage(self, doc: Document, query: Query, *, typos: bool = False) -> float:
        """Return the share of the query's terms (with `typos`, stand-ins for unknown ones)
        that `doc` contains."""
        wanted = set(self._terms(query, typos))
        return self.coverage_of(doc, wanted)

    def coverage_of(self, doc: Document, terms: Collection[str]) -> float:
        """Return the share of `terms` (index terms, not text) that `doc` contains."""
        if not terms:
            return 0.0
        wanted = terms if isinstance(terms, set | frozenset) else set(terms)
        return round(len(wanted & self.held_terms(doc)) / len(wanted), 4)

    def held_terms(self, doc: Document) -> frozenset[str]:
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
        if len(self._held_terms) > CACHE_HELD_TERMS:
            self._held_terms.popitem(last=False)
        return found

    def term_frequencies(self, query: Query, *, typos: bool = False) -> dict[str, int]:
        """Return how many documents hold each of the query's terms (SearchIndex says how)."""
        self.searcher()
        return {term: self.lexicon.held_by(term) for term in self._terms(query, typos)}

    def holder_counts(self, query: Query, *, typos: bool = False) -> dict[str, int]:
        """Return how many live documents hold each of the query's terms (with `typos`,
        their stand-ins): SearchIndex says how."""
        self.searcher()
        return self._live_holders(self._terms(query, typos))

    def live_holder_counts(self, query: Query) -> dict[str, int]:
        """Return exactly how many live documents hold each of the query's terms (SearchIndex)."""
        self.searcher()
        return self._live_holders(query.terms)

    def _live_holders(self, terms: Iterable[str]) -> dict[str, int]:
        # The larger of the content and keywords counts (keywords mostly repeat the text),
        # of live documents: Whoosh's own count goes on counting a replaced document until
        # its segment merges, so weights read from it differ from a rebuilt index's.
        stats = self._stats
        assert stats is not None  # set with the searcher
        return {
            term: max(stats.frequency(field, term, self._postings) for field in HOLDER_FIELDS)
            for term in terms
        }

    def unknown_terms(self, query: Query, *, typos: bool = False) -> int:
        """Return how many of the query's terms no document contains (with `typos`, those
        without a stand-in)."""
        self.searcher()
        return sum(1 for term in self._terms(query, typos) if not self.lexicon.is_known(term))

    def stand_ins(self, query: Query) -> list[StandIn]:
        """Return the query's stand-ins (a search of it just made has them at hand)."""
        if not self.lexicon.has_resolved(query):
            self.searcher()
        return list(self.lexicon.resolve(query)[1])

    def load_terms(self) -> None:
        """Read now the terms `holds_terms` keeps, not in the first typo walk."""
        if self.lexicon.holds_terms:
            self.searcher()
            with guard(self.root, "read"):
                self.lexicon.term_lookup()

    def unwarmed_version(self) -> int | None:
        """Return the index's version (its generation) as it is now if a large segment of it
        was not read ahead yet (a merge's or a compaction's, committed by any process: its
        key order not kept, StoredCache.rank_steps), else None."""
        searcher = self.searcher()
        if not self.stored.ranks_missing(searcher):
            return None
        return int(searcher.reader().generation())

    def release_pages(self) -> int:
        """Unmap the pages of the index files this process has read; return the bytes of
        the mappings advised (release_pages)."""
        return 0 if self._searcher is None else release_pages(self._searcher)

    def document_count(self) -> int:
        """Return how many live documents the current searcher sees (no look at the disk)."""
        if self._stats is None:
            self.searcher()
        assert self._stats is not None  # set with the searcher
        return self._stats.count

    # --- look-ups -----------------------------------------------------------------------

    def find(self, workspace: str) -> list[Document]:
        """Return the documents of one workspace, by key."""
        from whoosh.query import Term

        searcher = self.searcher()
        with guard(self.root, "read"):
            hits = searcher.search(Term("workspace", workspace), limit=None)
            return sorted((parse_stored(dict(hit.fields())) for hit in hits), key=lambda d: d.key)

    def get(self, keys: Collection[str]) -> dict[str, Document]:
        """Return the stored documents for `keys` (missing keys are left out)."""
        if not keys:
            return {}
        searcher = self.searcher()
        found = {}
        with guard(self.root, "read"):
            # One term lookup per key: a query OR-ing hundreds of keys is far slower in Whoosh.
            leaves = searcher.reader().leaf_readers()
            for key in keys:
                number = _live_number(leaves, key)
                if number is False:
                    number = searcher.document_number(key=key)
                if number is not None:
                    found[key] = parse_stored(searcher.stored_fields(number))
        return found

    def keys_with_prefix(self, prefix: str) -> list[str]:
        """Return the keys of the live documents whose key starts with `prefix`."""
        from whoosh.query import Prefix

        searcher = self.searcher()
        with guard(self.root, "read"):
            if not prefix:
                return sorted(fields["key"] for fields in searcher.all_stored_fields())
            results = searcher.search(Prefix("key", prefix), limit=None)
            return sorted(hit["key"] for hit in results)

    def documents(self) -> list[Document]:
        """Return every document (for stats and consistency checks)."""
        searcher = self.searcher()
        with guard(self.root, "read"):
            stored = [parse_stored(fields) for fields in searcher.all_stored_fields()]
        return sorted(stored, key=lambda d: d.key)

    def segment_sizes(self) -> list[int]:
        """Return the document count (deleted ones included) of each non-empty segment."""
        searcher = self.searcher()
        with guard(self.root, "read"):
            leaves = searcher.reader().leaf_readers()
            return [n for n in (reader.doc_count_all() for reader, _ in leaves) if n]

    def verify(self) -> None:
        """Read every posting list, field length, stored field and entity row (slow: doctor).

        Raises SearchIndexError naming the damage.
        """
        searcher = self.searcher()
        try:
            for segment, _ in searcher.reader().leaf_readers():
                _read_segment(segment)
            for _fields in searcher.all_stored_fields():
                pass
            self._table.verify()
        except Exception as err:  # reading all of a damaged index can raise anything
            detail = str(err) if isinstance(err, SearchIndexError) else describe(err)
            raise SearchIndexError(f"index at {self.root} is damaged ({detail})") from err


def _parse_segment_lengths(value: str | None) -> dict[tuple[str, int], dict[str, int]]:
    """Read the SEGMENT_LENGTHS row: segment:deleted:content,keywords;… (a cache: a row
    that does not read as such is ignored)."""
    found: dict[tuple[str, int], dict[str, int]] = {}
    for part in (value or "").split(";"):
        with contextlib.suppress(ValueError):
            segment, gone, sums = part.split(":")
            values = [int(n) for n in sums.split(",")]
            if len(values) == len(SCORED_FIELDS):
                found[(segment, int(gone))] = dict(zip(SCORED_FIELDS, values, strict=True))
    return found


def _live_number(leaves: list[tuple[Any, int]], key: str) -> int | Literal[False] | None:
    """Return the live document holding `key` from its term's one posting, read in the
    terms table (Whoosh's `document_number` builds a posting reader for it: ~3× the cost,
    0.4 s for the 6,700 core memories of a 100k vault); None if no live one holds it,
    False if a term has more postings (Whoosh's way answers)."""
    text = key.encode("utf-8")
    for segment, base in leaves:
        terms = getattr(segment, "_terms", None)
        if terms is None:
            return False
        try:
            info = terms.term_info("key", text)
        except (KeyError, TermNotFound):
            continue
        if info.doc_frequency() != 1:
            return False
        number = int(info.min_id())
        if not segment.is_deleted(number):
            return base + number
    return None


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


def _searcher_reusing(ix: Any, previous: Any) -> Any:
    """Return a searcher of the index as it is now that keeps `previous`'s readers of the
    segments that did not change, closing the rest of `previous`; None when it cannot (the
    caller then closes `previous` and opens one afresh).

    Opening a segment's reader reads its term tables (~1 ms a segment of 100,000 memories,
    most of a searcher's opening): an add writes one small segment, so the searcher after it
    opens that one. Not Whoosh's `reader(reuse=)`: it matches segments by id, so a commit that
    only deleted documents would stay invisible; here a reader is kept only while its segment
    has as many deleted documents as it had (a segment's deletions only grow).
    """
    if not isinstance(previous.reader(), MultiReader):
        return None
    try:
        toc = ix._read_toc()
        if len(toc.segments) < 2:
            return None
        leaves = [reader for reader, _ in previous.reader().leaf_readers()]
        if any(reader.segment() is None for reader in leaves):
            return None
        kept = {(r.segment().segment_id(), r.segment().deleted_count()): r for r in leaves}
        readers = []
        for segment in toc.segments:
            reader = kept.pop((segment.segment_id(), segment.deleted_count()), None)
            if reader is None:
                reader = SegmentReader(ix.storage, toc.schema, segment, generation=toc.generation)
            readers.append(reader)
    except OSError:  # a writer removed a segment's files meanwhile: open afresh
        return None
    for reader in kept.values():
        reader.close()
    from whoosh.searching import Searcher

    return Searcher(MultiReader(readers, generation=toc.generation), fromindex=ix)


def release_pages(searcher: Any) -> int:
    """Unmap the pages of the searcher's segment files; return the bytes advised.

    Whoosh reads its segments through memory maps, and every page a search touched
    counts in the process's RSS (at 100,000 memories ~80 MB after a few hundred
    recalls: stored documents are read all over the file). The pages stay in the
    kernel's page cache, shared and reclaimable; the next read maps them again (a
    minor fault per 64 KB, microseconds), so a long-lived process calls this when idle.
    """
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is None:
        return 0
    released = 0
    for segment, _ in searcher.reader().leaf_readers():
        source = getattr(getattr(getattr(segment, "_storage", None), "a", None), "_source", None)
        if isinstance(source, mmap.mmap) and not source.closed:
            with contextlib.suppress(OSError, ValueError):
                source.madvise(advice)
                released += len(source)
    return released
