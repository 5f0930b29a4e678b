"""`GitRepo.tree_changes` (the sync's diffs of two commits, read only where folders differ)
names exactly what libgit2's tree diff and `git diff` name: additions, deletions and edits,
a file that became a folder and back, a mode change, names git sorts oddly, and random
changes to random trees."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memstore.vault.git import GitRepo
from tests.conftest import git


def libgit2_changes(repo: GitRepo, old: str, new: str) -> tuple[list[str], list[str], list[str]]:
    """The old way: libgit2's diff of the two trees, split by its status letter."""
    diff = repo.tree(old).diff_to_tree(repo.tree(new))
    by: dict[str, list[str]] = {"A": [], "D": [], "M": []}
    for delta in diff.deltas:
        letter = delta.status_char()
        by["M" if letter == "T" else letter].append(delta.new_file.path or delta.old_file.path)
    return by["A"], by["D"], by["M"]


def git_name_status(root: Path, old: str, new: str) -> tuple[list[str], list[str], list[str]]:
    out = git(
        root, "-c", "core.quotePath=false", "diff", "--name-status", "--no-renames", "-z", old, new
    )
    parts = out.split("\0")
    by: dict[str, list[str]] = {"A": [], "D": [], "M": []}
    for letter, path in zip(parts[0::2], parts[1::2], strict=False):
        if letter:
            by["M" if letter == "T" else letter].append(path)
    return sorted(by["A"]), sorted(by["D"]), sorted(by["M"])


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.invalid")
    return root


def write(root: Path, path: str, text: str) -> None:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")


def test_named_cases_match_libgit2_and_git(repo: Path) -> None:
    for i in range(300):  # a big folder both commits hold, one file of it edited
        write(repo, f"infra/2026-01/note-{i:03d}.md", f"note {i}\n")
    for path in ("a.md", "a/x.md", "a-b/y.md", "ws/keep.md", "ws/gone.md", "turn/file.md"):
        write(repo, path, f"{path}\n")
    write(repo, "flip", "a file that becomes a folder\n")
    write(repo, "café/ünïcode name.md", "non-ascii\n")
    write(repo, "run.sh", "echo hi\n")
    old = commit_all(repo, "old")
    write(repo, "infra/2026-01/note-007.md", "note 7, edited\n")
    (repo / "ws/gone.md").unlink()
    write(repo, "ws/2026-02/new.md", "new\n")
    (repo / "flip").unlink()
    write(repo, "flip/inside.md", "now a folder\n")
    (repo / "turn/file.md").unlink()
    (repo / "turn").rmdir()
    write(repo, "turn", "a folder that became a file\n")
    write(repo, "a.md", "a, edited\n")
    write(repo, "café/ünïcode name.md", "non-ascii, edited\n")
    (repo / "run.sh").chmod(0o755)
    new = commit_all(repo, "new")

    vault = GitRepo.open(repo)
    mine = vault.tree_changes(vault.tree(old), vault.tree(new))
    assert mine == tuple(sorted(x) for x in libgit2_changes(vault, old, new))
    assert mine == git_name_status(repo, old, new)
    assert mine[0] == ["flip/inside.md", "turn", "ws/2026-02/new.md"]
    assert mine[1] == ["flip", "turn/file.md", "ws/gone.md"]
    assert mine[2] == ["a.md", "café/ünïcode name.md", "infra/2026-01/note-007.md", "run.sh"]
    back = vault.tree_changes(vault.tree(new), vault.tree(old))
    assert back == (mine[1], mine[0], mine[2])
    assert vault.tree_changes(vault.tree(old), vault.tree(old)) == ([], [], [])
    assert vault.paths_between(old, new) == sorted({*mine[0], *mine[1], *mine[2]})


@pytest.mark.parametrize("seed", range(6))
def test_random_changes_match_libgit2(repo: Path, seed: int) -> None:
    rng = random.Random(seed)
    folders = ["", "w1/", "w1/2026-01/", "w1/2026-02/", "w2/", "w2/2026-01/deep/", "x-y/"]
    files: dict[str, str] = {}
    for i in range(rng.randint(20, 120)):
        path = f"{rng.choice(folders)}f{i % 37}{rng.choice(['.md', '', '.txt', '-a.md'])}"
        if any(p.startswith(f"{path}/") for p in files) or any(
            path.startswith(f"{p}/") for p in files
        ):
            continue  # a name both a file and a folder
        files[path] = f"{i}\n"
    for path, text in files.items():
        write(repo, path, text)
    commits = [commit_all(repo, "c0")]
    for round_ in range(3):
        for path in list(files):
            roll = rng.random()
            if roll < 0.15:
                (repo / path).unlink()
                del files[path]
            elif roll < 0.3:
                files[path] = f"edited {round_}\n"
                write(repo, path, files[path])
        for i in range(rng.randint(0, 15)):
            path = f"{rng.choice(folders)}n{round_}-{i}.md"
            if not any(p.startswith(f"{path}/") or path.startswith(f"{p}/") for p in files):
                files[path] = "new\n"
                write(repo, path, "new\n")
        commits.append(commit_all(repo, f"c{round_ + 1}"))
    vault = GitRepo.open(repo)
    for old in commits:
        for new in commits:
            mine = vault.tree_changes(vault.tree(old), vault.tree(new))
            assert mine == tuple(sorted(x) for x in libgit2_changes(vault, old, new)), (old, new)
            assert vault.paths_between(old, new) == sorted({p for part in mine for p in part})


def test_an_empty_side_is_every_file(repo: Path) -> None:
    write(repo, "w/2026-01/a.md", "a\n")
    write(repo, "b.md", "b\n")
    first = commit_all(repo, "first")
    vault = GitRepo.open(repo)
    empty = vault.empty_tree()
    assert vault.tree_changes(empty, vault.tree(first)) == (["b.md", "w/2026-01/a.md"], [], [])
    assert vault.tree_changes(vault.tree(first), empty) == ([], ["b.md", "w/2026-01/a.md"], [])
