"""Shared fixtures: hermetic environment, vaults, stores and the sample vault."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from memstore.core.config import Settings
from memstore.service.store import Store, init_vault

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_VAULT = REPO_ROOT / "sample-vault"


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, git config and MEMSTORE_* at tmp_path; fix the git identity."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("HOME", str(home))
    # What memstore keeps in the temporary folder on purpose (an edit's text when the edit
    # fails, a conflict being resolved) stays in this test's folder, in this process and in
    # every memstore it starts, instead of piling up in /tmp.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for name in list(os.environ):
        if name.startswith("MEMSTORE_") or name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMSTORE_SESSION", "test-session")
    monkeypatch.setenv("MEMSTORE_HOST", "test-host")
    # Ordinary tests run every command in-process; tests/daemon/test_daemon.py unsets this.
    monkeypatch.setenv("MEMSTORE_NO_DAEMON", "1")
    # libgit2 reads the global config path once per process: point it at this home.
    pygit2.settings.search_path[pygit2.enums.ConfigLevel.GLOBAL] = str(home)
    monkeypatch.chdir(tmp_path)
    return home


def settings_at(path: Path, source: str = "test") -> Settings:
    return Settings(vault=path, source=source, session="test-session", host="test-host")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """An initialized, empty vault."""
    path = tmp_path / "vault"
    init_vault(path, settings_at(path))
    return path


@pytest.fixture
def store(vault: Path) -> Iterator[Store]:
    with Store.open(settings_at(vault)) as opened:
        yield opened


@pytest.fixture
def sample_vault(tmp_path: Path) -> Path:
    """A vault holding a copy of sample-vault/, committed."""
    path = tmp_path / "sample"
    init_vault(path, settings_at(path))
    for item in SAMPLE_VAULT.iterdir():
        if item.is_dir():
            shutil.copytree(item, path / item.name)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "import sample vault")
    return path


def git(cwd: Path, *args: str) -> str:
    """Run the git CLI (as a person would) and return its output."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, encoding="utf-8"
    )
    return done.stdout


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


def commit_count(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD").strip())


def vault_bytes(path: Path) -> dict[str, bytes]:
    """Every file of the vault outside .git and .memstore, with its bytes."""
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not {".git", ".memstore"} & set(p.relative_to(path).parts)
    }
