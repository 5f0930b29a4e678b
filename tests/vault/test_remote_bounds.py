"""A git that memstore stops (a fetch a failed sync no longer needs, a push past its time)
is ended within a bound, even when a child of git's (ssh, here a stand-in that never
answers) still holds its pipes: reading them to their end waited for that child, for ever
when its server never answers."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.core.errors import SyncError
from memstore.vault import remote
from tests.conftest import git


@pytest.fixture
def silent_ssh(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A repository whose remote is reached by an 'ssh' that never answers (its pid noted)."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "remote", "add", "origin", "ssh://memory.invalid/memory.git")
    pids = tmp_path / "ssh.pid"
    ssh = tmp_path / "ssh"
    ssh.write_text(f"#!/bin/sh\necho $$ > {pids}\nexec sleep 300\n", encoding="utf-8")
    ssh.chmod(0o755)
    env = {**os.environ, "GIT_SSH_COMMAND": str(ssh)}
    yield repo, env
    if pids.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pids.read_text()), signal.SIGKILL)


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, "git did not start its ssh"
        time.sleep(0.01)


def test_a_fetch_stopped_while_ssh_hangs_ends_at_once(
    silent_ssh: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, env = silent_ssh
    fetching = remote.start_fetch(repo, "origin", env)
    _wait_for(tmp_path / "ssh.pid")
    started = time.monotonic()
    fetching.stop()
    assert time.monotonic() - started < remote.END_WAIT_S + 20
    assert fetching.process is not None and fetching.process.returncode is not None


def test_a_git_past_its_time_beside_other_work_is_a_sync_error_not_a_hang(
    silent_ssh: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, env = silent_ssh
    monkeypatch.setattr(remote, "TIMEOUT_S", 1)
    started = time.monotonic()
    with pytest.raises(SyncError, match="took over 1 s"):
        remote._beside(repo, ["fetch", "origin"], env, lambda: _wait_for(tmp_path / "ssh.pid"))
    assert time.monotonic() - started < remote.END_WAIT_S + 30
