"""Memory files whose names hold a credential (named before the slug left it out): found, renamed.

A memory stored with `add --allow-secret` before the slug took only plain words kept the
credential, lowercased, in its file name, which reaches commit subjects, shares and
listings. `memstore doctor` lists them by id (never by name: the name is what leaks) and
`doctor --fix` renames each to the name an add gives it today, in one commit whose
message names no file. The old name stays in git history (and on any remote it reached):
only `memstore forget ID --purge` and a rotated credential undo that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from memstore.core.secrets import find_secrets
from memstore.service.checks import SAFE_WORD_CHARS, SLUG_SCAN_CHARS, memory_path

if TYPE_CHECKING:
    from memstore.service.store import Store

_PLAIN = re.compile(rf"[a-z]{{1,{SAFE_WORD_CHARS}}}")


@dataclass(frozen=True)
class NamedSecret:
    """A memory whose file name holds what looks like a credential."""

    id: str
    path: str
    kind: str
    new_path: str  # the name an add gives the memory today


def find_named_secrets(store: Store) -> list[NamedSecret]:
    """Return the memories whose file names hold a credential (a name of plain short words
    only is not read: the text's scan is asked only for names with other words)."""
    from memstore.vault.edits import secret_only_on_disk

    found = []
    for entry in store.indexer.entries():
        stem = PurePosixPath(entry.path).stem
        if not stem.endswith(f"-{entry.id}"):
            continue  # named by a person (`aws-creds2.md`), not by an add from its text
        stem = stem.removesuffix(f"-{entry.id}")
        if all(_PLAIN.fullmatch(word) for word in stem.split("-") if word):
            continue
        memory = store.vault.read(entry.path)
        kinds = find_secrets(memory.body[:SLUG_SCAN_CHARS])
        if kinds and secret_only_on_disk(store.git, entry.path):
            continue  # pasted since and held back by sync: the name came from a clean text
        new_path = memory_path(memory)
        if kinds and new_path != entry.path:
            found.append(NamedSecret(entry.id, entry.path, kinds[0], new_path))
    return found


def rename_named_secrets(store: Store, found: list[NamedSecret]) -> str:
    """Rename each file to its new name in one commit; return the commit ('' none)."""
    if not found:
        return ""
    with store.transaction(catch_up=False) as tx:
        tx.commit_edits([f.path for f in found])
        data = {f.new_path: tx.vault.path(f.path).read_bytes() for f in found}
        files: dict[str, bytes | None] = {**data, **{f.path: None for f in found}}
        with tx.writing(files):
            for f in found:
                tx.vault.write_bytes_atomic(f.new_path, data[f.new_path])
                tx.vault.path(f.path).unlink()
            noun = "memory" if len(found) == 1 else "memories"
            commit = tx.commit(
                f"rename: {len(found)} {noun} whose file names held a credential",
                add=tuple(data),
                remove=tuple(f.path for f in found),
                allow_secret=True,  # the texts were stored with --allow-secret; only names move
            )
        tx.indexer.remove([f.path for f in found])
        tx.indexer.record_all({path: tx.vault.read(path) for path in data})
    return commit
