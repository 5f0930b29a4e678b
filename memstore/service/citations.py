"""Upkeep of memories that cite code: which are stale, each checked where its repository lives.

A vault does not know where a repository is checked out: a path means nothing on another
machine. A citation is checked against a repository this machine knows, by name (the name
its workspace uses, core/repo_name.py): the repository the command runs in, and the source
trees registered for the code index (`.memstore/code-roots.json`, `memstore ingest`).
The citations of any other repository are not checked, and the report names it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from memstore.catalog.code_roots import registered_roots
from memstore.catalog.staleness import Repository, parse_cites_column, repository_at, stale_cites
from memstore.core.errors import VaultError
from memstore.core.model import StaleCite
from memstore.service.store import Store


@dataclass(frozen=True)
class StaleMemory:
    """A memory whose cited code changed or went away, and what changed."""

    id: str
    workspace: str
    path: str
    stale: tuple[StaleCite, ...]


@dataclass(frozen=True)
class CitationCheck:
    """What a check of every citing memory found."""

    stale: tuple[StaleMemory, ...]
    citing: int  # memories that cite code
    checked: int  # citations checked (of a repository found here)
    repositories: dict[str, str]  # repository name → the work tree it was checked in
    not_found: dict[str, int]  # repository name → its citations left unchecked


def known_repositories(store: Store, cwd: Path | None) -> dict[str, Repository]:
    """Return the repositories this machine knows by name: the one `cwd` is in first, then
    those holding the code index's registered source trees."""
    found: dict[str, Repository] = {}
    here = repository_at(store.vault.root, cwd) if cwd is not None else None
    if here is not None:
        found[here.name] = here
    try:
        roots = registered_roots(store.vault.state_dir)
    except VaultError:
        roots = []  # an unreadable registration: only the cwd's repository is known
    for root in roots:
        repository = repository_at(store.vault.root, Path(root.path))
        if repository is not None and repository.name not in found:
            found[repository.name] = repository
    return found


def check_citations(
    store: Store,
    cwd: Path | None,
    workspace: str | None = None,
    *,
    archived: bool = False,
    catch_up: bool = True,
) -> CitationCheck:
    """Check every citation of the vault's memories (of `workspace` only, when given)
    against the repositories this machine knows (known_repositories).

    Reads the manifest's rows of the memories that cite code, never their files;
    `catch_up=False` for a caller that has just caught the index up (the view).
    """
    if catch_up:
        store.catch_up()
    entries = [
        e
        for e in store.indexer.manifest.citing()
        if (workspace is None or e.workspace == workspace) and (archived or not e.archived)
    ]
    repositories = known_repositories(store, cwd) if entries else {}
    unchecked: Counter[str] = Counter()
    stale, checked = [], 0
    for entry in entries:
        cites = parse_cites_column(entry.cites)
        found: list[StaleCite] = []
        for name in dict.fromkeys(c.repo for c in cites):
            ours = [c for c in cites if c.repo == name]
            repository = repositories.get(name)
            if repository is None:
                unchecked[name] += len(ours)
                continue
            checked += len(ours)
            found += stale_cites(ours, name, store.shared.cite_checker(repository.root))
        if found:
            stale.append(StaleMemory(entry.id, entry.workspace, entry.path, tuple(found)))
    return CitationCheck(
        stale=tuple(stale),
        citing=len(entries),
        checked=checked,
        repositories={name: str(r.root) for name, r in sorted(repositories.items())},
        not_found=dict(sorted(unchecked.items())),
    )
