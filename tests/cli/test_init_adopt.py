"""Which folders `memstore init` makes a vault of, and where a vault is made without asking.

init adopts an empty folder or repository, a clone of a vault, or a repository whose files
all read as memories; anything else (a code project) is refused in one line, unchanged,
unless --adopt-any. `add` (and every command that opens with create) makes a vault only at
the default path, so a typo in MEMSTORE_VAULT or --vault is not silently a new vault.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memstore.core.config import Settings
from memstore.core.errors import NotFoundError
from memstore.service.store import Store
from tests.conftest import EXE, git, hang_bound_s, head, invoke_memstore

MEMORY = "---\nid: k3xq9v2m\nkind: lesson\nkeywords: [nginx]\n---\nupload 413 is nginx\n"


def run(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """Run memstore (the executable's main, in-process) with extra environment variables."""
    return invoke_memstore(*args, cwd=cwd, env=env)


def repository(path: Path, files: dict[str, str], *, commit: bool = True) -> Path:
    """A git repository holding `files` (committed unless told otherwise)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    if commit and files:
        git(path, "add", "-A")
        git(path, "commit", "-qm", "start")
    return path


def snapshot(path: Path) -> tuple[str, str, str, list[str]]:
    """What init must not change: HEAD, status, git config and the folder's entries."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=path, capture_output=True, text=True
    )
    return (
        commit.stdout,
        git(path, "status", "--porcelain", "--ignored"),
        (path / ".git" / "config").read_text(encoding="utf-8"),
        sorted(p.name for p in path.iterdir()),
    )


def assert_refused(done: subprocess.CompletedProcess[str], path: Path, stranger: str) -> None:
    assert done.returncode == 1, done.stdout
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"Error: {path} is a ")
    assert f"files that are not memories ({stranger})" in done.stderr
    assert "memstore init ~/memstore" in done.stderr and "--adopt-any" in done.stderr


def test_init_dot_in_a_code_project_refuses_and_changes_nothing(tmp_path: Path) -> None:
    project = repository(
        tmp_path / "shop",
        {"docs/setup.md": "# Setup\nrun make\n", "src/app.py": "print('hi')\n"},
    )
    before = snapshot(project)
    done = run("init", ".", cwd=project)
    assert_refused(done, project, "docs/setup.md")
    assert "is a git repository" in done.stderr
    assert snapshot(project) == before
    assert not (project / ".gitattributes").exists() and not (project / ".memstore").exists()


def test_init_refuses_a_repository_whose_markdown_is_not_memories(tmp_path: Path) -> None:
    notes = repository(
        tmp_path / "notes", {"ws/real.md": MEMORY, "ws/todo.md": "- buy milk\n"}, commit=False
    )
    before = snapshot(notes)
    assert_refused(run("init", str(notes)), notes, "ws/todo.md")
    assert snapshot(notes) == before


def test_init_refuses_a_folder_of_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "report.pdf").write_bytes(b"%PDF-1.4")
    done = run("init", str(folder))
    assert_refused(done, folder, "report.pdf")
    assert "is a folder" in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["report.pdf"]


def test_init_refuses_an_empty_clone_of_a_code_project(tmp_path: Path) -> None:
    # A bare repository whose HEAD names `master` while the work went to `main`: the clone
    # checks out nothing, and init would otherwise check the project out into a "vault".
    project = repository(tmp_path / "project", {"Makefile": "all:\n"})
    bare = tmp_path / "project.git"
    git(tmp_path, "-c", "init.defaultBranch=master", "init", "-q", "--bare", str(bare))
    git(project, "push", "-q", str(bare), "main")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True, capture_output=True)
    assert_refused(run("init", str(clone)), clone, "Makefile")
    assert sorted(p.name for p in clone.iterdir()) == [".git"]


def test_init_refuses_a_fresh_repository_whose_remote_holds_a_project(tmp_path: Path) -> None:
    # git init, git remote add, git fetch: no commits here, and no remote branch is `main`
    project = repository(tmp_path / "project", {"app.py": "print(1)\n"})
    git(project, "branch", "-m", "main", "master")
    git(project, "branch", "dev")
    fresh = repository(tmp_path / "fresh", {})
    git(fresh, "remote", "add", "origin", str(project))
    git(fresh, "fetch", "-q", "origin")
    before = snapshot(fresh)
    assert_refused(run("init", ".", cwd=fresh), fresh, "app.py on origin/dev")
    assert snapshot(fresh) == before


def test_init_refuses_a_fresh_repository_with_a_remote_it_has_not_seen(tmp_path: Path) -> None:
    fresh = repository(tmp_path / "webshop", {})
    git(fresh, "remote", "add", "origin", "git@github.com:me/webshop.git")
    before = snapshot(fresh)
    done = run("init", ".", cwd=fresh)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "remote origin (git@github.com:me/webshop.git) memstore has not seen" in done.stderr
    assert "memstore init ~/memstore" in done.stderr and "--adopt-any" in done.stderr
    assert snapshot(fresh) == before
    assert run("init", ".", "--adopt-any", cwd=fresh).returncode == 0


def test_init_adopts_an_empty_clone_of_a_new_repository(tmp_path: Path) -> None:
    bare = tmp_path / "memory.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    clone = tmp_path / "memory"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True, capture_output=True)
    done = run("init", str(clone))  # a clone tracks its remote: the person made it for this
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "files",
    [
        {},  # git init, nothing else
        {"README.md": "# memory\n", "LICENSE": "MIT\n", ".gitignore": "*.log\n"},  # a forge's
        {"webshop/k3xq9v2m.md": MEMORY, "README.md": "my memories\n"},  # memories by hand
        {"notes.txt": "x\n", ".gitattributes": "*.md merge=memstore\n"},  # a vault's clone
    ],
    ids=["empty", "forge-made", "memories", "vault-clone"],
)
def test_init_adopts_an_empty_repository_a_vault_or_memories(
    tmp_path: Path, files: dict[str, str]
) -> None:
    path = repository(tmp_path / "memory", files)
    done = run("init", str(path))
    assert done.returncode == 0, done.stderr
    assert (path / ".gitattributes").read_text(encoding="utf-8").endswith("merge=memstore\n")
    assert git(path, "status", "--porcelain") == ""


def test_adopt_any_makes_a_code_project_a_vault(tmp_path: Path) -> None:
    project = repository(tmp_path / "shop", {"docs/setup.md": "# Setup\n", "app.py": "x = 1\n"})
    done = run("init", str(project), "--adopt-any")
    assert done.returncode == 0, done.stderr
    assert "Adopted vault" in done.stdout
    assert git(project, "log", "-1", "--format=%s") == "init: memstore vault\n"
    assert run("init", str(project)).returncode == 0  # now a vault: no flag needed again


def test_a_typo_in_memstore_vault_is_not_a_new_vault(tmp_path: Path) -> None:
    typo = tmp_path / "memstrore"
    done = run("add", "upload 413 is nginx", MEMSTORE_VAULT=str(typo))
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: there is no vault at {typo}; run 'memstore init {typo}' to make one there, "
        "or fix MEMSTORE_VAULT / --vault\n"
    )
    assert not typo.exists()
    flag = run("add", "upload 413 is nginx", "--vault", str(typo))
    assert flag.returncode == 1 and flag.stderr == done.stderr and not typo.exists()


def test_the_daemon_path_and_serve_give_the_same_line(tmp_path: Path) -> None:
    typo = tmp_path / "memstrore"
    allowed = {k: v for k, v in os.environ.items() if k != "MEMSTORE_NO_DAEMON"}
    for args in (("add", "upload 413 is nginx"), ("serve",)):
        done = subprocess.run(
            [str(EXE), *args],
            env={**allowed, "MEMSTORE_VAULT": str(typo)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=hang_bound_s(60),  # ends a hang; `serve` took 60 s at load 20
        )
        assert done.returncode == 1, args
        assert done.stderr.startswith(f"Error: there is no vault at {typo}; run 'memstore init")
        assert done.stderr.count("\n") == 1
        assert not typo.exists()  # no vault, no .memstore for a daemon


def test_add_makes_the_default_vault_and_an_initialized_one_elsewhere_works(
    tmp_path: Path, hermetic: Path
) -> None:
    done = run("add", "upload 413 is nginx")  # no MEMSTORE_VAULT: ~/memstore
    assert done.returncode == 0, done.stderr
    assert head(hermetic / "memstore")
    # said once, on stderr: a person who never ran init learns where their memories are
    assert done.stderr == (
        f"made the vault {hermetic / 'memstore'} (a git repository of your memories); "
        "'memstore init' prints the lines to paste into CLAUDE.md or AGENTS.md\n"
    )
    again = run("add", "staging deploys need approval", "--json")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    elsewhere = tmp_path / "work-memory"
    assert run("init", str(elsewhere)).returncode == 0
    there = run("add", "deploys on Tuesdays", MEMSTORE_VAULT=str(elsewhere))
    assert there.returncode == 0 and there.stderr == "", there.stderr


def test_store_open_with_create_makes_only_the_default_vault(
    tmp_path: Path, hermetic: Path
) -> None:
    env = {"MEMSTORE_VAULT": str(tmp_path / "typo")}
    with pytest.raises(NotFoundError, match="there is no vault at"):
        Store.open(Settings.from_env(env, home=hermetic), create=True)
    assert not (tmp_path / "typo").exists()
    explicit = Settings.from_env({}, home=hermetic, vault=Path("~/memstore").expanduser())
    assert explicit.may_create_vault
    with Store.open(explicit, create=True) as store:
        assert store.vault.root == hermetic / "memstore"


def bare_named_master(path: Path) -> Path:
    """A bare repository as `git init --bare` makes it where the default branch is master."""
    git(path.parent, "-c", "init.defaultBranch=master", "init", "-q", "--bare", str(path))
    return path


def test_sync_points_a_bare_remote_head_at_the_pushed_branch(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    assert run("init", str(vault)).returncode == 0
    bare = bare_named_master(tmp_path / "memory.git")
    env = {"MEMSTORE_VAULT": str(vault)}
    assert run("add", "the osprey fishes at dawn", **env).returncode == 0
    assert run("remote", "add", str(bare), **env).returncode == 0
    assert run("sync", **env).returncode == 0
    assert git(bare, "symbolic-ref", "HEAD") == "refs/heads/main\n"
    clone = subprocess.run(
        ["git", "clone", str(bare), str(tmp_path / "clone")], capture_output=True, text=True
    )
    assert clone.returncode == 0 and "nonexistent ref" not in clone.stderr, clone.stderr
    assert (tmp_path / "clone" / ".gitattributes").is_file()
    # a HEAD naming a branch that exists was someone's choice: never moved
    git(bare, "branch", "keep", "main")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/keep")
    assert run("add", "the osprey nests high", **env).returncode == 0
    assert run("sync", **env).returncode == 0
    assert git(bare, "symbolic-ref", "HEAD") == "refs/heads/keep\n"


def test_adopting_a_clone_leaves_no_stale_branch_config_and_a_private_git_folder(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    assert run("init", str(vault)).returncode == 0
    assert run("add", "the osprey fishes at dawn", MEMSTORE_VAULT=str(vault)).returncode == 0
    bare = bare_named_master(tmp_path / "memory.git")
    git(vault, "push", "-q", str(bare), "main")  # a plain push: HEAD still names master
    clone = tmp_path / "clone"
    subprocess.run(
        ["sh", "-c", 'umask 022 && git clone -q "$0" "$1"', str(bare), str(clone)],
        check=True,
        capture_output=True,
    )
    assert "branch.master.remote" in git(clone, "config", "--local", "--list")
    assert run("init", str(clone)).returncode == 0
    config = git(clone, "config", "--local", "--list")
    assert "branch.master." not in config, config
    assert "branch.main.remote=origin" in config and "branch.main.merge=refs/heads/main" in config
    loose = [
        path
        for path in [clone / ".git", *(clone / ".git").rglob("*")]
        if not path.is_symlink() and path.stat().st_mode & 0o077
    ]
    assert loose == [], loose[:5]


@pytest.mark.parametrize("shape", ["worktree", "separate git dir"])
def test_init_refuses_a_folder_whose_git_folder_is_elsewhere(tmp_path: Path, shape: str) -> None:
    """memstore keeps its locks, counts and staging files in the vault's .git folder: a
    vault made in a git worktree (its .git a file) failed every sync with 'a purge has been
    pruning git's objects … for over 60 s' and warned at every add (review14)."""
    folder = tmp_path / "vault"
    if shape == "worktree":
        main = repository(tmp_path / "main", {"a.md": MEMORY})
        git(main, "worktree", "add", "-q", "-b", "memories", str(folder))
    else:
        git(tmp_path, "init", "-q", "-b", "main", f"--separate-git-dir={tmp_path / 'g'}", "vault")
    done = run("init", str(folder))
    assert done.returncode == 1, done.stdout
    assert "its .git is a file" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (folder / ".gitattributes").exists() and not (folder / ".memstore").exists()
