"""A commit built beside the vault lock (GitRepo.build_on) holds the very tree a commit of
the same files makes; HEAD moves to it only from the HEAD it was built on (advance); a stop
asked for while it builds leaves HEAD and the files as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.core.errors import SecretError
from memstore.vault.git import GitRepo, Trailers
from memstore.vault.git_lean import objects
from tests.conftest import git

TRAILERS = Trailers("test", "s", "host")
FIRST = {
    "top.md": b"top\n",
    "ws/2026-11/a.md": b"a\n",
    "ws/2026-12/b.md": b"b\n",
    "ws/2026-12/01/c.md": b"c\n",
    "other/2026-12/e.md": b"e\n",
}
# files in a month folder beside its day folders, a new folder, a file at the top
CHANGED = {
    "top.md": b"top 2\n",
    "ws/2026-11/a.md": b"a 2\n",
    "ws/2026-12/b.md": b"b 2\n",
    "ws/2026-12/01/c.md": b"c 2\n",
    "ws/2026-12/02/d.md": b"d\n",
}


def write(root: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    root = tmp_path / "vault"
    root.mkdir()
    repo = GitRepo.init(root)
    write(root, FIRST)
    repo.commit("first", TRAILERS, add=tuple(FIRST))
    return repo


def plain(files: dict[str, bytes]) -> dict[str, tuple[bytes, int]]:
    return {path: (data, objects().GIT_FILEMODE_BLOB) for path, data in files.items()}


def test_the_tree_built_beside_the_lock_is_the_one_a_commit_makes(repo: GitRepo) -> None:
    head = repo.head()
    built = repo.build_on(head, plain(CHANGED), "built", TRAILERS).commit
    assert repo.head() == head  # nothing moved yet
    write(repo.root, CHANGED)
    made = repo.commit("made", TRAILERS, add=tuple(CHANGED))
    assert repo.tree_of(built) == repo.tree_of(made)
    assert repo.first_parent(built) == head


@pytest.mark.parametrize(
    "theirs",
    [
        "other/2026-12/e.md",  # a folder of nobody else's
        "ws/2026-12/f.md",  # a folder the flush writes in
        "ws/2026-12/01/g.md",  # a folder inside one it writes in
    ],
)
def test_a_commit_made_meanwhile_is_folded_in_and_kept(repo: GitRepo, theirs: str) -> None:
    head = repo.head()
    built = repo.build_on(head, plain(CHANGED), "built", TRAILERS)
    write(repo.root, {theirs: b"theirs\n"})
    other = repo.commit("another writer", TRAILERS, add=(theirs,))
    assert not repo.advance(head, built.commit, tuple(CHANGED))  # HEAD moved: nothing done
    assert repo.head() == other
    folded = repo.fold_onto(built, other)
    assert folded is not None
    write(repo.root, CHANGED)
    assert repo.advance(other, folded.commit, tuple(CHANGED))
    assert git(repo.root, "status", "--porcelain") == ""  # the tree is exactly the files
    assert git(repo.root, "show", f"HEAD:{theirs}").strip() == "theirs"
    assert git(repo.root, "log", "--format=%s", "-2").split() == ["built", "another", "writer"]


def test_a_file_committed_meanwhile_is_not_folded(repo: GitRepo) -> None:
    head = repo.head()
    built = repo.build_on(head, plain(CHANGED), "built", TRAILERS)
    write(repo.root, {"ws/2026-12/b.md": b"a person's\n"})
    other = repo.commit("a person", TRAILERS, add=("ws/2026-12/b.md",))
    assert repo.fold_onto(built, other) is None


def test_a_stop_while_building_writes_no_commit(repo: GitRepo) -> None:
    head = repo.head()
    asked = iter([False, True])
    built = repo.build_on(head, plain(CHANGED), "built", TRAILERS, lambda: next(asked))
    assert built.commit == ""
    assert repo.head() == head


def test_a_credential_is_refused_before_any_commit(repo: GitRepo) -> None:
    head = repo.head()
    secret = {"ws/2026-11/a.md": b"a\naws_secret_access_key = AKIAIOSFODNN7EXAMPLEKEY12\n"}
    with pytest.raises(SecretError):
        repo.build_on(head, plain(secret), "built", TRAILERS)
    assert repo.head() == head


def test_a_persons_commit_landing_as_head_moves_is_never_pushed_off(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's `git commit` between advance's look at the branch and its move (made
    here inside the one call advance makes in between) keeps its place: advance says
    HEAD moved and the caller builds again (review12: the branch was set regardless)."""
    head = repo.head()
    built = repo.build_on(head, plain({"top.md": b"top 2\n"}), "flush", TRAILERS).commit
    looked = GitRepo._index_is_large

    def person_commits(self: GitRepo) -> bool:
        (repo.root / "other/2026-12/e.md").write_bytes(b"the person's\n")
        git(repo.root, "commit", "-qam", "the person's commit")
        return looked(self)

    monkeypatch.setattr(GitRepo, "_index_is_large", person_commits)
    write(repo.root, {"top.md": b"top 2\n"})
    assert repo.advance(head, built, ("top.md",)) is False
    log = git(repo.root, "log", "--format=%s").split("\n")
    assert log[:2] == ["the person's commit", "first"], log


def test_a_head_a_purge_removed_is_built_again_not_an_error(repo: GitRepo) -> None:
    """History rewritten and pruned while the flush built (a purge): folding onto the new
    HEAD answers None, so the flush reads and builds again (it raised KeyError)."""
    head = repo.head()
    built = GitRepo.open(repo.root).build_on(head, plain({"top.md": b"top 2\n"}), "flush", TRAILERS)
    git(repo.root, "rm", "-q", "other/2026-12/e.md")
    git(repo.root, "commit", "-q", "--amend", "-m", "first (purged)")
    git(repo.root, "reflog", "expire", "--expire=now", "--all")
    git(repo.root, "gc", "--quiet", "--prune=now")
    fresh = GitRepo.open(repo.root)
    assert fresh.fold_onto(built, fresh.head()) is None
