"""Reading memory files for the index, in helper processes when there are many.

A large batch is read (and its entities found) by a second process while this one
indexes, a chunk ahead; a fresh build of many files is split among processes that each
read and index a share into a part of their own (memstore.index's pool, `Helper`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstore.catalog.staleness import cites_column
from memstore.core.codec import content_hash
from memstore.core.errors import VaultError
from memstore.core.model import Memory
from memstore.index import Document, Part, document_entities, write_part
from memstore.index.parts import Helper, parts_folder, serve, share_count, split, usable_cores
from memstore.vault.files import Vault

# (path, memory or None, why it could not be read, its entities if already extracted)
Read = tuple[str, Memory | None, str, list[tuple[str, str]] | None]
# What a helper sends back of a file it read: (path, its manifest row after the path and
# fingerprint or None, why it could not be read, its entities): no `Memory` to pickle.
Taken = tuple[str, tuple[object, ...] | None, str, list[tuple[str, str]] | None]
Progress = Callable[[int, int], None]
READER_MIN = 5000  # fewer files are read here: starting the reader costs ~0.2 s
READER_CHUNK = 1000
# A fresh build of at least PART_MIN files per core is shared among up to four processes,
# each writing a segment of its own (docs/benchmarks.md §5).
PART_MIN = 10_000
# This process's share against a helper's: equal, now that this process writes its own
# part before it waits for the helpers (docs/benchmarks.md, reindex, seventh session).
OWN_WEIGHT = 1.0
PART_CODE = "from memstore.catalog.reading import serve_part; serve_part()"
READS_CODE = "from memstore.catalog.reading import serve_reads; serve_reads()"

__all__ = [
    "HelperPart",
    "Read",
    "ReadPool",
    "Taken",
    "document_for",
    "limitmb",
    "manifest_row",
    "plan_shares",
]


def document_for(path: str, memory: Memory) -> Document:
    """Return the search document for a memory file."""
    return Document(
        key=path,
        id=memory.id,
        workspace=memory.workspace,
        kind=memory.kind,
        content=memory.body,
        keywords=memory.keywords,
        source=memory.source,
        created=memory.created,
        seen=memory.seen,
        hash=content_hash(memory.body),
    )


def manifest_row(memory: Memory, doc: Document) -> tuple[object, ...]:
    """Return a memory file's manifest row after its path and fingerprint (its problem
    fourth)."""
    return (
        *(doc.id, doc.workspace, doc.hash, memory.problem),
        *(memory.kind, " ".join(memory.supersedes), memory.created, memory.seen),
        *(memory.recalled, memory.last_recalled, memory.confirmed, memory.archived),
        cites_column(memory.cites),
        memory.session,
    )


def limitmb(documents: int) -> int:
    """Return the memory Whoosh may fill before it spills postings to disk (in MB)."""
    return 64 if documents <= 500 else 256 if documents <= 10_000 else 1024


def plan_shares(
    changed: list[str], *, fresh: bool, is_empty: Callable[[], bool]
) -> list[list[str]]:
    """Split a fresh build of many files (`fresh`: all new, nothing removed, nothing given
    in memory) into one share per core: this process indexes the first, a helper process
    each other one (returns [changed] when not worth it). Only an empty index (`is_empty`)
    takes segments built elsewhere."""
    count = share_count(len(changed), PART_MIN, usable_cores())
    if count < 2 or not fresh or not is_empty():
        return [changed]
    # This process also writes its share's segment and every entity row after the
    # helpers are done, so it reads and indexes more than each of them in the meantime.
    return split(changed, count, OWN_WEIGHT)


@dataclass(frozen=True)
class HelperPart:
    """What a helper made of its share: its segment (None: it indexed nothing), in
    `folder`, and what it read, in order."""

    folder: Path
    segment: Any
    reads: list[Taken]


class ReadPool:
    """The reads of one index update: this process's share (read a chunk ahead by a
    second process when large) and the helpers' shares, each read and indexed by a helper
    into a part (or, where a helper failed, read here)."""

    def __init__(self, vault: Vault, shares: list[list[str]], folder: Path, entities: bool):
        self.vault = vault
        self.shares = shares
        self._folder = parts_folder(folder, used=bool(shares))
        self._helpers: list[_PartHelper | None] = []
        self._root = folder
        self._entities = entities

    def __enter__(self) -> ReadPool:
        self._folder.__enter__()
        self._helpers = [
            _PartHelper.start(self.vault.root, self._root / str(n), share, self._entities)
            for n, share in enumerate(self.shares)
        ]
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            for helper in self._helpers:
                if helper is not None:
                    helper.stop()
        finally:
            self._folder.__exit__(*exc)

    def reads(
        self, own: list[str], memories: dict[str, Memory], progress: Progress | None, total: int
    ) -> Iterator[Read | HelperPart]:
        """Yield this process's reads in order, then each helper's part (or, where it
        failed, the reads of its share), reporting progress over all of them."""
        yield from self.own_reads(own, memories, progress, total)
        yield from self.parts(progress, total)

    def own_reads(
        self, own: list[str], memories: dict[str, Memory], progress: Progress | None, total: int
    ) -> Iterator[Read]:
        """Yield this process's reads in order, reporting progress over all shares."""
        for done, read in enumerate(
            read_files(self.vault, own, memories, alone=not self.shares), 1
        ):
            if progress is not None and (done % 200 == 0 or done == len(own)):
                progress(done + sum(h.done for h in self._helpers if h), total)
            yield read

    def parts(self, progress: Progress | None, total: int) -> Iterator[Read | HelperPart]:
        """Wait for each helper; yield its part (or, where it failed, the reads of its
        share, read here)."""
        for share, helper in zip(self.shares, self._helpers, strict=True):
            part = helper.result() if helper is not None else None
            if helper is None or part is None:  # it failed: this process reads its share
                yield from read_files(self.vault, share, {})
            else:
                yield HelperPart(helper.folder, *part)
        if progress is not None and self.shares:
            progress(total, total)

    def write_own(self, name: str, docs: Iterable[Document], count: int) -> Part | None:
        """Index `docs` (about `count`) into a part of this process's own, in the folder
        the helpers' parts are in; None if none came."""
        folder = self._root / name
        keys: list[str] = []

        def keyed() -> Iterator[Document]:
            for doc in docs:
                keys.append(doc.key)
                yield doc

        segment = write_part(folder, keyed(), limitmb(count))
        return None if segment is None else Part(folder, segment, tuple(keys))


def read_files(
    vault: Vault, paths: list[str], memories: dict[str, Memory], *, alone: bool = True
) -> Iterator[Read]:
    """Read `paths` in order; a large batch is read (and its entities found) by a second
    process while this one indexes, a chunk ahead (a rebuild: ~25% of the work), unless
    not `alone` (helpers indexing shares of the build have the other cores) or this
    process may use one core only (the reader would only add its pickled answers)."""
    if len(paths) < READER_MIN or memories or not alone or usable_cores() < 2:
        for path in paths:
            yield read_one(vault, path, memories)
        return
    chunks = [paths[i : i + READER_CHUNK] for i in range(0, len(paths), READER_CHUNK)]
    reader = Helper.start(READS_CODE, [str(vault.root), *chunks])
    try:
        for chunk in chunks:
            batch = reader.receive() if reader is not None else None
            if batch is None:
                if reader is not None:
                    reader.stop()
                reader = None  # it failed: this process reads the rest
                batch = [read_one(vault, path, memories) for path in chunk]
            yield from batch
    finally:
        if reader is not None:
            reader.stop()  # done, or abandoned: what it still had to say is not needed


def read_one(vault: Vault, path: str, memories: dict[str, Memory]) -> Read:
    try:
        return path, memories.get(path) or vault.read(path), "", None
    except VaultError as err:
        return path, None, str(err), None


def serve_reads() -> None:
    """Run as the reader process: read chunks of paths named on stdin, answer on stdout."""

    def work(receive: Callable[[], Any], answer: Callable[[object], None]) -> None:
        vault = Vault(Path(receive()))
        while True:
            try:
                paths = receive()
            except EOFError:
                return
            batch = []
            for path in paths:
                path, memory, error, _ = read_one(vault, path, {})
                found = None if memory is None else document_entities(document_for(path, memory))
                batch.append((path, memory, error, found))
            answer(batch)

    serve(work)


class _PartHelper:
    """A helper reading, parsing and indexing one share of a fresh build into a folder of
    its own (`serve_part`), while this process indexes another.

    It reports how far it got as it goes and, at the end, its segment and what it read;
    a thread listens, so that it never waits on this process.
    """

    def __init__(self, helper: Helper, folder: Path) -> None:
        self._helper = helper
        self.folder = folder
        self.done = 0
        self._result: tuple[Any, list[Taken]] | None = None
        self._listener = threading.Thread(target=self._listen, daemon=True)
        self._listener.start()

    @classmethod
    def start(
        cls, root: Path, folder: Path, paths: list[str], entities: bool
    ) -> _PartHelper | None:
        job = (str(root), str(folder), paths, limitmb(len(paths)), entities)
        helper = Helper.start(PART_CODE, [job])
        return None if helper is None else cls(helper, folder)

    def _listen(self) -> None:
        while (message := self._helper.receive()) is not None:
            try:
                if message[0] == "done":
                    self.done = message[1]
                elif message[0] == "part":
                    self._result = (message[1], message[2])
                    return
            except (IndexError, TypeError):
                return  # not one of ours: result() says it failed

    def result(self) -> tuple[Any, list[Taken]] | None:
        """Wait for the helper; return its segment and what it read, or None if it failed."""
        self._listener.join()
        if not self._helper.succeeded():
            return None
        return self._result

    def stop(self) -> None:
        self._helper.stop()
        self._listener.join()


def serve_part() -> None:
    """Run as a helper process: index the share of a fresh build named on stdin."""

    def work(receive: Callable[[], Any], answer: Callable[[object], None]) -> None:
        root, folder, paths, limit, keep_entities = receive()
        vault = Vault(Path(root))
        reads: list[Taken] = []

        def documents() -> Iterator[Document]:
            for done, path in enumerate(paths, 1):
                if done % 1000 == 0:  # a parent that is gone breaks the pipe: this one stops
                    answer(("done", done))
                path, memory, error, _ = read_one(vault, path, {})
                if memory is None:
                    reads.append((path, None, error, []))
                    continue
                doc = document_for(path, memory)
                found = document_entities(doc) if keep_entities else []
                reads.append((path, manifest_row(memory, doc), error, found))
                yield doc

        answer(("part", write_part(Path(folder), documents(), limit), reads))

    serve(work)
