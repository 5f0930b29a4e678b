"""Citations checked at recall: which hits cite code that changed, marked and ranked below fresh ones.

A memory's citations (`cites:` in its front matter, core/citations.py) travel in the index's
manifest as one JSON column (`cites_column`), so a recall reads them with the rows it reads
anyway, never the files. Only citations of the repository the caller works in are checked,
each by the one `CiteChecker` (catalog/citing.py) kept per repository root, which compares
the cited file or symbol with the working tree (cached by each file's mtime and size; no git
process). A changed or gone citation marks its hit `stale`; a stale hit ranks below the fresh
hits of its tier (confident fresh, confident stale, weak fresh, weak stale: docs/citations.md).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.core.citations import Cite
from memstore.core.model import Hit, StaleCite
from memstore.core.repo_name import find_enclosing_repository, workspace_at

if TYPE_CHECKING:  # the checker (and the chunker it reads code with) only when one checks
    from memstore.catalog.citing import CiteChecker

__all__ = [
    "Repositories",
    "Repository",
    "cites_column",
    "confident_fresh_first",
    "mark_stale",
    "parse_cites_column",
    "repository_at",
    "stale_cites",
]


@dataclass(frozen=True)
class Repository:
    """A git repository on this machine: the name citations use for it, and its work tree."""

    name: str  # what `workspace_at` derives from it: a citation's `repo`
    root: Path


def repository_at(vault: Path, cwd: Path) -> Repository | None:
    """Return the repository work in `cwd` happens in (None outside one, or in the vault)."""
    root = find_enclosing_repository(cwd.resolve())
    name = workspace_at(vault, cwd) if root is not None else None
    return None if root is None or name is None else Repository(name, root)


class Repositories:
    """The repositories recall was asked from, by working folder: finding one reads its
    .git/config (~0.4 ms), so it is found again only when its .git entry changed (a
    rewritten config renames a file in .git: the folder's mtime moves)."""

    def __init__(self) -> None:
        self._known: dict[Path, tuple[int, Repository]] = {}

    def at(self, vault: Path, cwd: Path) -> Repository | None:
        """Return the repository work in `cwd` happens in (repository_at), cached."""
        known = self._known.get(cwd)
        if known is not None and known[0] == _git_stamp(known[1].root):
            return known[1]
        found = repository_at(vault, cwd)
        if found is not None:  # not a miss: `git init` may make one at any time
            self._known[cwd] = (_git_stamp(found.root), found)
        return found


def _git_stamp(root: Path) -> int:
    try:
        return os.stat(root / ".git").st_mtime_ns
    except OSError:
        return -1


def cites_column(cites: Iterable[Cite]) -> str:
    """Return citations as the manifest stores them ("" for none): compact JSON."""
    rows = [
        [c.repo, c.path, c.symbol, list(c.lines) if c.lines else None, c.blob, c.digest, c.at]
        for c in cites
    ]
    return json.dumps(rows, separators=(",", ":"), ensure_ascii=False) if rows else ""


@functools.lru_cache(maxsize=4096)
def parse_cites_column(text: str) -> tuple[Cite, ...]:
    """Return the citations `cites_column` stored (none for "" or a column it did not write)."""
    if not text:
        return ()
    try:
        rows = json.loads(text)
        return tuple(
            Cite(repo, path, symbol, (lines[0], lines[1]) if lines else None, blob, digest, at)
            for repo, path, symbol, lines, blob, digest, at in rows
        )
    except (ValueError, TypeError, IndexError):
        return ()  # a cache another version wrote: nothing to check rather than a crash


def stale_cites(cites: Sequence[Cite], repo: str, checker: CiteChecker) -> tuple[StaleCite, ...]:
    """Return the citations of `repo` among `cites` whose code changed or went away (others
    are not checked), each with its reason; the commit that changed it ("changed in
    3f2a1c9, 2 days ago") is asked of git only for these."""
    found = []
    for cite in cites:
        if cite.repo != repo:
            continue
        try:
            state = checker.check(cite)
        except OSError:  # a file that cannot be read now: no verdict, no mark
            continue
        if state.state == "fresh":
            continue
        reason = checker.explain(cite) or state.reason or f"{cite.label} {state.state}"
        found.append(StaleCite(cite.label, "gone" if state.state == "gone" else "changed", reason))
    return tuple(found)


def mark_stale(
    hits: Sequence[Hit],
    cites_of: Mapping[str, str],
    repository: Repository,
    checker: CiteChecker,
) -> list[Hit]:
    """Return `hits` with each whose citations of `repository` changed marked stale
    (`cites_of`: a hit's path → its manifest `cites` column), stale hits below the fresh
    ones of their tier."""
    marked = []
    for hit in hits:
        cites = parse_cites_column(cites_of.get(hit.path, "")) if hit.kind != "code" else ()
        stale = stale_cites(cites, repository.name, checker) if cites else ()
        marked.append(replace(hit, stale=stale) if stale else hit)
    return confident_fresh_first(marked)


def confident_fresh_first(hits: Sequence[Hit]) -> list[Hit]:
    """Return `hits` as confident fresh, confident stale, weak fresh, weak stale, each group
    in the order given (stable). What a stale correction supersedes stays just below it."""
    if not any(hit.stale for hit in hits):
        return list(hits)
    tiers = {hit.id: (hit.weak, bool(hit.stale)) for hit in hits}

    def tier(hit: Hit) -> tuple[bool, bool]:
        # a superseded memory goes with its correction (it was ranked just below it)
        correction = next((c for c in hit.superseded_by if c in tiers), None)
        return tiers[correction] if correction else tiers[hit.id]

    return sorted(hits, key=tier)
