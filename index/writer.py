"""Writing the index: one commit per change, parts of a fresh build adopted, segments merged."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.writing import LockError

from . import _patches
from .bulk import TermWriter
from .damage import SearchIndexError, raise_if_damage
from .entity_table import EntityTable
from .schema import Document, Part, make_schema, render_fields

# Which segments a commit keeps as they are, merging the others into its own (Whoosh's
# `mergetype`): the caller's policy (index/engine.py merges small segments by tiers).
MergePolicy = Callable[[Any, list[Any]], list[Any]]
# A commit whose caller budgets at most this for its postings (catalog/reading.limitmb: up
# to 500 documents, an add's one) keeps its temporary files in memory (bulk.TermWriter).
SMALL_COMMIT_MB = 64


class IndexWriter:
    """Commits to one Whoosh index and its entity table, under the index's write lock."""

    def __init__(self, root: Path, ix: Any, table: EntityTable, merge: MergePolicy) -> None:
        self.root = root
        self._ix = ix
        self._table = table
        self._merge = merge

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
        """Add or replace `upserts` and drop `deletes` (keys) in one commit (SearchIndex.apply
        says how)."""
        docs: list[Document] = []
        deletes = list(deletes)
        adopted: list[Part] = []
        # A commit of a few documents (an add's) keeps its temporary files in memory.
        writer = self._writer(limitmb, temp_in_memory=limitmb <= SMALL_COMMIT_MB)
        with self._cancelled_on_error(writer):
            for key in deletes:
                writer.delete_by_term("key", key)
            for doc in upserts:
                docs.append(doc)
                if doc.key in new:
                    writer.add_document(**render_fields(doc))
                else:
                    writer.update_document(**render_fields(doc))
            adopted = list(parts())
            for part in adopted:
                self._move_in(part)
            segments = [part.segment for part in adopted]
            writer.commit(mergetype=lambda w, s: [*self._merge(w, s), *segments])
        keys = [key for part in adopted for key in part.keys]
        self._table.write(docs, deletes, meta or {}, new, entities or {}, keys)

    @contextlib.contextmanager
    def _cancelled_on_error(self, writer: Any) -> Iterator[None]:
        """Cancel `writer` when the block fails (its lock released), naming damage."""
        try:
            yield
        except Exception as err:
            with contextlib.suppress(Exception):  # the damage may break cancelling too
                writer.cancel()
            raise_if_damage(err, self.root, "written")
            raise

    def _move_in(self, part: Part) -> None:
        """Move a part's segment files beside this index's own (the commit lists them)."""
        prefix = f"{part.segment.segment_id()}."
        names = [name for name in os.listdir(part.folder) if name.startswith(prefix)]
        if not names:
            raise SearchIndexError(f"index part at {part.folder} has no segment files")
        for name in names:
            os.replace(part.folder / name, self.root / "whoosh" / name)

    def _writer(
        self, limitmb: int = 128, *, merging_all: bool = False, temp_in_memory: bool = False
    ) -> Any:
        """Return a writer holding the index's lock: a `TermWriter`, or Whoosh's own when
        the commit merges every segment (its pool spills to disk past `limitmb`)."""
        try:
            if merging_all:
                return self._ix.writer(timeout=30.0, limitmb=limitmb)
            return TermWriter(
                self._ix, timeout=30.0, limitmb=limitmb, temp_in_memory=temp_in_memory
            )
        except LockError as err:
            raise SearchIndexError(f"index at {self.root} is locked by another writer") from err
        except Exception as err:
            raise_if_damage(err, self.root, "written")
            raise

    def swap_in(self, replace: Callable[[dict[str, Any]], Part | None], gone: set[str]) -> bool:
        """Commit a merged segment in place of the segments `gone` (ids): `replace` is given
        the index's segments by id under the write lock and returns the part (index/merging.py),
        or None when one of them is gone; False if nothing was committed."""
        writer = self._writer()
        with self._cancelled_on_error(writer):
            part = replace({str(s.segment_id()): s for s in writer.segments})
            if part is None:
                writer.cancel()
                return False
            self._move_in(part)
            writer.commit(
                mergetype=lambda w, s: [
                    *(x for x in s if str(x.segment_id()) not in gone),
                    part.segment,
                ]
            )
        self._table.write([], [], {})
        return True

    def compact(self, merge: MergePolicy | None = None) -> None:
        """Merge every segment into one (seconds at 10,000 documents), or those `merge`
        does not keep."""
        writer = self._writer(merging_all=True)
        with self._cancelled_on_error(writer):
            if merge is None:
                writer.commit(optimize=True)
            else:
                writer.commit(mergetype=merge)
        self._table.write([], [], {})


def write_part(folder: Path, docs: Iterable[Document], limitmb: int = 128) -> Any | None:
    """Index `docs` into an index of their own under `folder`, as one segment for
    `SearchIndex.apply` to adopt (a fresh build shared by processes); None if none came."""
    _patches.apply()
    folder.mkdir(parents=True, exist_ok=True)
    ix = whoosh_index.create_in(str(folder), make_schema())
    writer = TermWriter(ix, limitmb=limitmb)
    try:
        with collector_paused():
            for doc in docs:
                writer.add_document(**render_fields(doc))
            writer.commit(merge=False)
    except BaseException:
        with contextlib.suppress(Exception):
            writer.cancel()
        raise
    segments = ix._segments()
    ix.close()
    return segments[0] if segments else None


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a part is written: its postings are
    millions of lists and tuples that make no cycles (reference counting frees them), and
    the collector walked them again and again (~3-6% of a rebuild's CPU). As it was after.
    The collector is the process's: a daemon's other threads' cycles wait meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
