"""A month folder's tree is parsed once per version, not at every look-up of a path in it:
libgit2's object cache keeps trees larger than its 4 KB default, within a bound, and a look-up
after a commit still sees that commit's tree."""

from __future__ import annotations

from pathlib import Path

from memstore.vault import git_objects
from memstore.vault.git import GitRepo, Trailers

TRAILERS = Trailers("test", "", "host")


def _month(root: Path, files: int) -> list[str]:
    folder = root / "webshop" / "2026-12"
    folder.mkdir(parents=True)
    paths = []
    for n in range(files):
        name = f"a-memory-with-a-name-as-long-as-the-slugs-make-them-{n:05d}.md"
        (folder / name).write_text(f"memory {n}\n")
        paths.append(f"webshop/2026-12/{name}")
    return paths


def test_a_large_trees_lookups_are_served_from_libgit2s_cache(tmp_path: Path) -> None:
    git = GitRepo.init(tmp_path)
    pygit2 = git_objects._pygit2()
    paths = _month(tmp_path, 400)  # a tree of ~30 KB: above libgit2's own 4 KB limit
    git.commit("add(webshop): many", TRAILERS, add=tuple(paths))
    git = GitRepo.open(tmp_path)  # a repository's own cache: nothing parsed yet
    held, limit = pygit2.settings.cached_memory
    assert limit == git_objects.CACHE_BYTES
    missing = "webshop/2026-12/not-there.md"
    assert missing not in git.changed_paths([missing])
    after_first, _ = pygit2.settings.cached_memory
    month = git._repo[git._head_tree()["webshop/2026-12"].id]
    assert len(month.read_raw()) > 4096 * 4
    assert after_first >= held + len(month.read_raw())  # the parsed month tree is kept
    for _ in range(20):
        git.changed_paths([missing, paths[7]])
    assert pygit2.settings.cached_memory[0] <= after_first + 4096  # not parsed again


def test_a_lookup_after_a_commit_sees_the_new_tree(tmp_path: Path) -> None:
    git = GitRepo.init(tmp_path)
    paths = _month(tmp_path, 300)
    git.commit("add(webshop): many", TRAILERS, add=tuple(paths))
    assert git.changed_paths(paths[:3]) == []
    new = "webshop/2026-12/a-new-one.md"
    (tmp_path / new).write_text("new\n")
    (tmp_path / paths[0]).write_text("changed\n")
    assert git.changed_paths([new, paths[0], paths[1]]) == [new, paths[0]]
    git.commit("add(webshop): new", TRAILERS, add=(new, paths[0]))
    assert git.changed_paths([new, paths[0], paths[1]]) == []
    (tmp_path / new).unlink()
    assert git.changed_paths([new]) == [new]
