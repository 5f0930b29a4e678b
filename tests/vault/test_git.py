"""Workspace detection from the current repository, and commits that respect other writers."""

from __future__ import annotations

import configparser
import shutil
from pathlib import Path
from typing import Any

import pytest

from memstore.core import repo_name
from memstore.core.errors import InvalidInputError, VaultError
from memstore.core.model import to_workspace_name
from memstore.core.repo_name import detect_workspace
from memstore.ops.lean import add_workspace
from memstore.vault.git import GitRepo, Trailers
from tests.conftest import git, wait_until


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git@github.com:acme/webshop.git", "webshop"),
        ("https://gitlab.example.com/group/sub/Data-Pipeline.git", "Data-Pipeline"),
        ("ssh://git@host:2222/acme/infra/", "infra"),
        ("/srv/git/mobile-app", "mobile-app"),
    ],
)
def test_workspace_comes_from_the_remote_repository_name(
    tmp_path: Path, url: str, expected: str
) -> None:
    repo = tmp_path / "checkout"
    (repo / "src" / "deep").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", url)
    assert detect_workspace(repo / "src" / "deep") == expected


def test_workspace_falls_back_to_the_folder_then_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "My Project"
    repo.mkdir()
    git(repo, "init", "-q")
    assert detect_workspace(repo) == "My Project"
    assert to_workspace_name("My Project") == "my-project"
    assert detect_workspace(tmp_path) is None


def test_worktree_uses_the_main_repository_remote(tmp_path: Path) -> None:
    repo = tmp_path / "main"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", "git@example.com:acme/shop.git")
    git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    assert detect_workspace(tmp_path / "wt") == "shop"


def test_a_repository_s_config_is_read_once_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon or MCP server asks for the workspace on every add and search; it reads
    .git/config again only when the file changed (git rewrites it by rename)."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", "git@example.com:acme/shop.git")
    reads: list[object] = []
    real_read = configparser.ConfigParser.read

    def counted(self: configparser.ConfigParser, *args: Any, **kwargs: Any) -> Any:
        reads.append(args[0])
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(configparser.ConfigParser, "read", counted)
    assert [detect_workspace(repo) for _ in range(3)] == ["shop"] * 3
    assert len(reads) == 1
    git(repo, "remote", "set-url", "origin", "git@example.com:acme/webshop.git")
    assert detect_workspace(repo) == "webshop"  # a changed file is read again
    assert len(reads) == 2


def test_an_add_s_workspace_walks_up_from_its_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The add's refusal of another vault's folder and its workspace share one walk up."""
    vault = tmp_path / "memstore"
    vault.mkdir()
    repo = tmp_path / "shop"
    (repo / "src" / "deep").mkdir(parents=True)
    git(repo, "init", "-q")
    walks: list[Path] = []
    real_walk = repo_name.find_enclosing_repository

    def counted(path: Path) -> Path | None:
        walks.append(path)
        return real_walk(path)

    monkeypatch.setattr(repo_name, "find_enclosing_repository", counted)
    assert add_workspace(vault, repo / "src" / "deep", None) == "shop"
    assert len(walks) == 1
    (repo / ".gitattributes").write_text("*.md merge=memstore\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=f"this folder is in the vault {repo}, "):
        add_workspace(vault, repo / "src", None)
    assert add_workspace(vault, vault, None) == "global"  # inside the vault in use


def test_workspace_names_are_made_valid() -> None:
    assert to_workspace_name("Data_Pipeline.v2") == "data_pipeline.v2"
    assert to_workspace_name("ALL") == "global"
    assert to_workspace_name("...") == "global"
    # were some-20thing and n-code (issue 36)
    assert to_workspace_name("Some%20Thing") == "some-thing"
    assert to_workspace_name("Ünïcode") == "unicode"
    assert to_workspace_name("..%2F..%2Fetc") == "etc"
    assert to_workspace_name("%2e%2e") == "global"


def test_a_commit_by_another_process_is_not_dropped(vault: Path) -> None:
    repo = GitRepo.open(vault)
    trailers = Trailers("test", "s", "h")
    (vault / "global").mkdir()
    (vault / "global" / "a.md").write_text("a\n", encoding="utf-8")
    repo.commit("one", trailers, add=("global/a.md",))
    (vault / "global" / "b.md").write_text("b\n", encoding="utf-8")
    git(vault, "add", "global/b.md")
    git(vault, "commit", "-qm", "by the git CLI")
    (vault / "global" / "c.md").write_text("c\n", encoding="utf-8")
    repo.commit("three", trailers, add=("global/c.md",))
    assert git(vault, "ls-files").split() == [
        ".gitattributes",
        ".gitignore",
        "global/a.md",
        "global/b.md",
        "global/c.md",
    ]
    assert git(vault, "status", "--porcelain") == ""


def test_a_repository_removed_under_an_open_one_is_a_vault_error(vault: Path) -> None:
    repo = GitRepo.open(vault)
    shutil.rmtree(vault)
    with pytest.raises(VaultError, match="cannot read HEAD"):
        repo.changed_paths(["global/a.md"])


def test_a_commit_waits_out_a_git_status_holding_the_index_lock(vault: Path) -> None:
    """A person's `git status` (an editor's, polling) takes .git/index.lock for a moment to
    refresh the index. A commit meeting it once left git's index behind HEAD: `git status`
    then showed the committed file as changed until the next memstore command, and a
    watcher runs none (the watcher's settle test timed out under load this way)."""
    import threading

    repo = GitRepo.open(vault)
    (vault / "global").mkdir()
    (vault / "global" / "a.md").write_text("a\n", encoding="utf-8")
    lock = vault / ".git" / "index.lock"
    lock.write_bytes(b"")  # what git status holds while it refreshes
    before = repo.head()
    done = threading.Thread(
        target=repo.commit,
        args=("one", Trailers("test", "s", "h")),
        kwargs={"add": ("global/a.md",)},
    )
    done.start()
    try:
        wait_until(lambda: GitRepo.open(vault).head() != before, 30, "the commit made")
    finally:
        lock.unlink()
    done.join(timeout=30)
    assert not done.is_alive()
    assert git(vault, "status", "--porcelain") == ""
