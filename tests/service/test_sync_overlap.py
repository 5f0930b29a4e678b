"""A sync overlaps git's slow steps with its own work (issue 39: at a million memories the
status of every file, the fetch and the push were each seconds): the fetch runs while the
edits saved by hand are committed, the index catches up while git pushes. Nothing is lost
either way: the edits still reach the other machine, the index holds what came in, and a
push that fails still leaves the vault and its index consistent."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstore.core.errors import SyncError
from memstore.service.store import Store
from memstore.vault import git as git_module
from tests.service.test_sync import converge, machines, memory_files, remote  # noqa: F401

# Run by the remote's pre-receive hook: wait (bounded) until the pushing vault's index lists
# `path`, then accept; reject the push when it never does.
WAIT_FOR_INDEX = """
import sqlite3, sys, time
manifest, path, bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
deadline = time.monotonic() + bound
while time.monotonic() < deadline:
    try:
        db = sqlite3.connect(f"file:{manifest}?mode=ro", uri=True, timeout=1)
        found = db.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone()
        db.close()
    except sqlite3.Error:
        found = None
    if found:
        sys.exit(0)
    time.sleep(0.05)
print("the index had not caught up with the merge while git pushed", file=sys.stderr)
sys.exit(1)
"""


def hook(remote_path: Path, body: str) -> None:
    path = remote_path / "hooks" / "pre-receive"
    path.write_text(f"#!/bin/sh\ncat > /dev/null\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def test_the_index_catches_up_while_git_pushes(
    machines: list[Store],  # noqa: F811
    remote: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    a, b, _ = machines
    came = a.add("Postgres listens on 5432 behind the bastion host", workspace="infra")
    a.sync()
    b.add("Grafana dashboards live in the observability folder", workspace="ops")  # a merge
    script = tmp_path / "wait_for_index.py"
    script.write_text(WAIT_FOR_INDEX, encoding="utf-8")
    manifest = b.vault.root / ".memstore" / "index" / "manifest.sqlite"
    assert manifest.is_file()
    # Bounded: on code that catches up only after the push, the hook rejects it at 20 s.
    hook(remote, f"exec {sys.executable} {script} {manifest} {came.path} 20")
    outcome, _, caught_up = b.sync()
    assert outcome.merge == "merged" and outcome.pushed
    assert came.path in caught_up.updated
    assert [h.content for h in b.search("bastion 5432", workspace=None, k=3).hits]
    assert memory_files(a) != memory_files(b)  # A has not pulled the merge yet
    converge([a, b])
    assert memory_files(a) == memory_files(b)


def test_a_declined_push_after_the_catch_up_keeps_the_merge_and_its_index(
    machines: list[Store],  # noqa: F811
    remote: Path,  # noqa: F811
) -> None:
    a, b, _ = machines
    came = a.add("Redis eviction policy is allkeys-lru on the cache cluster", workspace="infra")
    a.sync()
    mine = b.add("The staging deploy needs the VPN profile ops-eu", workspace="ops")
    hook(remote, "echo 'pushes are frozen today' >&2; exit 1")
    with pytest.raises(SyncError, match="declined the push"):
        b.sync()
    assert (b.vault.root / came.path).is_file() and (b.vault.root / mine.path).is_file()
    assert [h.content for h in b.search("Redis allkeys-lru", workspace=None, k=3).hits]
    (remote / "hooks" / "pre-receive").unlink()
    outcome, _, _ = b.sync()
    assert outcome.pushed
    converge([a, b])
    assert memory_files(a) == memory_files(b)


def test_an_edit_saved_by_hand_is_committed_while_the_fetch_runs(
    machines: list[Store],  # noqa: F811
    remote: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b, _ = machines
    kept = a.add("Kafka topics keep seven days of events", workspace="events")
    converge([a, b])
    b.add("Vault tokens rotate every 24 hours", workspace="infra")
    b.sync()
    # While no memstore process ran, a person edits a memory in place on A and adds a file.
    path = a.vault.root / kept.path
    path.write_text(path.read_text(encoding="utf-8") + "\nand compacted weekly\n", "utf-8")
    (a.vault.root / "events" / "by-hand.md").write_text("A note written by hand\n", "utf-8")
    # git's own status (as in a vault of 65,000 files or more) waits, bounded, for the fetch
    # to have started, and says whether it had: the sync starts the fetch first.
    monkeypatch.setattr(git_module, "STATUS_CLI_BYTES", 0)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    log, started = tmp_path / "git.log", tmp_path / "fetch-started"
    wrapper = bin_dir / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" fetch "*) touch {started};;\n'
        f' *" status "*) i=0; while [ ! -e {started} ] && [ $i -lt 150 ]; do sleep 0.1; '
        f"i=$((i+1)); done\n"
        f"  if [ -e {started} ]; then echo during >> {log}; else echo before >> {log}; fi;;\n"
        f'esac\nexec {real} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    env = {**a.settings.env, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    a.settings = dataclasses.replace(a.settings, env=env)
    outcome, _, _ = a.sync()
    assert outcome.committed_edits and outcome.merge in ("merged", "fast-forward")
    assert {kept.path, "events/by-hand.md"} <= set(outcome.edited)
    assert log.read_text(encoding="utf-8").split() == ["during"], "the status ran before the fetch"
    b.sync()
    assert "compacted weekly" in (b.vault.root / kept.path).read_text(encoding="utf-8")
    assert (b.vault.root / "events" / "by-hand.md").is_file()
