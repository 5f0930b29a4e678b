"""Opening the index, and recovering it: a damaged one moved aside, an outdated one replaced.

`open_index` opens the index under a vault's `.memstore/` (removing what earlier indexes
left: leftovers.py); one that is not there is created empty (the next catch-up fills it),
one another memstore version built is rebuilt without a copy (an upgrade, not damage), and
a damaged one is moved aside (kept KEEP_DAYS) and rebuilt from the files, with one warning
saying so. Where `.memstore/` cannot be written, a temporary index answers instead.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from memstore.catalog.indexer import INDEX_DIR, CatchUp, Indexer, one_line, rebuild
from memstore.catalog.leftovers import remove_leftovers
from memstore.catalog.memory_manifest import FORMAT, OutdatedManifestError
from memstore.core.errors import VaultError
from memstore.index import SearchIndex, SearchIndexError
from memstore.vault.files import Vault

log = logging.getLogger(__name__)


def open_index(vault: Vault) -> Indexer:
    """Open the index; a damaged or outdated one is rebuilt from the files, a missing one
    is created empty (the next catch-up fills it)."""
    root = vault.state_dir / INDEX_DIR
    remove_leftovers(vault)
    if not os.path.lexists(root):
        try:  # a first index, empty: the next catch-up fills it, even beside a watcher
            indexer = Indexer._open_at(vault, root)
        except (VaultError, SearchIndexError):
            return recover(vault, None)
        indexer.unfilled = True
        return indexer
    built = SearchIndexError(f"index at {root} was built by another memstore version")
    try:
        indexer = Indexer._open_at(vault, root, create=False)
    except OutdatedManifestError:  # another version's: not damage, nothing kept aside
        return recover(vault, built, keep=False)
    except SearchIndexError as err:
        return recover(vault, err)
    try:
        outdated = indexer.manifest.meta("format") not in (None, FORMAT)
    except SearchIndexError as err:
        indexer.close()
        return recover(vault, err)
    if outdated:  # not damage: nothing worth keeping aside
        indexer.close()
        return recover(vault, built, keep=False)
    return indexer


def recover(vault: Vault, err: SearchIndexError | None, *, keep: bool = True) -> Indexer:
    """Move a damaged index aside (`err` None: there is none; `keep` False: replace it
    without keeping it), rebuild it, say so."""
    root = vault.state_dir / INDEX_DIR
    try:
        moved = SearchIndex.quarantine(root) if err is not None and keep else None
        indexer, result = rebuild(vault)
    except (OSError, VaultError, SearchIndexError) as failure:
        indexer, result = temporary(vault)
        reason = one_line(err) if err else f"no index at {root}"
        log.warning(
            "%s, and %s cannot be written (%s): searched a temporary index of %d memory "
            "files; make it writable to keep one",
            reason,
            vault.state_dir,
            getattr(failure, "strerror", None) or failure,
            len(result.updated),
        )
        return indexer
    indexer.recovered_from = moved
    if err is not None and moved is not None:
        log.warning(
            "%s: moved it aside to %s (`memstore gc` removes it) and rebuilt it from %d "
            "memory files",
            one_line(err),
            moved.relative_to(vault.root),
            len(result.updated),
        )
    elif err is not None:
        log.warning("%s: rebuilt it from %d memory files", one_line(err), len(result.updated))
    elif result.updated:
        log.warning(
            "no index in %s: built it from %d memory files",
            vault.state_dir,
            len(result.updated),
        )
    return indexer


def temporary(vault: Vault) -> tuple[Indexer, CatchUp]:
    """Build an index of the vault in a temporary folder (removed when it is closed)."""
    folder = Path(tempfile.mkdtemp(prefix="memstore-index-"))
    indexer = Indexer._open_at(vault, folder / INDEX_DIR)
    indexer._temporary = folder
    try:
        return indexer, indexer._catch_up(None)
    except SearchIndexError as err:
        indexer.close()
        raise VaultError(f"cannot build an index of {vault.root}: {err}") from err
