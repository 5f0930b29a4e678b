"""The tree merge sync makes: three commits' trees merged, moved memories followed.

Built in git's object store from GitRepo's trees and blobs, so the work follows what
changed: subtrees equal on two sides are taken whole. A memory moved to another folder on
one side and edited on the other meets itself in one file; one memory both sides added in
two folders of its workspace too (it is the same memory when its front matter says one id).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memstore.core.codec import parse_memory
from memstore.vault.git import GitRepo
from memstore.vault.git_objects import TREE_MODE, entry_id, text_paths

# Decides one file both sides changed: (path, base, ours, theirs) bytes → merged bytes, or
# None to delete it. A missing side is None.
Resolver = Callable[[str, bytes | None, bytes | None, bytes | None], bytes | None]


def merge_trees(
    git: GitRepo,
    base: str,
    ours: str,
    theirs: str,
    resolve: Resolver,
    *,
    dropped: frozenset[str] = frozenset(),
) -> str:
    """Merge the trees of three commits; `resolve` decides files both sides changed.

    Returns the merged tree's id. Subtrees equal on two sides are taken whole, so the
    work is proportional to what changed, not to the size of the vault. `dropped`
    paths are taken out of the base and ours first (purged from theirs' history).
    """

    def tree_of(commit: str) -> Any:
        if not commit:
            return None
        tree = git.tree(commit)
        if dropped and commit != theirs:
            tree = git.lookup(git.tree_without(tree, set(dropped)))
        return tree

    merge = _TreeMerge(git, resolve)
    trees = merge.follow_moves(tree_of(base), tree_of(ours), tree_of(theirs))
    return str(merge.merge_tree(*trees))


class _TreeMerge:
    """One merge of three trees: the repository and how files both sides changed resolve."""

    def __init__(self, git: GitRepo, resolve: Resolver) -> None:
        self.git = git
        self.resolve = resolve

    def follow_moves(self, base: Any, ours: Any, theirs: Any) -> tuple[Any, Any, Any]:
        """Carry each side's moves of a file (same name, another folder: a memory moved to
        another workspace) into the other side and the base, so an edit on one side and a
        move on the other meet in one file instead of leaving two with one id. One memory
        both sides added in different folders of its workspace (two layouts, or two months)
        meets the same way, at the first of its two paths."""
        if ours is None or theirs is None:
            return base, ours, theirs
        start = base if base is not None else self.git.empty_tree()
        mine, mine_added = self._moves(start, ours)
        yours, yours_added = self._moves(start, theirs)
        moved = {**yours, **mine}
        for old, new in yours.items():
            if old in mine and mine[old] != new:  # both moved it: one fixed choice
                keep, drop = sorted((mine[old], new))
                moved[old], moved[drop] = keep, keep
        moved.update(self._added_twice(mine_added, yours_added, ours, theirs))
        # Follow a move only where nothing else stands at its destination: otherwise plain
        # delete-vs-change keeps the other side's edit at the old path.
        moved = {
            old: new
            for old, new in moved.items()
            if entry_id(start, new) is None
            and not any(
                entry_id(t, old) is not None and entry_id(t, new) is not None
                for t in (ours, theirs)
            )
        }
        if not moved:
            return base, ours, theirs
        return (
            self._apply_moves(base, moved) if base is not None else None,
            self._apply_moves(ours, moved),
            self._apply_moves(theirs, moved),
        )

    def _moves(self, base: Any, side: Any) -> tuple[dict[str, str], dict[str, list[str]]]:
        """Return a side's moves (old path → new) and what it added, by file name."""
        added, gone, _ = self.git.tree_changes(base, side)
        by_name: dict[str, list[str]] = {}
        for path in added:
            by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        moves = {
            old: by_name[name][0]
            for old in gone
            if len(by_name.get(name := old.rsplit("/", 1)[-1], [])) == 1
        }
        taken = set(moves.values())
        unmatched = [old for old in gone if old not in moves]
        moves.update(self._renamed(base, side, unmatched, [p for p in added if p not in taken]))
        return moves, by_name

    def _renamed(self, base: Any, side: Any, gone: list[str], added: list[str]) -> dict[str, str]:
        """Return a side's moves that renamed the file too (`git mv a-k3xq.md ops/a.md`): a
        memory file gone and one added whose front matters name one id. Only the added files
        holding a gone file's id line are parsed: the work follows what moved."""
        ids = {old: self._memory_id(base, old) for old in gone if old.endswith(".md")}
        wanted = {f"\nid: {memory_id}".encode(): old for old, memory_id in ids.items() if memory_id}
        found: dict[str, list[str]] = {}
        for path in (p for p in added if p.endswith(".md")) if wanted else ():
            data = self._blob(side, path)
            for line, old in wanted.items():
                if line in data and self._memory_id(side, path) == ids[old]:
                    found.setdefault(old, []).append(path)
        return {old: paths[0] for old, paths in found.items() if len(paths) == 1}

    def _blob(self, tree: Any, path: str) -> bytes:
        oid = entry_id(tree, path)
        return bytes(self.git.lookup(oid).data) if oid is not None else b""

    def _memory_id(self, tree: Any, path: str) -> str:
        """The id a memory file's front matter names ('' for a file without one)."""
        text = self._blob(tree, path).decode("utf-8", "replace")
        memory = parse_memory(text, path=path)
        return memory.id if memory.has_front_matter and not memory.problem else ""

    def _added_twice(
        self, mine: dict[str, list[str]], yours: dict[str, list[str]], ours: Any, theirs: Any
    ) -> dict[str, str]:
        """One memory each side added under a different folder of one workspace: the later
        of its two paths → the first (the same on every machine, whichever side merges)."""
        moved = {}
        for name in mine.keys() & yours.keys():
            if len(mine[name]) != 1 or len(yours[name]) != 1:
                continue
            here, there = mine[name][0], yours[name][0]
            if here == there or here.split("/", 1)[0] != there.split("/", 1)[0]:
                continue
            if self._same_memory(here, ours[here].id, there, theirs[there].id):
                first, second = sorted((here, there))
                moved[second] = first
        return moved

    def _same_memory(self, here: str, one: Any, there: str, other: Any) -> bool:
        """Whether two blobs are memory files with one id in their front matter."""
        memories = [
            parse_memory(bytes(self.git.lookup(oid).data).decode("utf-8", "replace"), path=path)
            for path, oid in ((here, one), (there, other))
        ]
        return all(m.has_front_matter and not m.problem for m in memories) and (
            memories[0].id == memories[1].id
        )

    def _apply_moves(self, tree: Any, moved: dict[str, str]) -> Any:
        changes: dict[str, Any] = {}
        for old, new in moved.items():
            entry = entry_id(tree, old)
            if entry is None:
                continue
            changes[old] = None
            changes[new] = entry
        return self.git.edit_tree(tree, changes) if changes else tree

    def merge_tree(self, base: Any, ours: Any, theirs: Any, prefix: str = "") -> Any:
        """Return the id of the merged tree (`prefix`: the folder these trees are, with `/`)."""
        git = self.git
        ids = [t.id if t is not None else None for t in (base, ours, theirs)]
        # A side equal to the base changed nothing: take the other whole. Both sides changed
        # (even identically) means independent edits: descend, so counters add up.
        if ids[0] == ids[2]:
            return ids[1]
        if ids[0] == ids[1]:
            return ids[2]
        entries: dict[str, int] = {}
        for tree in (base, ours, theirs):
            for entry in tree or ():
                entries.setdefault(entry.name, entry.filemode)
        # Start from ours and change only what differs: an entry whose name is not UTF-8 can
        # be carried over but not inserted (pygit2 takes names as text)
        builder = git.tree_builder(ours)
        for name in sorted(entries):
            sides = [
                tree[name] if tree is not None and name in tree else None
                for tree in (base, ours, theirs)
            ]
            path = f"{prefix}{name}"
            if any(e is not None and e.type_str == "tree" for e in sides):
                subtrees = [e if e is not None and e.type_str == "tree" else None for e in sides]
                b, o, t = (git.lookup(e.id) if e is not None else None for e in subtrees)
                oid = self.merge_tree(b, o, t, f"{path}/")
                mode = TREE_MODE
            else:
                oid, mode = self._merge_blob(sides, path)
            if oid is not None and mode == TREE_MODE and len(git.lookup(oid)) == 0:
                oid = None
            mine = sides[1]
            if mine is None and oid is None:
                continue
            if mine is not None and oid is not None and (mine.id, mine.filemode) == (oid, mode):
                continue
            if not text_paths([path]):
                continue  # said in one line; this side's version stays
            if oid is None:
                builder.remove(name)
            else:
                builder.insert(name, oid, mode)
        return builder.write()

    def _merge_blob(self, sides: list[Any], path: str) -> tuple[Any, int]:
        base, ours, theirs = (e.id if e is not None else None for e in sides)
        mode = next(e.filemode for e in (sides[1], sides[2], sides[0]) if e is not None)
        if base is None and (ours is None or theirs is None):
            return ours or theirs, mode  # added on one side only
        if ours == base:
            return theirs, mode  # None: deleted on their side, untouched on ours
        if theirs == base or ours is None is theirs:
            return ours, mode
        # Both sides changed it, even if identically: identical independent changes of a
        # memory still count each side's increments.
        texts = [
            bytes(self.git.lookup(oid).data) if oid is not None else None
            for oid in (base, ours, theirs)
        ]
        merged = self.resolve(path, texts[0], texts[1], texts[2])
        if merged is None:
            return None, mode
        return self.git.write_blob(merged), mode
