"""The semantic view as the store keeps it in step (optional, off by default: docs/retrieval.md)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from memstore.catalog.indexer import Progress
from memstore.core.codec import normalize_text
from memstore.core.config import SEMANTIC_ON
from memstore.service.resources import Part

TYPE_CHECKING = False  # the view is off by default: a search without it imports none of it
if TYPE_CHECKING:
    from memstore.catalog.semantic import VectorIndex

# The semantic view embeds this many memories per hold of the vault lock (~0.3 s), and says
# so in one line when a search must embed more than EMBED_NOTICE first.
EMBED_BATCH = 64
EMBED_NOTICE = 500
log = logging.getLogger(__name__)


class Vectors(Part):
    """This request's semantic view (Settings.semantic names the model), in step with the index."""

    def in_step(self) -> bool:
        """Say whether this request's semantic view matches the index as it is now."""
        choice = self.store.settings.semantic
        at = self.store.shared.vectors_at
        return bool(choice) and at.get(choice) == self.store.indexer.search.version()

    def view(
        self,
        *,
        locked: bool,
        written: Iterable[str] | None = None,
        progress: Progress | None = None,
    ) -> VectorIndex | None:
        """Return this request's semantic view (None when off), in step with the index.

        Vectors are a cache keyed by each memory's content hash: bringing them in step
        embeds only new and changed memories. `written` names the only files changed since
        the view was last in step (a write's fast path); else every hash is compared, which
        happens once per index change. A reader (`locked` False) that finds the vault lock
        taken uses the view as it is: readers never wait, and the writer embeds.

        Raises:
            InvalidInputError: the extra is not installed, or the model folder holds no model.
        """
        store = self.store
        choice = store.settings.semantic
        if not choice:
            return None
        shared = store.shared
        vectors = shared.vector_views.get(choice)
        if vectors is None:
            from memstore.catalog.semantic import VectorIndex, load_embedder

            model = load_embedder(None if choice == SEMANTIC_ON else Path(choice))
            vectors = VectorIndex.open(store.vault.state_dir / "semantic", model)
            shared.vector_views[choice] = vectors
        version = store.indexer.search.version()
        if shared.vectors_at.get(choice) == version:
            return vectors
        if locked:
            self._embed(vectors, written, progress, lambda: contextlib.nullcontext(True))
        elif not self._embed(vectors, None, progress, store.vault.try_lock):
            return vectors  # a writer holds the lock: the next search goes on
        shared.vectors_at[choice] = version
        return vectors

    def _embed(
        self,
        vectors: VectorIndex,
        written: Iterable[str] | None,
        progress: Progress | None,
        lock: Callable[[], contextlib.AbstractContextManager[bool]],
    ) -> bool:
        """Embed what the index holds and the vectors lack; say whether all of it was done.

        Each batch takes `lock` on its own, so a reader embedding a whole vault (the first
        search with the view on) lets a waiting writer in between batches, and stops (False)
        when it cannot take the lock back.
        """
        from memstore.catalog.semantic import Passage

        indexer = self.store.indexer
        entries = indexer.entries() if written is None else indexer.by_path(list(written))
        memories = {e.path: (e.hash, e.workspace) for e in entries}
        held = vectors.digests()
        missing = [path for path, (digest, _) in memories.items() if held.get(path) != digest]
        gone = [] if written is not None else [path for path in held if path not in memories]
        if len(missing) > EMBED_NOTICE:
            log.warning(
                "semantic view: embedding %d memories (once; memstore reindex shows progress)",
                len(missing),
            )
        with lock() as taken:
            if not taken:
                return False
            vectors.drop(gone)
        for start in range(0, len(missing), EMBED_BATCH):
            paths = missing[start : start + EMBED_BATCH]
            documents = indexer.search.get(paths)
            passages = [
                Passage(path, *memories[path], normalize_text(documents[path].content))
                for path in paths
                if path in documents
            ]
            with lock() as taken:
                if not taken:
                    return False
                vectors.put(passages)
            if progress is not None:
                progress(start + len(paths), len(missing))
        return True
