"""Bringing the memories' index up to date with the files: plan, read, index, record.

A full catch-up compares every file with the manifest; a quick one lists again only the
folders whose modification time changed, which finds every new, deleted, renamed or
atomically saved file but not a file rewritten in place. Either hands its listing and the
manifest's record to the planner (memstore/catalog/plan.py) and applies the plan: the
files are read (memstore/catalog/reading.py), indexed, and recorded in the manifest.

A file read within its racy window (plan.py) may be rewritten in place with as many bytes
in that same clock tick, keeping the fingerprint it was read with: it is recorded as racy,
its folder as RACY, and the next catch-up reads it again. When what it reads is what the
index holds (the same document and manifest row), only the racy mark goes: no index
write, not counted. Files memstore wrote itself (`record_all`) are recorded settled.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from memstore.catalog.compare import Compared, compare_all, recheck
from memstore.catalog.listings import Entries, Listings, Seen
from memstore.catalog.memory_manifest import Folders, MemoryManifest
from memstore.catalog.plan import RACY, Plan, is_racy, plan_catch_up, settle_all
from memstore.catalog.reading import (
    HelperPart,
    Read,
    ReadPool,
    Taken,
    document_for,
    limitmb,
    manifest_row,
    plan_shares,
)
from memstore.core.errors import VaultError
from memstore.core.faults import crash_point
from memstore.core.model import FileProblem, Memory
from memstore.index import Document, Part, SearchIndex, SearchIndexError, document_entities
from memstore.index.schema import parse_stored, render_fields
from memstore.vault.files import Fingerprint, Vault

Progress = Callable[[int, int], None]
# A catch-up reading more files than this indexes and records them a chunk at a time: a
# memory file held for the one commit costs ~4.5 KB (its postings, document, manifest row
# and entities: a first sync of 1,000,000 peaked at 4.4 GiB), so a chunk ~250 MB.
CHUNK_FILES = 50_000
# A catch-up listing more folders than this does not remember them (Listings): a write's
# own lists one or two; one after a sync or a clone lists hundreds, and a `scandir` more
# of each would add ~15% to it for folders the next adds mostly do not write to.
SNAPSHOT_FOLDERS = 16


@dataclass(frozen=True)
class CatchUp:
    """What a catch-up changed."""

    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    problems: tuple[FileProblem, ...] = ()


@dataclass(frozen=True)
class Moved:
    """HEAD moved from `before` to commit `head` by memstore's own checkout (a sync's
    merge), which changed only `paths` in the work tree (git's diff of the two commits)."""

    before: tuple[str, int]
    head: str
    paths: tuple[str, ...]

    def folders(self) -> set[str]:
        return {_parent(path) for path in self.paths}


class Updater:
    """One update of the memories' index (its search index and manifest) from the files."""

    def __init__(
        self,
        vault: Vault,
        search: SearchIndex,
        manifest: MemoryManifest,
        listings: Listings | None = None,
    ) -> None:
        self.vault = vault
        self.search = search
        self.manifest = manifest
        # the folders' entries as this process's index holds them (listings.py): a folder
        # whose time changed but whose entries did not (this process's own writes) is
        # not listed again
        self.listings = listings

    def full(
        self,
        progress: Progress | None,
        workspace: str | None = None,
        skipped: list[FileProblem] | None = None,
    ) -> CatchUp:
        """Compare every file (of `workspace`, or the vault) with the manifest (`skipped`
        receives the entries that look like memories but are not read: why, one each)."""
        started, head = time.time_ns(), self.vault.head()
        folders: dict[str, int] = {}
        plan, on_disk = compare_all(self.vault, self.manifest, workspace, skipped, folders)
        meta = {}
        if workspace is None:
            meta = {"full-at": f"{started / 1e9:.3f}", "git": f"{head[0]} {head[1]}"}
        scope = Folders(settle_all(folders, started), replaced=workspace or "")
        return self.apply_plan(plan, on_disk, progress, folders=scope, meta=meta, started=started)

    def apply_compared(self, compared: Compared, progress: Progress | None) -> CatchUp:
        """Apply a comparison made without the lock (compare.py), under it: only the paths
        it named, each looked at again (`recheck`), and the folders it listed recorded at
        the times it listed them (a folder changed since is listed again next time). HEAD
        and the time of the full catch-up are recorded only if HEAD has not moved since."""
        plan, on_disk = recheck(self.vault, self.manifest, compared)
        meta = {}
        head = compared.head
        if compared.workspace is None and self.vault.head() == head:
            meta = {"full-at": f"{compared.started / 1e9:.3f}", "git": f"{head[0]} {head[1]}"}
        mtimes = settle_all(compared.folders, compared.started)
        scope = Folders(mtimes, replaced=compared.workspace or "")
        return self.apply_plan(
            plan, on_disk, progress, folders=scope, meta=meta, started=compared.started
        )

    def quick(
        self, workspace: str | None, progress: Progress | None, also: Collection[str] = ()
    ) -> CatchUp:
        """List again only the folders whose modification time changed (and `also` these:
        where a checkout of memstore's rewrote files in place, see `Moved`).

        Writes nothing to the index unless a file changed: a read-only command records at
        most the folders it listed whose mtimes have settled, and those it found new as
        unsettled (`_settle`); a folder still unsettled, or HEAD moved by commits, is looked
        at again next time, and the full catch-up records both. With `also`, HEAD is
        recorded as seen in any case.
        """
        started, head = time.time_ns(), self.vault.head()
        known = self.manifest.folders(workspace)
        if (workspace or "") not in known:
            return self.full(progress, workspace)  # never listed: (first) full catch-up
        # A folder of `also` the manifest does not know (new, or left unrecorded by an older
        # memstore's `_settle`) is found from the nearest folder above it that it knows.
        wanted = {_known_above(folder, known) for folder in also}
        own: dict[str, int] = {}  # folders changed by this process's own writes alone
        dirty = sorted(
            f for f, mtime in known.items() if f in wanted or self._changed(f, mtime, own)
        )
        self.record_own(own, started)
        moved = {"git": f"{head[0]} {head[1]}"} if also else {}
        if not dirty:
            if moved:
                self.manifest.write([], [], Folders({}), moved)
            return CatchUp()
        snapshots = self._snapshots(dirty)
        on_disk, listed, gone = self._list_again(dirty, known)
        racy = self.manifest.racy(workspace)
        plan = plan_catch_up(on_disk, self.manifest.fingerprints_in(listed, gone), racy)
        if not plan:
            if not gone:
                self._settle(listed, known, started)
            if moved:
                self.manifest.write([], [], Folders({}), moved)
            self._remember(snapshots, listed, gone, on_disk, started)
            return CatchUp()
        folders = Folders(settle_all(listed, started), gone=tuple(sorted(gone)))
        meta = {"git": f"{head[0]} {head[1]}"}  # HEAD moved by commits alone, if at all
        result = self.apply_plan(
            plan, on_disk, progress, folders=folders, meta=meta, started=started
        )
        unread = {_parent(p) for p in set(plan.to_index) - set(result.updated)}
        kept = {f: e for f, e in snapshots.items() if f not in unread}
        self._remember(kept, listed, gone, on_disk, started)
        return result

    def _changed(self, folder: str, recorded: int, own: dict[str, int]) -> bool:
        """Say whether a folder must be listed again: its time is not the one recorded, nor
        is it as this process's index holds it (Listings.unchanged; `own` receives those
        with their time now)."""
        now = self.vault.folder_mtime(folder)
        if now == recorded:
            return False
        if self.listings is None or now is None or not self.listings.unchanged(folder, now):
            return True
        own[folder] = now
        return False

    def record_own(self, own: dict[str, int], started: int) -> None:
        """Record in the manifest the folders whose time moved only by this process's own
        writes, once that time has settled: a later reader without this process's listings
        (a search without the daemon) then does not list them again."""
        settled = {f: m for f, m in settle_all(own, started).items() if m != RACY}
        if settled:
            with contextlib.suppress(SearchIndexError):  # not writable: listed next time
                self.manifest.write([], [], Folders(settled), {})

    def _snapshots(self, folders: list[str]) -> dict[str, Entries]:
        """The entries of `folders` read before they are listed (see Listings.snapshot)."""
        if self.listings is None or len(folders) > SNAPSHOT_FOLDERS:
            return {}
        taken = {folder: self.listings.snapshot(folder) for folder in folders}
        return {folder: entries for folder, entries in taken.items() if entries is not None}

    def _remember(
        self,
        snapshots: dict[str, Entries],
        listed: dict[str, int],
        gone: set[str],
        on_disk: dict[str, Fingerprint],
        started: int,
    ) -> None:
        """Record the folders the index was just brought up to date from, at the time the
        listing read (not those whose files could not all be read, nor those with a file
        too recent to trust: listed again next time, see Listings.remember)."""
        if self.listings is not None:
            self.listings.forget(gone)
            seen: dict[str, Seen] = {
                f: (listed[f], entries) for f, entries in snapshots.items() if f in listed
            }
            self.listings.remember(seen, on_disk, started)

    def _settle(self, listed: dict[str, int], known: dict[str, int], started: int) -> None:
        """Record the folders a look found as indexed whose mtimes have settled, and those
        it found new (under a folder whose time moved) as RACY.

        After a clone, a sync or a reindex, every folder was changed too recently to trust
        (RACY). Without this, each later reader listed them all again (a 10k vault's every
        file, ~60 ms a search) until the next full catch-up recorded them.

        A new folder still too recent to trust is recorded too (as RACY: listed again next
        time). Left out, it was known to no later quick catch-up once its parent settled:
        an add's month folder changes after its parents (the file is written and synced
        to disk after the mkdir), so a look between found the parents settled and the
        month folder racy, and a memory moved or edited in it later stayed indexed as it
        was (the quick catch-up lists only known folders).
        """
        settled = {
            folder: mtime
            for folder, mtime in settle_all(listed, started).items()
            if known.get(folder) != mtime and (mtime != RACY or folder not in known)
        }
        if settled:
            with contextlib.suppress(SearchIndexError):  # not writable: list them next time
                self.manifest.write([], [], Folders(settled), {})

    def _list_again(
        self, dirty: list[str], known: dict[str, int]
    ) -> tuple[dict[str, Fingerprint], dict[str, int], set[str]]:
        """List the `dirty` folders (and folders new under them); return the files found,
        the folders listed with their mtimes, and the known folders that are gone."""
        on_disk: dict[str, Fingerprint] = {}
        listed: dict[str, int] = {}
        gone: set[str] = set()
        for folder in dirty:
            if any(_is_under(folder, g) for g in gone):
                continue
            subfolders = self.vault.scan_folder(folder, on_disk, None, listed)
            if folder not in listed:
                gone.add(folder)  # gone, no longer a folder, or unreadable
                continue
            for sub in subfolders:
                if sub not in known:
                    self.vault.scan_tree(sub, on_disk, None, listed)
            gone.update(f for f in known if _parent(f) == folder and f not in subfolders)
        unreadable = {f for f in gone if self.vault.folder_mtime(f) is not None}
        return on_disk, listed, gone - unreadable  # an unreadable folder keeps its entries

    def record_all(self, memories: Mapping[str, Memory]) -> None:
        """Index files memstore has just written, in one index commit."""
        paths = list(memories)
        if not paths:
            return
        stats = {path: self.vault.path(path).stat() for path in paths}
        fingerprints = {path: (st.st_mtime_ns, st.st_size) for path, st in stats.items()}
        known = {entry.path for entry in self.manifest.by_path(paths)}
        new = tuple(path for path in paths if path not in known)
        self.apply(paths, [], fingerprints, None, memories=dict(memories), new=new)
        if self.listings is not None:
            self.listings.wrote((path, st.st_ino) for path, st in stats.items())

    def apply_plan(
        self,
        plan: Plan,
        on_disk: dict[str, Fingerprint],
        progress: Progress | None,
        *,
        folders: Folders,
        meta: dict[str, str],
        started: int,
    ) -> CatchUp:
        """Index what a catch-up's plan found added or changed, and drop what it removed.

        The files it reads that changed within their racy window (`started`: when the look
        began) are recorded as racy, their folders as RACY; an unsure file (read in its
        racy window by an earlier catch-up) is read again and indexed only if what it
        yields is not what the index holds, else its racy mark goes once it has settled.
        """
        changed, new = plan.to_index, set(plan.added)
        differ, same = self.look_again(list(plan.unsure))
        changed = sorted([*changed, *differ]) if differ else changed
        racy = {p for p in [*changed, *same] if is_racy(on_disk[p][0], started)}
        if racy:  # listed again by the next quick catch-up
            mtimes = {**folders.mtimes, **{_parent(p): RACY for p in racy}}
            folders = replace(folders, mtimes=mtimes)
        return self.apply(
            changed,
            plan.removed,
            on_disk,
            progress,
            folders=folders,
            meta=meta,
            new=new,
            racy=racy - set(same),
            settled=[p for p in same if p not in racy],
        )

    def look_again(self, paths: list[str]) -> tuple[list[str], list[str]]:
        """Read unsure files again; return those whose document or manifest row is not
        what the index holds (or that cannot be read), and those it holds as they are.

        The document and the row are all the index keeps of a file: its hash alone is the
        body's, which a change of front matter (keywords, source) does not move.
        """
        if not paths:
            return [], []
        held = self.search.get(paths)
        rows = self.manifest.rows_of(paths)
        differ, same = [], []
        for path in paths:
            try:
                memory = self.vault.read(path)
            except VaultError:
                differ.append(path)  # indexed as an unreadable file is (its problem said)
                continue
            doc = document_for(path, memory)
            kept = held.get(path) == parse_stored(render_fields(doc))
            if kept and rows.get(path) == manifest_row(memory, doc):
                same.append(path)
            else:
                differ.append(path)
        return differ, same

    def apply(
        self,
        changed: Iterable[str],
        removed: Iterable[str],
        on_disk: dict[str, Fingerprint],
        progress: Progress | None,
        memories: dict[str, Memory] | None = None,
        *,
        folders: Folders | None = None,
        meta: dict[str, str] | None = None,
        new: Collection[str] = (),
        racy: Collection[str] = (),
        settled: Collection[str] = (),
    ) -> CatchUp:
        """Index the `changed` files (read from disk, or given in `memories`), drop the
        `removed` ones, and record both in the manifest with the `folders` listed (`racy`:
        those of `changed` read within their racy window; `settled`: files no longer racy).

        More than CHUNK_FILES files read from disk are indexed and recorded a chunk at a
        time (`_chunks`), so what a bulk catch-up holds is bounded by the chunk.
        """
        changed, removed, new = list(changed), list(removed), set(new)
        chunks = [changed] if memories else _chunks(changed, CHUNK_FILES)
        # a build in chunks asks before its first commit (_index: parts of a fresh build)
        was_empty = None if len(chunks) == 1 else not self.search.document_count()

        def is_empty() -> bool:
            return not self.search.document_count() if was_empty is None else was_empty

        updated: list[str] = []
        problems: list[FileProblem] = []
        unreadable: set[str] = set()
        done = 0
        for number, chunk in enumerate(chunks, 1):
            last = number == len(chunks)
            batch = self._index(
                chunk,
                removed if last else [],
                on_disk,
                _offset(progress, done, len(changed)),
                memories or {},
                new=new,
                is_empty=is_empty,
            )
            done += len(chunk)
            unreadable.update(batch.unreadable)
            updated += (path for path in chunk if path not in unreadable)
            problems += batch.problems
            if not last:
                # The files only: the folders listed and HEAD seen are recorded with the
                # last chunk, so a catch-up killed before it is done again by the next one
                # (which finds these chunks' files indexed as they are).
                self.manifest.write(batch.rows, [], Folders({}), {}, racy=batch.of(racy))
                crash_point("catch-up-chunk")
                continue
            if unreadable and folders is not None:  # list their folders again next time
                retry = {_parent(path): RACY for path in unreadable}
                folders = replace(folders, mtimes={**folders.mtimes, **retry})
            self.manifest.write(
                batch.rows,
                removed,
                folders or Folders({}),
                meta or {},
                racy=batch.of(racy),
                settled=settled,
            )
        return CatchUp(tuple(updated), tuple(removed), tuple(problems))

    def _index(
        self,
        changed: list[str],
        removed: list[str],
        on_disk: dict[str, Fingerprint],
        progress: Progress | None,
        memories: dict[str, Memory],
        *,
        new: set[str],
        is_empty: Callable[[], bool],
    ) -> _Batch:
        """Index `changed` and drop `removed` in one index commit; return what was read.

        A chunk of a fresh build (every file new, nothing removed) into an index that was
        empty when the build began is shared among processes like a whole one: the index
        then holds only this build's documents, none of which it held before.
        """
        fresh = not removed and not memories and all(path in new for path in changed)
        own, *shares = plan_shares(changed, fresh=fresh, is_empty=is_empty)
        keeps_entities = self.search.keeps_entities
        batch = _Batch(on_disk, entities=keeps_entities and bool(shares))
        adopted: list[Part] = []
        parts = self.search.root / "parts"
        with ReadPool(self.vault, shares, parts, keeps_entities) as pool:
            if shares:
                # This process writes its share as a part too, before it waits for the
                # helpers (its commit then only adopts): what it does after they are done
                # is what no other process can do meanwhile (a rebuild's wall time).
                mine = pool.write_own(
                    "own",
                    batch.documents(pool.own_reads(own, memories, progress, len(changed)), adopted),
                    len(own),
                )
                rest = list(batch.documents(pool.parts(progress, len(changed)), adopted))
                # the shares of helpers that failed, read here
                here = pool.write_own("here", rest, len(rest)) if rest else None
                adopted += [part for part in (here, mine) if part is not None]
                self.search.apply([], new=new, entities=batch.entities, parts=lambda: adopted)
            elif changed or removed:
                reads = pool.reads(own, memories, progress, len(changed))
                self.search.apply(
                    batch.documents(reads, adopted),
                    removed,
                    limitmb=limitmb(len(own)),
                    new=new,
                    entities=batch.entities,
                    parts=lambda: adopted,
                )
        return batch


def _chunks(paths: list[str], size: int) -> list[list[str]]:
    """Split `paths` in order into chunks of about one length, none over `size` (one
    chunk, even of nothing, when they fit)."""
    if len(paths) <= size:
        return [paths]
    count = -(-len(paths) // size)
    step = -(-len(paths) // count)
    return [paths[start : start + step] for start in range(0, len(paths), step)]


def _offset(progress: Progress | None, done: int, total: int) -> Progress | None:
    """Report one chunk's progress as progress over the whole catch-up."""
    if progress is None:
        return None
    report = progress
    return lambda step, _: report(done + step, total)


class _Batch:
    """What one index update makes of the files it reads: their documents, their manifest
    rows and entities, and what could not be read (it keeps its previous entry)."""

    def __init__(self, on_disk: dict[str, Fingerprint], *, entities: bool = False) -> None:
        self.on_disk = on_disk
        # find the entities of what this process reads as it reads it (a shared build's
        # own share, whose documents go into a part: the commit's table has only keys)
        self.find_entities = entities
        self.rows: list[tuple[object, ...]] = []
        self.problems: list[FileProblem] = []
        self.unreadable: list[str] = []
        self.entities: dict[str, list[tuple[str, str]]] = {}

    def documents(
        self, reads: Iterable[Read | HelperPart], adopted: list[Part]
    ) -> Iterator[Document]:
        """Yield the documents of `reads`; a helper's part is adopted, its reads recorded."""
        for read in reads:
            if isinstance(read, HelperPart):
                keys = tuple(taken[0] for taken in read.reads if self.record(taken))
                if read.segment is not None:
                    adopted.append(Part(read.folder, read.segment, keys))
            elif (doc := self.take(read)) is not None:
                yield doc

    def take(self, read: Read) -> Document | None:
        """Record one read file; return its document (None: it could not be read)."""
        path, memory, error, found = read
        if memory is None:
            self.record((path, None, error, None))
            return None
        doc = document_for(path, memory)
        if found is None and self.find_entities:
            found = document_entities(doc)
        self.record((path, manifest_row(memory, doc), error, found))
        return doc

    def of(self, paths: Collection[str]) -> list[str]:
        """Return those of `paths` this batch recorded."""
        return [str(row[0]) for row in self.rows if row[0] in paths] if paths else []

    def record(self, taken: Taken) -> bool:
        """Record one file as a helper sent it back; say whether it could be read."""
        path, row, error, found = taken
        if row is None:
            # An unreadable file keeps its previous index entry: not a deletion.
            self.unreadable.append(path)
            self.problems.append(FileProblem(path, error))
            return False
        if row[3]:  # its problem
            self.problems.append(FileProblem(path, str(row[3])))
        if found is not None:  # else the entity table finds them
            self.entities[path] = found
        fp = self.on_disk[path]
        self.rows.append((path, fp[0], fp[1], *row))
        return True


def _parent(folder: str) -> str:
    return folder.rpartition("/")[0]


def _known_above(folder: str, known: Mapping[str, int]) -> str:
    """Return `folder` if the manifest knows it, else the nearest folder above it that it
    knows (the vault's own folder, '', is always known to a quick catch-up)."""
    while folder and folder not in known:
        folder = _parent(folder)
    return folder


def _is_under(folder: str, parent: str) -> bool:
    return bool(parent) and folder.startswith(f"{parent}/")
