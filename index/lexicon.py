"""The terms one version of the index holds: document frequencies and typo stand-ins."""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .analysis import term_sources
from .damage import guard
from .query import Query
from .scoring import SCORED_FIELDS, segment_id
from .typos import StandIn, max_distance, near_terms, nearest_surface, ranked, searched_forms

CACHE_QUERIES = 1000  # queries whose stand-ins are kept for the index version
# Per segment (field, term) counts kept across index versions (~100 B each: ~20 MB at most);
# a segment's counts never change, and an add leaves all but its own new segment as they were.
CACHE_SEGMENT_COUNTS = 200_000
MAX_STAND_INS = 8  # unknown terms of one query looked at for a stand-in
# A segment this small (an add's own, and the tiers it merges into: index/engine.py's
# MERGE_MAX_DOCS) has all its terms read at once when it has been asked about as many terms
# as that costs: each add asks every segment for each of its new words (~5 µs a look-up);
# reading a segment's terms costs ~4 µs a term, ~4 terms a document.
WHOLE_SEGMENT_DOCS = 500
READ_WHOLE_AFTER = 24  # terms asked of a one-document segment; 4 more for each other document
# Segments this large outlive many index versions (an add or a counter flush makes a small
# one beside them): what a typo walk finds in them is kept while they all live (`_near_terms`).
LASTING_DOCS = 1_000
CACHE_NEAR = 8_000  # (form, edits) walks kept over the lasting segments


class Lexicon:
    """What one searcher's terms are: how many documents hold each, and for a term none
    holds, the known term near it that stands in (index/typos.py). Everything is kept for
    the searcher's index version; `reset` starts the next one."""

    def __init__(self, root: Path, analyzer: Any) -> None:
        self.root = root
        self._analyzer = analyzer
        self._searcher: Any = None
        # An index of few terms across many segments keeps them in memory for typo walks
        # (one walk instead of one per segment and field; see _term_lookup).
        self.holds_terms = False
        self._segment_terms: dict[str, frozenset[str]] = {}
        # segment id → its scored fields' terms, sorted, for typo walks (TermRun)
        self._runs: dict[str, TermRun] = {}
        self._term_table: tuple[tuple[str, ...], list[str]] = ((), [])
        self._frequencies: dict[tuple[str, str], int] = {}
        # segment id → (field, term) → documents holding it; and this version's segments
        self._segment_counts: dict[str, dict[tuple[str, str], int]] = {}
        self._asked: dict[str, int] = {}  # segment id → terms asked of it
        self._whole: set[str] = set()  # segments whose counts hold every term they have
        self._segments: list[tuple[Any, str, dict[tuple[str, str], int] | None]] = []
        self._stand_ins: dict[tuple[str, str], StandIn | None] = {}
        # query text → its terms with stand-ins in place, and the stand-ins
        self._resolved: dict[tuple[str, frozenset[str]], tuple[list[str], tuple[StandIn, ...]]] = {}
        # (form, edits) → the terms near it in the lasting segments `_near_of` names, kept
        # across index versions while those segments live (they never change)
        self._near_of: tuple[str, ...] = ()
        self._near: dict[tuple[str, int], frozenset[str]] = {}

    def reset(self, searcher: Any) -> None:
        """Answer for `searcher` (a new index version) from now on."""
        self._searcher = searcher
        self._frequencies = {}
        if sum(map(len, self._segment_counts.values())) > CACHE_SEGMENT_COUNTS:
            self._segment_counts, self._asked, self._whole = {}, {}, set()
        kept: dict[str, dict[tuple[str, str], int]] = {}
        self._segments = []
        for segment, _ in searcher.reader().leaf_readers():
            key = _segment_key(segment)
            counts = None  # a reader of no segment: never kept
            if key:
                counts = kept[key] = self._segment_counts.get(key, {})
            self._segments.append((segment, key, counts))
        self._segment_counts = kept  # a segment gone takes its counts along
        self._asked = {key: n for key, n in self._asked.items() if key in kept}
        self._whole &= kept.keys()
        self._runs = {key: self._runs[key] for key in kept if key in self._runs}
        self._stand_ins = {}
        self._resolved = {}

    def frequency(self, fieldname: str, term: str) -> int:
        """Return how many documents hold `term` (Whoosh's count, deleted ones included).

        Whoosh asks every segment, ~10 µs a term each: a segment's count is kept for as long
        as the segment lives, so a new index version asks only its new segments.
        """
        key = (fieldname, term)
        total = self._frequencies.get(key)
        if total is None:
            total = 0
            with guard(self.root, "read"):
                for segment, segment_key, counts in self._segments:
                    count = None if counts is None else counts.get(key)
                    if count is None and segment_key in self._whole:
                        count = 0
                    elif count is None:
                        count = segment.doc_frequency(fieldname, term)
                        if counts is not None:
                            counts[key] = count
                            self._asked_of(segment, segment_key, counts)
                    total += count
            self._frequencies[key] = total
        return total

    def lacks(self, segment_key: str, fieldname: str, term: str) -> bool:
        """Say whether a segment (by id) is known to hold no `term` in `fieldname` (asked
        already, or read whole): the postings cache then does not ask it again."""
        counts = self._segment_counts.get(segment_key)
        count = None if counts is None else counts.get((fieldname, term))
        return count == 0 or (count is None and segment_key in self._whole)

    def _asked_of(self, segment: Any, key: str, counts: dict[tuple[str, str], int]) -> None:
        """Count a term asked of a segment; read a small one's terms whole when it is due."""
        asked = self._asked[key] = self._asked.get(key, 0) + 1
        documents = segment.doc_count_all()
        if asked == READ_WHOLE_AFTER + 4 * (documents - 1) and documents <= WHOLE_SEGMENT_DOCS:
            for (fieldname, text), info in segment:
                counts[fieldname, text.decode("utf-8")] = info.doc_frequency()
            self._whole.add(key)

    def held_by(self, term: str) -> int:
        """Return how many documents hold `term` in content or keywords (Whoosh's count)."""
        return self.frequency("content", term) + self.frequency("keywords", term)

    def holders(self, term: str) -> int:
        """Return about how many documents hold `term`: the larger of its content and keywords
        counts (a memory's keywords mostly repeat its text, so the sum counts it twice)."""
        return max(self.frequency("content", term), self.frequency("keywords", term))

    def is_known(self, term: str) -> bool:
        return bool(self.frequency("content", term) or self.frequency("keywords", term))

    def has_resolved(self, query: Query) -> bool:
        return (query.text, query.settled) in self._resolved

    def resolve(self, query: Query) -> tuple[list[str], tuple[StandIn, ...]]:
        """Return `query`'s terms with stand-ins in place, and the stand-ins."""
        found = self._resolved.get((query.text, query.settled))
        if found is None:
            stand_ins = self._stand_ins_of(query)
            swapped = {s.term: s.stand_in_term for s in stand_ins}
            if len(self._resolved) > CACHE_QUERIES:
                self._resolved.clear()
            resolved = list(dict.fromkeys(swapped.get(t, t) for t in query.terms))
            found = self._resolved[query.text, query.settled] = (resolved, tuple(stand_ins))
        return found

    def _stand_ins_of(self, query: Query) -> list[StandIn]:
        """Return the stand-ins of the first MAX_STAND_INS unknown terms (a pasted log or
        stack trace holds many words no memory does, and is no typo)."""
        found = []
        unknown = [t for t in query.terms if t not in query.settled and not self.is_known(t)]
        for term in unknown[:MAX_STAND_INS]:
            word = query.sources.get(term, term)
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
        for form in searched_forms(term, word):  # the term, then the word typed
            edits = max_distance(form)
            if not edits:
                continue
            with guard(self.root, "read"):
                if self.holds_terms:
                    near = near_terms(form, edits, [self.term_lookup()])
                else:
                    near = self._near_terms(form, edits)
            frequencies = {t: self.held_by(t) for t in near}
            for apart, candidate in ranked(form, frequencies):
                surface = nearest_surface(word, self._surfaces(candidate))
                if surface is not None:
                    return StandIn(word, term, surface, apart, candidate)
        return None

    def term_runs(self) -> Iterable[TermRun]:
        """Yield each segment's TermRun (read the first time a walk needs it: segments
        never change, and a new index version reads only its new segments)."""
        for _, _, run in self._keyed_runs():
            yield run

    def _keyed_runs(self) -> Iterator[tuple[Any, str, TermRun]]:
        for segment, _ in self._searcher.reader().leaf_readers():
            if not segment.doc_count():
                continue
            key = _segment_key(segment)
            run = self._runs.get(key)
            if run is None:
                run = TermRun(heapq.merge(*(segment.lexicon(f) for f in SCORED_FIELDS)))
                if key:
                    self._runs[key] = run
            yield segment, key, run

    def _near_terms(self, form: str, edits: int) -> set[str]:
        """Return the terms within `edits` of `form` in every segment: the lasting segments'
        walk kept while they all live, the small ones walked again each version. After an
        add (a new version: its stand-ins asked again) the walk over the large segments cost
        most of a recall's typo look-up at 100,000 memories; the union is the same terms."""
        lasting: list[TermRun] = []
        small: list[TermRun] = []
        keys: list[str] = []
        for segment, key, run in self._keyed_runs():
            if key and segment.doc_count_all() >= LASTING_DOCS:
                keys.append(key)
                lasting.append(run)
            else:
                small.append(run)
        if tuple(keys) != self._near_of or len(self._near) > CACHE_NEAR:
            self._near_of, self._near = tuple(keys), {}
        found = self._near.get((form, edits))
        if found is None:
            walked = near_terms(form, edits, [run.find for run in lasting]) if lasting else ()
            found = self._near[form, edits] = frozenset(walked)
        if not small:
            return set(found)
        return set(found).union(near_terms(form, edits, [run.find for run in small]))

    def term_lookup(self) -> Callable[[str], str | None]:
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
        with guard(self.root, "read"):
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


class TermRun:
    """One segment's terms of the scored fields, sorted, in one bytes object (~20 bytes a
    term): a typo walk's look-up is a binary search in memory (~5 µs) instead of one in
    Whoosh's term files per field (~40-100 µs). The walk asks every segment at each step,
    and a million memories built in chunks have 40 segments (80 term files)."""

    __slots__ = ("_blob", "_ends")

    def __init__(self, terms: Iterable[bytes]) -> None:
        parts: list[bytes] = []
        ends = array("I")
        end = 0
        previous = None
        for term in terms:  # sorted, a term in both fields twice
            if term != previous:
                parts.append(term)
                end += len(term)
                ends.append(end)
                previous = term
        self._blob = b"".join(parts)
        self._ends = ends

    def __len__(self) -> int:
        return len(self._ends)

    def find(self, word: str) -> str | None:
        """Return the first term at or after `word` (None past the last)."""
        key, blob, ends = word.encode("utf-8"), self._blob, self._ends
        low, high = 0, len(ends)
        while low < high:
            middle = (low + high) // 2
            if blob[ends[middle - 1] if middle else 0 : ends[middle]] < key:
                low = middle + 1
            else:
                high = middle
        if low == len(ends):
            return None
        return blob[ends[low - 1] if low else 0 : ends[low]].decode("utf-8")


def _segment_key(reader: Any) -> str:
    """Return the id of a leaf reader's segment ('' for a reader of none: never cached)."""
    return segment_id(reader) if reader.segment() is not None else ""
