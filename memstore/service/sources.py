"""Ingested source trees as the store serves them: the code index, opened and refreshed."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.catalog.code_roots import BusyError, CodeRoot, ingested, registered_roots
from memstore.core.errors import InvalidInputError
from memstore.core.model import GLOBAL, check_workspace
from memstore.service.resources import Part

if TYPE_CHECKING:  # the code catalog is imported once a vault holds ingested code
    from memstore.catalog.codebase import CodeIndex, IngestSummary
    from memstore.catalog.indexer import Progress

# With no watcher, a search walks the ingested trees for changed code (~40 ms at 3,000
# files): the first search of a process does, then at most one every this many seconds.
SOURCES_REFRESH_S = 2.0


class Sources(Part):
    """The code index beside the memories (memstore/catalog/codebase.py does the work)."""

    def code_index(self) -> CodeIndex | None:
        """Return the index of ingested source trees (None when none was ever ingested).

        Never takes the vault lock, never chunks: a reader serves what the code index holds
        (writers, memstore/catalog/codebase.py, refill what a deletion or a killed run left out).
        """
        shared = self.store.shared
        with shared.code_mutex:
            if shared.code is not None and shared.code.is_replaced():
                shared.code.close()  # deleted or rebuilt by another process: read the new one
                shared.code = None
            if shared.code is None and ingested(shared.vault.state_dir):
                from memstore.catalog.codebase import CodeIndex

                shared.code = CodeIndex.open(shared.vault.state_dir)
                shared.code.search.holds_terms = shared.resident
            return shared.code

    def writable(self) -> CodeIndex:
        """Return the code index, created when none exists yet."""
        code = self.code_index()
        if code is not None:
            return code
        shared = self.store.shared
        with shared.code_mutex:
            if shared.code is None:
                from memstore.catalog.codebase import CodeIndex

                shared.code = CodeIndex.open(shared.vault.state_dir)
            return shared.code

    def ingest(
        self, path: Path, workspace: str, *, dry_run: bool = False, progress: Progress | None = None
    ) -> IngestSummary:
        """Chunk the source tree at `path` into `workspace` (memstore/catalog/codebase.py).

        It holds the code index's own writer lock, never the vault's: memories are written
        meanwhile, and searches wait only for its short writing steps.
        """
        check_workspace(workspace, for_add=True)
        root = path.resolve()
        vault = self.store.vault.root.resolve()
        if root == vault or vault in root.parents or root in vault.parents:
            raise InvalidInputError(
                f"{root} holds or is inside the vault {vault}; ingest a source tree outside it"
            )
        code = self.writable()
        for other in code.roots():
            known = Path(other.path)
            if root != known and (known in root.parents or root in known.parents):
                raise InvalidInputError(
                    f"{root} overlaps the ingested folder {known}; ingest one of them "
                    f"(memstore ingest --remove {known} drops that one)"
                )
        return code.ingest(root, workspace, dry_run=dry_run, progress=progress)

    def forget_source(self, path: Path) -> tuple[CodeRoot, int]:
        """Unregister an ingested source tree and drop its chunks."""
        return self.writable().remove(path)

    def refresh_source(self, path: str, *, wait: float = 0.0) -> IngestSummary | None:
        """Bring one ingested root's chunks up to date (None when it is not registered, or
        another process is writing the code index over `wait` s: the caller tries later)."""
        code = self.code_index()
        if code is None or not Path(path).is_dir():
            return None
        root = next((r for r in code.roots() if r.path == path), None)
        return None if root is None else code.refresh(root, wait=wait)

    def refresh_sources(self, *, wait: float = 0.0) -> None:
        """Chunk what changed in the ingested roots chunked whole (a reader with no watcher
        running: nothing else does); a root another process keeps writing is skipped, and
        one not chunked whole is left to a writer (`ingest`, `reindex`, a watcher)."""
        code = self.code_index()
        if code is None:
            return
        for root in code.roots():
            if Path(root.path).is_dir():
                code.refresh(root, wait=wait, refill=False)

    def refresh_now_and_then(self) -> None:
        """Refresh the ingested roots at this process's first search, then at most once
        every SOURCES_REFRESH_S: a walk stats every file, so searches in a row share one."""
        shared = self.store.shared
        now = time.monotonic()
        last = shared.sources_refreshed
        if last is not None and now - last < SOURCES_REFRESH_S:
            return
        shared.sources_refreshed = now
        self.refresh_sources()

    def refill_sources(self) -> None:
        """Chunk ingested roots the code index lacks (deleted, or a killed run's)."""
        code = self.code_index()
        if code is None:
            return
        with contextlib.suppress(BusyError), code.writing(wait=0.0):
            code.refill()

    def workspaces(self) -> list[str]:
        """Return the vault's workspaces: its folders with a workspace's name, `global`, and
        those of ingested source trees."""
        vault = self.store.vault
        names = {GLOBAL}
        for entry in vault.root.iterdir():
            if entry.is_dir() and not entry.name.startswith("."):
                with contextlib.suppress(InvalidInputError):
                    names.add(check_workspace(entry.name))
        names.update(root.workspace for root in registered_roots(vault.state_dir))
        return sorted(names)

    def source_roots(self) -> list[tuple[CodeRoot, int]]:
        """Return each ingested source tree with its chunk count."""
        code = self.code_index()
        if code is None:
            return []
        return [(root, code.chunk_count(root.path)) for root in code.roots()]
