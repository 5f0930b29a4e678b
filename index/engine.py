"""SearchIndex: a Whoosh index and its entity table under one folder, opened, read and written."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import sqlite3
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whoosh import index as whoosh_index
from whoosh.reading import SegmentReader

from . import _patches
from .analysis import make_analyzer
from .damage import DAMAGE, SearchIndexError, describe, guard
from .entity_table import EntityTable
from .query import Query, as_query
from .reader import IndexReader
from .schema import Document, IndexHit, Part, make_schema, parse_stored, render_fields
from .typos import StandIn
from .warming import warm_steps
from .writer import IndexWriter

if TYPE_CHECKING:
    from .merging import Merged  # a helper process's work: loaded when a merge is planned
    from .parts import Stopper

MERGE_MAX_DOCS = 500  # a commit merges segments up to this size; larger ones on compact()
MERGE_TIER = 6  # small segments merge six of a size at a time (_merge_small_segments)
COMPACT_SEGMENTS = 8  # more large segments than this and the long-running shells compact


class SearchIndex:
    """A Whoosh index and an sqlite entity table under one folder: documents and a query
    in, hits out. Reading goes through an `IndexReader`, commits through an `IndexWriter`."""

    def __init__(self, root: Path, ix: Any, table: EntityTable) -> None:
        self.root = root
        self._ix = ix
        self._table = table
        self._db = table.db
        self.reader = IndexReader(root, ix, table, make_analyzer())
        self.writer = IndexWriter(root, ix, table, _merge_small_segments)

    # --- lifecycle ------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path, *, create: bool = True) -> SearchIndex:
        """Open the index under `root`, creating it if missing and allowed.

        Raises SearchIndexError when it is damaged: unreadable, or missing a part (a table
        of contents, the entity table) that an index holding documents always has.
        """
        _patches.apply()  # how Whoosh reads and writes our segments (index/_patches.py)
        whoosh_dir = root / "whoosh"
        # Not whoosh's exists_in(): it opens the whole index once more just to say yes.
        with guard(root, "opened"):
            if any(whoosh_dir.glob("_MAIN_*.toc")):
                ix = _open_whoosh(whoosh_dir)
                if not (root / "entities.sqlite").is_file():
                    raise SearchIndexError(f"index at {root} has lost its entity table")
            elif create and not whoosh_dir.exists():
                whoosh_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                ix = whoosh_index.create_in(str(whoosh_dir), make_schema())
            elif whoosh_dir.exists():
                raise SearchIndexError(f"index at {root} has lost its table of contents")
            else:
                raise SearchIndexError(f"no index at {root}")
            table = EntityTable.open(root)
        return cls(root, ix, table)

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
        self.reader.close()
        self._table.close()

    def take_over(self, other: SearchIndex) -> None:
        """Close this index and become `other` (a rebuilt one): references stay valid."""
        with contextlib.suppress(*DAMAGE, sqlite3.Error):  # it is damaged: close what closes
            self.close()
        self.__dict__.update(other.__dict__)

    # --- settings callers choose ------------------------------------------------------

    @property
    def any_term_limit(self) -> int:
        """An any-word query's terms kept in a large index (its rarest ones)."""
        return self.reader.any_term_limit

    @any_term_limit.setter
    def any_term_limit(self, value: int) -> None:
        self.reader.any_term_limit = value

    def keeps_rarest(self) -> bool:
        """Say whether an any-word search keeps only the query's `any_term_limit` rarest terms
        (an index of more than a thousand documents)."""
        return self.reader.keeps_rarest()

    @property
    def keeps_entities(self) -> bool:
        """Whether commits extract entities (an index nobody asks for them skips it)."""
        return self._table.keeps_entities

    @keeps_entities.setter
    def keeps_entities(self, value: bool) -> None:
        self._table.keeps_entities = value

    @property
    def holds_terms(self) -> bool:
        """Whether typo walks read a term table kept in memory (few terms, many segments)."""
        return self.reader.lexicon.holds_terms

    @holds_terms.setter
    def holds_terms(self, value: bool) -> None:
        self.reader.lexicon.holds_terms = value

    # --- a query in, hits out ---------------------------------------------------------

    def search(
        self,
        query: Query | str,
        *,
        workspaces: Collection[str] | None = None,
        limit: int = 5,
        any_term: bool = False,
        expansion: Collection[str] = (),
        expansion_boost: float | None = None,
        typos: bool = False,
        coverage: bool = False,
    ) -> list[IndexHit]:
        """Return the best documents for `query`: all terms must match unless `any_term`.

        With `typos`, a term no document holds is searched as its stand-in (`stand_ins`).
        With `coverage`, each hit says what `coverage` would (counted from the postings the
        search read, not from the document's text). `expansion` terms (feedback, concepts)
        score in content, boosted below the query's own (`expansion_boost`, default the
        reader's EXPANSION_BOOST).
        """
        boost = {} if expansion_boost is None else {"expansion_boost": expansion_boost}
        return self.reader.search(
            as_query(query),
            workspaces=workspaces,
            limit=limit,
            any_term=any_term,
            expansion=expansion,
            typos=typos,
            coverage=coverage,
            **boost,
        )

    def expansion_terms(
        self, documents: list[Document], exclude: Collection[str], count: int
    ) -> list[str]:
        """Return the terms most characteristic of `documents` (tf × idf), for feedback."""
        return self.reader.expansion_terms(documents, exclude, count)

    def coverage(self, doc: Document, query: Query | str, *, typos: bool = False) -> float:
        """Return the share of the query's terms (with `typos`, stand-ins for unknown ones)
        that `doc` contains."""
        return self.reader.coverage(doc, as_query(query), typos=typos)

    def coverage_of(self, doc: Document, terms: Collection[str]) -> float:
        """Return the share of `terms` (index terms, not text) that `doc` contains."""
        return self.reader.coverage_of(doc, terms)

    def held_terms(self, doc: Document) -> frozenset[str]:
        """Return the index terms `doc`'s text and keywords hold (kept per document version)."""
        return self.reader.held_terms(doc)

    def term_frequencies(self, query: Query | str, *, typos: bool = False) -> dict[str, int]:
        """Return how many documents hold each of the query's terms (with `typos`, stand-ins
        for unknown ones), in content or keywords, as Whoosh counts them."""
        return self.reader.term_frequencies(as_query(query), typos=typos)

    def holder_counts(self, query: Query | str, *, typos: bool = False) -> dict[str, int]:
        """Return how many live documents hold each of the query's terms (with `typos`,
        stand-ins for unknown ones): the larger of the content and keywords counts, the same
        after a rebuild (a replaced document Whoosh still counts is not counted)."""
        return self.reader.holder_counts(as_query(query), typos=typos)

    def live_holder_counts(self, query: Query | str) -> dict[str, int]:
        """Return how many live documents hold each of the query's own terms (no stand-ins),
        the larger of the content and keywords counts (a replaced document's postings are
        looked through while it lingers)."""
        return self.reader.live_holder_counts(as_query(query))

    def unknown_terms(self, query: Query | str, *, typos: bool = False) -> int:
        """Return how many of the query's terms no document contains (with `typos`, those
        without a stand-in)."""
        return self.reader.unknown_terms(as_query(query), typos=typos)

    def stand_ins(self, query: Query | str) -> list[StandIn]:
        """Return a stand-in for each term of the query that no document holds and that is
        near a term some document does: typo tolerance (index/typos.py). A search of the
        query just made has them at hand (no second look at the index)."""
        return self.reader.stand_ins(as_query(query))

    def load_terms(self) -> None:
        """Read now the terms `holds_terms` keeps, not in the first typo walk."""
        self.reader.load_terms()

    def warm_steps(self) -> Iterator[None]:
        """Read ahead what first searches would, a short step at a time
        (index/warming.py warm_steps); the caller keeps other threads out during each step."""
        with guard(self.root, "read"):
            yield from warm_steps(self.reader)

    def unwarmed_version(self) -> int | None:
        """Return the index's version if it has a large segment not read ahead yet, else
        None (IndexReader.unwarmed_version): what a long-lived process warms again."""
        with guard(self.root, "read"):
            return self.reader.unwarmed_version()

    def release_pages(self) -> int:
        """Unmap the index file pages this process has read (IndexReader.release_pages)."""
        return self.reader.release_pages()

    def document_count(self) -> int:
        """Return how many live documents the current searcher sees (no look at the disk)."""
        return self.reader.document_count()

    # --- look-ups ---------------------------------------------------------------------

    def find(self, workspace: str) -> list[Document]:
        """Return the documents of one workspace, by key."""
        return self.reader.find(workspace)

    def get(self, keys: Collection[str]) -> dict[str, Document]:
        """Return the stored documents for `keys` (missing keys are left out)."""
        return self.reader.get(keys)

    def keys_with_prefix(self, prefix: str) -> list[str]:
        """Return the keys of the live documents whose key starts with `prefix`."""
        return self.reader.keys_with_prefix(prefix)

    def documents(self) -> list[Document]:
        """Return every document (for stats and consistency checks)."""
        return self.reader.documents()

    def version(self) -> int:
        """Return a number that changes whenever the index does (for caches)."""
        with guard(self.root, "read"):
            return int(self._ix.latest_generation())

    def count(self) -> int:
        """Return the number of documents (from the table of contents alone: cheap)."""
        with guard(self.root, "read"):
            return sum(int(segment.doc_count()) for segment in self._ix._segments())

    def verify(self) -> None:
        """Read every posting list, field length, stored field and entity row (slow: doctor).

        Raises SearchIndexError naming the damage; a cheap open does not find damage in
        the middle of a segment, which a search may meet only later.
        """
        self.reader.verify()

    def size_bytes(self) -> int:
        """Return the bytes the index takes on disk."""
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())

    def entity_keys(self, entities: Iterable[str]) -> dict[str, int]:
        """Return, per document key, how many of `entities` it mentions."""
        return self._table.entity_keys(entities)

    def shared_with(
        self,
        entities: Iterable[str],
        limit: int,
        exclude: Collection[str],
        common: int | None = None,
    ) -> list[str]:
        """Return the `limit` keys, none of `exclude`, that mention the most of `entities`
        (ties by key), leaving out an entity more than `common` documents mention."""
        return self._table.shared_with(entities, limit, exclude, common)

    def entities_of(self, key: str) -> list[tuple[str, str]]:
        """Return the (entity, kind) pairs recorded for one document."""
        return self._table.entities_of(key)

    def get_meta(self, name: str) -> str | None:
        """Return a stored metadata value."""
        return self._table.get_meta(name)

    # --- documents in -----------------------------------------------------------------

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
        self.writer.apply(
            upserts, deletes, meta=meta, limitmb=limitmb, new=new, entities=entities, parts=parts
        )

    def segment_count(self) -> int:
        """Return how many segments the index has (each costs a little on every search)."""
        return len(self.reader.segment_sizes())

    def needs_compacting(self, max_docs: int | None = None) -> bool:
        """Say whether enough large segments piled up that searches pay for them (small
        ones are kept few by the tiers commits merge them in), and (`max_docs`) whether
        a compaction rewriting at most that many documents would merge any of them."""
        sizes = self.reader.segment_sizes()
        large = sum(1 for n in sizes if n > MERGE_MAX_DOCS)
        if max_docs is not None and len(smallest_within(sizes, max_docs)) < 2:
            return False
        return large > COMPACT_SEGMENTS

    def merge_plan(self) -> list[str]:
        """Return the ids of the large segments to merge next (index/merging.py; none:
        nothing to merge)."""
        from . import merging

        return merging.plan(merging.segment_sizes(self._ix))

    def build_merge(self, chosen: list[str], stopper: Stopper | None = None) -> Merged | None:
        """Write the segments `chosen` (merge_plan's) as one, in a helper process, without
        the write lock; None if one is gone, the helper failed or `stopper` stopped it
        (swap_in adopts it)."""
        from . import merging

        return merging.build(self.root, chosen, self.root / f"merging-{os.getpid()}", stopper)

    def complete_flat(self, stopper: Stopper | None = None) -> list[str]:
        """Write the flat posting lists its large segments lack (an index written before
        them, a torn file: index/flat.py), in a helper process, without any lock; return
        the segments' ids."""
        from . import flat

        return flat.complete_aside(self.root / "whoosh", stopper)

    def swap_in(self, merged: Merged) -> bool:
        """Commit `merged` in place of the segments it was written from (False, nothing
        changed, if one of them is gone), and remove its folder."""
        try:
            return self.writer.swap_in(merged.part, {sid for sid, _ in merged.sources})
        finally:
            shutil.rmtree(merged.folder, ignore_errors=True)

    def compact(self, max_docs: int | None = None) -> None:
        """Merge every segment into one (seconds at 10,000 documents), or with `max_docs`
        only the smallest segments that hold at most that many documents together."""
        self.writer.compact(
            None if max_docs is None else partial(_merge_smallest, max_docs=max_docs)
        )


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
            failure = describe(err)
        if failure:  # a collection costs ~15 ms at 100k: only when a file may have leaked
            gc.collect()  # the traceback is gone: the leaked file closes here, quietly
    if failure:
        raise SearchIndexError(f"index at {folder} cannot be opened ({failure})")
    return ix


def _merge_small_segments(writer: Any, segments: list[Any]) -> list[Any]:
    """Merge small segments by tiers: MERGE_TIER segments of about one size (a power of
    MERGE_TIER apart) merge into one of the next, and segments above MERGE_MAX_DOCS merge
    only when asked (`compact`).

    Whoosh's own policy (MERGE_SMALL) folds the smallest segments into the growing one
    every few commits, rewriting a few hundred documents: at 100,000 memories one `add` in
    ten spent 100–300 ms merging. By tiers a document is rewritten once a tier, and one
    commit in twenty rewrites a handful of documents (tests/benchmarks/bench_scale.py).

    A merged segment's live documents are indexed again from their stored fields, as a
    rebuild indexes them: the same postings and lengths as Whoosh's `add_reader` copying
    them a posting at a time, for ~25% less of the adds' CPU and half their p95 (a tier
    merge rode on one add in six; tests/index/test_merge_by_stored.py).
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
            for number in reader.all_doc_ids():  # the live ones
                writer.add_document(**render_fields(parse_stored(reader.stored_fields(number))))
            reader.close()
    return kept


def smallest_within(sizes: list[int], max_docs: int) -> list[int]:
    """Return the positions in `sizes` of the smallest segments whose documents together
    are at most `max_docs` (smallest first; on equal sizes, the earlier segment)."""
    chosen: list[int] = []
    total = 0
    for position in sorted(range(len(sizes)), key=lambda i: sizes[i]):
        if total + sizes[position] > max_docs:
            break
        total += sizes[position]
        chosen.append(position)
    return chosen


def _merge_smallest(writer: Any, segments: list[Any], max_docs: int) -> list[Any]:
    """Merge the smallest `segments` holding at most `max_docs` documents together into
    the commit's own segment (none unless two or more fit); keep the others as they are."""
    chosen = smallest_within([segment.doc_count_all() for segment in segments], max_docs)
    if len(chosen) < 2:
        return segments
    for position in chosen:
        reader = SegmentReader(writer.storage, writer.schema, segments[position])
        writer.add_reader(reader)
        reader.close()
    return [segment for i, segment in enumerate(segments) if i not in set(chosen)]


def _tier(count: int) -> int:
    """Return how many times MERGE_TIER goes into `count` (0 below MERGE_TIER)."""
    tier = 0
    while count >= MERGE_TIER:
        count //= MERGE_TIER
        tier += 1
    return tier
