"""Rewriting the vault's history without some paths (`forget --purge`), and replaying commits."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from memstore.vault.git_objects import GitObjects, _pygit2, entry_id, flatten


@dataclass
class Rewrite:
    """What a history rewrite (GitRepo.rewrite_without) did."""

    changed: int = 0
    roots: list[str] = field(default_factory=list)  # first old commits rewritten
    mapping: dict[str, str] = field(default_factory=dict)  # old commit → new


class GitRewrites(GitObjects):
    """Commits rewritten and replayed, and the refs moved to them (part of GitRepo)."""

    sync_index: Callable[[], list[str]]  # GitRepo's: git's index up to HEAD before a checkout

    def paths_ever(self, suffix: str) -> set[str]:
        """Return every path ending in `suffix` that any commit of any ref ever held."""
        found: set[str] = set()
        for commit in self._all_commits():
            found.update(p for p in flatten(commit.tree) if p.endswith(suffix))
        return found

    def rewrite_without(
        self,
        paths: set[str],
        scrub: str = "",
        replacement: str = "[purged]",
        *,
        checkout: bool = True,
        known: Mapping[str, str] | None = None,
        move: bool = True,
        refs: Collection[str] | None = None,
    ) -> Rewrite:
        """Rewrite every commit of every ref (of `refs` only, when given) without `paths`.

        `scrub`, when given, is replaced by `replacement` in every commit message (commit
        summaries quote the memory's text). With `known` (old → new: what a purge rewrote,
        when history fetched again after it is rewritten), those commits map to the ones
        the purge made, and a commit made since that changed one of `paths` gets
        `replacement` for its subject (its own may quote the memory's text).

        Messages, authors and times are kept; refs move to the rewritten commits (with
        `move` False they do not: the caller records the mapping first, then moves them with
        move_rewritten). The old objects stay until the caller expires the reflog and prunes
        (remote.prune_unreachable).
        """
        repo = self._repo
        known = known or {}
        rewritten: dict[str, str] = {}
        done = Rewrite()
        for commit in self._all_commits(refs):  # parents before children
            old = str(commit.id)
            if old in known and repo.get(known[old]) is not None:
                rewritten[old] = known[old]
                done.changed += 1
                continue
            tree = self.tree_without(commit.tree, paths, "")
            parents = [rewritten.get(str(p), str(p)) for p in commit.parent_ids]
            message = commit.message.replace(scrub, replacement) if scrub else commit.message
            if known and self._touches(commit, paths):
                subject, _, rest = commit.message.partition("\n")
                verb = subject.split(":", 1)[0] if ":" in subject else "edit"
                message = f"{verb}: {replacement}\n{rest}"
            unchanged = message == commit.message and parents == [str(p) for p in commit.parent_ids]
            if tree == commit.tree.id and unchanged:
                continue
            new = repo.create_commit(None, commit.author, commit.committer, message, tree, parents)
            if not any(str(p) in rewritten for p in commit.parent_ids):
                done.roots.append(old)
            rewritten[old] = str(new)
            done.changed += 1
        done.mapping = rewritten
        if move:
            self.move_rewritten(rewritten, checkout=checkout, refs=refs)
        return done

    def first_parent_line(self, old: str, new: str) -> list[str]:
        """Return the commits on `new`'s first-parent line back to (not including) `old`,
        oldest first."""
        pygit2 = _pygit2()
        walker = self._repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL)
        walker.simplify_first_parent()
        walker.hide(old)
        return [str(commit.id) for commit in walker][::-1]

    def touches(self, commit: str, paths: set[str]) -> bool:
        """Return whether `commit` changed one of `paths` from its first parent."""
        return self._touches(self._repo[commit], paths)

    def replay(self, commit: str, tree: str, parent: str, message: str) -> str:
        """Create a copy of `commit` (its author and committer) with `tree` and `message`,
        on `parent` alone (HEAD is not moved)."""
        old = self._repo[commit]
        made = self._repo.create_commit(None, old.author, old.committer, message, tree, [parent])
        return str(made)

    def _touches(self, commit: Any, paths: set[str]) -> bool:
        """Return whether `commit` changed one of `paths` from its first parent."""
        parent = commit.parents[0].tree if commit.parents else None
        return any(
            entry_id(commit.tree, path) != (entry_id(parent, path) if parent else None)
            for path in paths
        )

    def _all_commits(self, refs: Collection[str] | None = None) -> list[Any]:
        """Every commit reachable from any ref (of `refs`, when given), parents first."""
        pygit2 = _pygit2()
        repo = self._repo
        seen: dict[str, Any] = {}
        for ref in repo.references if refs is None else refs:
            if repo.references.get(ref) is None:
                continue
            target = repo.references[ref].resolve().target
            obj = repo.get(target)
            if obj is None or obj.type != pygit2.enums.ObjectType.COMMIT:
                continue
            for commit in repo.walk(target, pygit2.enums.SortMode.TOPOLOGICAL):
                if str(commit.id) in seen:
                    continue
                seen[str(commit.id)] = commit
        ordered = sorted(seen.values(), key=lambda c: (c.commit_time, str(c.id)))
        return _topological(ordered)

    def move_rewritten(
        self,
        mapping: Mapping[str, str],
        *,
        checkout: bool = True,
        refs: Collection[str] | None = None,
    ) -> None:
        """Move every ref (of `refs`, when given) that points at an old commit of `mapping`
        to its rewritten commit; with `checkout`, the work tree follows HEAD."""
        pygit2 = _pygit2()
        repo = self._repo
        for ref in list(repo.references if refs is None else refs):
            reference = repo.references.get(ref)
            if (
                reference is not None
                and reference.type == pygit2.enums.ReferenceType.DIRECT
                and str(reference.target) in mapping
            ):
                reference.set_target(mapping[str(reference.target)])
        if mapping and checkout:
            self.sync_index()
            repo.checkout_head(strategy=pygit2.enums.CheckoutStrategy.FORCE)


def _topological(commits: list[Any]) -> list[Any]:
    """Order commits so every parent comes before its children."""
    by_id = {str(c.id): c for c in commits}
    done: set[str] = set()
    ordered: list[Any] = []

    def visit(commit: Any) -> None:
        stack = [(commit, False)]
        while stack:
            current, expanded = stack.pop()
            key = str(current.id)
            if key in done:
                continue
            if expanded:
                done.add(key)
                ordered.append(current)
                continue
            stack.append((current, True))
            stack.extend(
                (by_id[str(p)], False)
                for p in current.parent_ids
                if str(p) in by_id and str(p) not in done
            )

    for commit in commits:
        visit(commit)
    return ordered
